"""`tvm.relax.ir.instrument`: a pass instrument that checks modules are well formed."""

from __future__ import annotations

from typing import Any

from ...error import TVMError
from ...instrument import PassInstrument


class IllFormedModuleError(TVMError, AssertionError):
    """A pass received or produced a relax module that `relax.analysis.well_formed` rejects.

    An AssertionError as well, as TVM's instrument asserts."""


class WellFormedInstrument(PassInstrument):
    """Check the module before (optionally) and after every pass with `well_formed`.

    Passes that exist to repair ill-formed modules (Normalize, NormalizeGlobalVar,
    ResolveGlobals) are not checked. A failure raises IllFormedModuleError naming the pass
    and listing every violation.

    >>> with tvm.transform.PassContext(instruments=[WellFormedInstrument()]):
    ...     mod = relax.transform.FoldConstant()(mod)
    """

    SKIPPED_PASSES = ("Normalize", "NormalizeGlobalVar", "ResolveGlobals")

    def __init__(self, check_struct_info: bool = True, validate_before_transform: bool = True):
        self.check_struct_info = check_struct_info
        self.validate_before_transform = validate_before_transform

    def run_before_pass(self, mod: Any, info: Any) -> None:
        if self.validate_before_transform:
            self._check(mod, info.name, "before")

    def run_after_pass(self, mod: Any, info: Any) -> None:
        self._check(mod, info.name, "after")

    def _check(self, mod: Any, pass_name: str, when: str) -> None:
        from ..analysis import well_formed_errors

        if pass_name in self.SKIPPED_PASSES:
            return
        errors = well_formed_errors(mod)
        if errors:
            listed = "\n  ".join(errors)
            raise IllFormedModuleError(
                f"WellFormedInstrument: the module {when} pass {pass_name!r} is not well "
                f"formed:\n  {listed}\nfix the IR (relax.analysis.well_formed lists the same "
                "violations), or leave this instrument out of the PassContext"
            )


__all__ = ["IllFormedModuleError", "WellFormedInstrument"]
