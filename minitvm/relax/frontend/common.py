"""What the importers share: detaching bound parameters and reporting unconverted ops."""

from __future__ import annotations

from collections.abc import Sequence

from ...error import FrontendError, OpNotImplemented
from ...ir.module import IRModule
from ...ir.node import FrozenDict
from ...runtime.ndarray import NDArray

__all__ = ["detach_params", "raise_unsupported"]


def detach_params(mod: IRModule) -> tuple[IRModule, dict[str, list[NDArray]]]:
    """Split the "params" attr off every function: (module without it, {func name: arrays}).

    >>> mod, params = detach_params(from_fx(gm, info, keep_params_as_input=True))
    >>> vm["main"](x, *params["main"])
    """
    detached = IRModule(attrs=mod.attrs)
    params: dict[str, list[NDArray]] = {}
    for gv, func in mod.functions_items():
        attrs = getattr(func, "attrs", None) or {}
        if "params" in attrs:
            values = list(attrs["params"])
            bad = [i for i, v in enumerate(values) if not isinstance(v, NDArray)]
            if bad:
                raise FrontendError(
                    f"detach_params: attr 'params' of function {gv.name_hint!r} must hold "
                    f"NDArrays; entries {bad} are {type(values[bad[0]]).__name__}"
                )
            params[gv.name_hint] = values
            rest = {k: v for k, v in attrs.items() if k != "params"}
            func = func.replace(attrs=FrozenDict(rest))
        detached[gv] = func
    return detached, params


_UNSUPPORTED_HINT = (
    "Replace them in the model with supported operations, or report the missing converters."
)


def raise_unsupported(
    frontend: str, entries: Sequence[tuple[str, str]], hint: str = _UNSUPPORTED_HINT
) -> None:
    """Raise OpNotImplemented listing every (op, where) pair, then `hint`; does nothing when
    there are none."""
    if not entries:
        return
    ops = sorted({op for op, _ in entries})
    lines = "\n".join(f"  {op}  at {where}" for op, where in entries)
    raise OpNotImplemented(
        f"{frontend}: {len(ops)} operator(s) are not supported: {', '.join(ops)}.\n"
        f"Occurrences ({len(entries)}):\n{lines}\n{hint}"
    )
