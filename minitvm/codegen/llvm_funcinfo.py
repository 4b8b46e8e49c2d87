"""FuncInfo metadata (docs/contracts.md §3): what the runtime checks before calling native code."""

from __future__ import annotations

from collections.abc import Callable

from ..error import BuildError
from ..ir.dtype import DataType
from ..tir.analysis.alias import analyze_alias
from ..tir.expr import (
    Add,
    Call,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Sub,
    Var,
)
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit

# Shape expressions the runtime can evaluate, as Python syntax over the symbolic dims' names.
# a shape expression -> its text in the FuncInfo shape grammar (also the GPU host programs')
SHAPE_SYNTAX: dict[type, Callable[[str, str], str]] = {
    Add: lambda a, b: f"{a} + {b}",
    Sub: lambda a, b: f"{a} - {b}",
    Mul: lambda a, b: f"{a} * {b}",
    FloorDiv: lambda a, b: f"{a} // {b}",
    FloorMod: lambda a, b: f"{a} % {b}",
    Min: lambda a, b: f"min({a}, {b})",
    Max: lambda a, b: f"max({a}, {b})",
}


def func_info(func: PrimFunc) -> tuple[dict, list[Var]]:
    """The FuncInfo dict of `func` and its symbolic dims in `sym_vars` order.

    Symbolic dims are keyed by identity: two distinct vars both called "n" get the names
    "n" and "n_1" in shape entries (the renamed one keeps the user's name in "label")."""
    info, sym_vars = signature_info(func)
    writes, alias_ok = analyze_alias(func)
    info.update(writes=writes, alias_ok=alias_ok)
    return info, sym_vars


def return_dtype(func: PrimFunc) -> str | None:
    """The dtype `func` returns through `T.ret` (FuncInfo "ret"), or None when it has none."""
    seen: set[str] = set()

    def visit(e) -> None:
        if isinstance(e, Call) and getattr(e.op, "name", None) == "tir.ret":
            seen.add(str(e.args[0].dtype))

    post_order_visit(func.body, visit)
    if len(seen) > 1:
        raise BuildError(
            f"building '{func.attrs['global_symbol']}': T.ret returns values of dtypes "
            f"{sorted(seen)}; cast them to one dtype"
        )
    (ret,) = seen or (None,)
    if ret is not None and DataType(ret).lanes != 1:
        raise BuildError(
            f"building '{func.attrs['global_symbol']}': T.ret returns a vector ({ret}); "
            "only scalars can be returned"
        )
    return ret


def signature_info(func: PrimFunc) -> tuple[dict, list[Var]]:
    """The name, params and sym_vars of `func`'s FuncInfo (its params and buffer_map only, which
    lowering keeps: the same before and after it) and its symbolic dims in `sym_vars` order."""
    name = func.attrs["global_symbol"]
    params: list[dict] = []
    sym_vars: list[Var] = []
    sym_info: list[dict] = []
    param_set = set(map(id, func.params))
    names = _UniqueNames()
    for p in func.params:  # scalar params keep their own name where it is free
        if p not in func.buffer_map:
            names.add(p)
    for index, p in enumerate(func.params):
        buf = func.buffer_map.get(p)
        if buf is None:
            if p.dtype.is_handle:
                raise BuildError(
                    f"building '{name}': param '{p.name}' is a handle without a "
                    "buffer in buffer_map; bind it with T.match_buffer"
                )
            entry = {"name": p.name, "kind": "scalar", "dtype": str(p.dtype)}
            if names[p] != p.name:
                entry["ref"] = names[p]
            params.append(entry)
            continue
        for dim, extent in enumerate(buf.shape):
            if (
                isinstance(extent, Var)
                and id(extent) not in param_set
                and all(v is not extent for v in sym_vars)
            ):
                sym_vars.append(extent)
                unique = names.add(extent)
                entry = {"name": unique, "dtype": str(extent.dtype), "param": index, "dim": dim}
                if unique != extent.name:
                    entry["label"] = extent.name
                sym_info.append(entry)
        params.append(
            {
                "name": buf.name,
                "kind": "buffer",
                "dtype": str(buf.dtype),
                "shape": [_shape_entry(name, buf.name, e, names) for e in buf.shape],
            }
        )
    known = {id(v) for v in sym_vars} | param_set
    for p in func.params:
        buf = func.buffer_map.get(p)
        for extent in buf.shape if buf is not None else ():
            _check_defined(name, buf.name, extent, known)
    return {"name": name, "params": params, "sym_vars": sym_info}, sym_vars


class _UniqueNames:
    """A name per variable (by identity), suffixed _1, _2, ... where the name is taken."""

    def __init__(self) -> None:
        self.by_var: dict[int, str] = {}
        self.taken: set[str] = set()

    def add(self, v: Var) -> str:
        if id(v) not in self.by_var:
            name, k = v.name, 0
            while name in self.taken:
                k += 1
                name = f"{v.name}_{k}"
            self.taken.add(name)
            self.by_var[id(v)] = name
        return self.by_var[id(v)]

    def __getitem__(self, v: Var) -> str:
        return self.by_var[id(v)]


def _shape_entry(func: str, buf: str, e: PrimExpr, names: _UniqueNames) -> int | str:
    if isinstance(e, IntImm):
        return e.value
    return _py_expr(func, buf, e, names, top=True)


def _py_expr(func: str, buf: str, e: PrimExpr, names: _UniqueNames, top: bool = False) -> str:
    if isinstance(e, Var):
        return names.by_var.get(id(e), e.name)  # an undefined var is reported by _check_defined
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, Cast):
        return _py_expr(func, buf, e.value, names, top)
    rule = SHAPE_SYNTAX.get(type(e))
    if rule is None:
        raise BuildError(
            f"building '{func}': buffer '{buf}' has shape entry `{e}` that the runtime "
            f"cannot check; use +, -, *, //, %, min, max of symbolic dims"
        )
    text = rule(_py_expr(func, buf, e.a, names), _py_expr(func, buf, e.b, names))
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
