"""tvm.tir.TensorIntrin: a named pair (description, implementation) that `tensorize` matches.

The description is a PrimFunc whose root block holds the computation a hardware instruction
performs, written with ordinary blocks; the implementation computes the same thing its own way
(a call, a vector expression, a loop nest). `Schedule.tensorize` checks a block against the
description and replaces its body by the implementation.
"""

from __future__ import annotations

from typing import ClassVar

from ..error import TVMError
from .function import PrimFunc


class TensorIntrinError(TVMError, ValueError):
    """An intrinsic is registered twice, looked up under an unknown name, or malformed."""


class TensorIntrin:
    """A tensor intrinsic: `desc` says what it computes, `impl` how (same parameters)."""

    _registry: ClassVar[dict[str, TensorIntrin]] = {}

    def __init__(self, desc: PrimFunc, impl: PrimFunc) -> None:
        for role, func in (("desc", desc), ("impl", impl)):
            if not isinstance(func, PrimFunc):
                raise TensorIntrinError(
                    f"TensorIntrin {role} must be a PrimFunc (a @T.prim_func), got "
                    f"{type(func).__name__}"
                )
        if len(desc.params) != len(impl.params):
            raise TensorIntrinError(
                f"TensorIntrin desc takes {len(desc.params)} parameters but impl takes "
                f"{len(impl.params)}; both must take the same buffers in the same order"
            )
        self.desc = desc
        self.impl = impl

    @staticmethod
    def register(name: str, desc: PrimFunc, impl: PrimFunc, override: bool = False) -> None:
        """Register the intrinsic `name` for `Schedule.tensorize(loop, name)`."""
        if name in TensorIntrin._registry and not override:
            raise TensorIntrinError(
                f"a TensorIntrin named {name!r} is already registered; pass override=True "
                "to replace it"
            )
        TensorIntrin._registry[name] = TensorIntrin(desc, impl)

    @staticmethod
    def get(name: str, allow_missing: bool = False) -> TensorIntrin | None:
        """The intrinsic registered as `name` (None when missing and `allow_missing`)."""
        found = TensorIntrin._registry.get(name)
        if found is None and not allow_missing:
            known = sorted(TensorIntrin._registry)
            raise TensorIntrinError(
                f"no TensorIntrin named {name!r} is registered (import "
                f"tvm.tir.tensor_intrin for the built-in ones); known: {known}"
            )
        return found

    def __repr__(self) -> str:
        return f"TensorIntrin(desc={self.desc.attrs.get('global_symbol', '?')!r})"


def registered_names() -> list[str]:
    """Names of every registered intrinsic, sorted."""
    return sorted(TensorIntrin._registry)
