"""Keep a package's public functions when the import system names a submodule after them.

`relax.transform.legalize_ops` is a function, and it lives in the submodule
`relax/transform/legalize_ops.py`. Python binds a submodule onto its package whenever that
submodule is imported under a new name, which happens when code imports it through an alias
(`sys.modules['tvm'] = minitvm`, then `import tvm.relax.transform.legalize_ops`): the function
would silently become a module and `LegalizeOps()(mod)` would fail with "'module' object is
not callable". A package that calls `keep_public_functions(__name__)` refuses that rebinding
(the submodule stays reachable through `sys.modules` and `from pkg.sub import name`).
"""

from __future__ import annotations

import sys
import types


class _PublicFunctionsWin(types.ModuleType):
    """A package module whose public non-module attributes are never replaced by a submodule."""

    def __setattr__(self, name: str, value: object) -> None:
        current = self.__dict__.get(name)
        is_own_submodule = isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}"
        if is_own_submodule and current is not None and not isinstance(current, types.ModuleType):
            return  # keep the public function; the submodule stays in sys.modules
        super().__setattr__(name, value)


def keep_public_functions(package_name: str) -> None:
    """Make `package_name` keep its functions when a same-named submodule is (re)imported."""
    module = sys.modules[package_name]
    if type(module) is types.ModuleType:
        module.__class__ = _PublicFunctionsWin
