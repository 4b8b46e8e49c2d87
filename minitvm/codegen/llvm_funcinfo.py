"""FuncInfo metadata (docs/contracts.md §3): what the runtime checks before calling native code."""

from __future__ import annotations

from collections.abc import Callable

from ..error import BuildError
from ..tir.expr import Add, Cast, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimExpr, Sub, Var
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit

# Shape expressions the runtime can evaluate, as Python syntax over the symbolic dims' names.
_PY_SYNTAX: dict[type, Callable[[str, str], str]] = {
    Add: lambda a, b: f"{a} + {b}",
    Sub: lambda a, b: f"{a} - {b}",
    Mul: lambda a, b: f"{a} * {b}",
    FloorDiv: lambda a, b: f"{a} // {b}",
    FloorMod: lambda a, b: f"{a} % {b}",
    Min: lambda a, b: f"min({a}, {b})",
    Max: lambda a, b: f"max({a}, {b})",
}


def func_info(func: PrimFunc) -> tuple[dict, list[Var]]:
    """The FuncInfo dict of `func` and its symbolic dims in `sym_vars` order."""
    name = func.attrs["global_symbol"]
    params: list[dict] = []
    sym_vars: list[Var] = []
    sym_info: list[dict] = []
    param_set = set(map(id, func.params))
    for index, p in enumerate(func.params):
        buf = func.buffer_map.get(p)
        if buf is None:
            if p.dtype.is_handle:
                raise BuildError(
                    f"building '{name}': param '{p.name}' is a handle without a "
                    "buffer in buffer_map; bind it with T.match_buffer"
                )
            params.append({"name": p.name, "kind": "scalar", "dtype": str(p.dtype)})
            continue
        for dim, extent in enumerate(buf.shape):
            if (
                isinstance(extent, Var)
                and id(extent) not in param_set
                and all(v is not extent for v in sym_vars)
            ):
                sym_vars.append(extent)
                sym_info.append(
                    {"name": extent.name, "dtype": str(extent.dtype), "param": index, "dim": dim}
                )
        params.append(
            {
                "name": buf.name,
                "kind": "buffer",
                "dtype": str(buf.dtype),
                "shape": [_shape_entry(name, buf.name, e) for e in buf.shape],
            }
        )
    known = {id(v) for v in sym_vars} | param_set
    for p in func.params:
        buf = func.buffer_map.get(p)
        for extent in buf.shape if buf is not None else ():
            _check_defined(name, buf.name, extent, known)
    return {"name": name, "params": params, "sym_vars": sym_info}, sym_vars


def _shape_entry(func: str, buf: str, e: PrimExpr) -> int | str:
    if isinstance(e, IntImm):
        return e.value
    return _py_expr(func, buf, e, top=True)


def _py_expr(func: str, buf: str, e: PrimExpr, top: bool = False) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, Cast):
        return _py_expr(func, buf, e.value, top)
    rule = _PY_SYNTAX.get(type(e))
    if rule is None:
        raise BuildError(
            f"building '{func}': buffer '{buf}' has shape entry `{e}` that the runtime "
            f"cannot check; use +, -, *, //, %, min, max of symbolic dims"
        )
    text = rule(_py_expr(func, buf, e.a), _py_expr(func, buf, e.b))
    return text if top or text.startswith(("min(", "max(")) else f"({text})"


def _check_defined(func: str, buf: str, extent: PrimExpr, known: set[int]) -> None:
    def check(n) -> None:
        if isinstance(n, Var) and id(n) not in known:
            raise BuildError(
                f"building '{func}': buffer '{buf}' has shape `{extent}` whose "
                f"variable '{n.name}' is neither a parameter nor a dimension of its "
                "own in some buffer; the runtime cannot infer it from the arguments"
            )

    post_order_visit(extent, check)
