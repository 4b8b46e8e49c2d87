"""tvm.tir.IndexMap: a map from indices to indices, with a proven inverse where one exists.

The inverse comes from a mixed-radix reading of the map: every final index must be a sum of
digits `c * ((x // l) % e)` of the initial indices (split, fuse, reorder and their
compositions), each digit of each initial index used exactly once. Any other map has no
inverse we can prove, and `inverse` says so instead of guessing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..error import ScheduleError
from ..ir.dtype import DataType
from .expr import (
    Add,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
    as_expr,
    const_value,
    make_const,
)
from .functor import Mutator, post_order_visit, substitute


class _AxisSeparator:
    """The marker a mapping function returns between groups of physical axes."""

    def __repr__(self) -> str:
        return "IndexMap.AXIS_SEPARATOR"


_SEPARATOR = _AxisSeparator()


class IndexMap:
    """`final_indices` as expressions of `initial_indices`.

    >>> m = IndexMap.from_func(lambda i: [i // 4, i % 4])
    >>> m.map_shape([16])   # [4, 4]
    """

    AXIS_SEPARATOR = _SEPARATOR

    def __init__(
        self,
        initial_indices: Sequence[Var],
        final_indices: Sequence[Any],
        inverse_index_map: Any = None,
    ) -> None:
        if callable(inverse_index_map) and not isinstance(inverse_index_map, IndexMap):
            inverse_index_map = IndexMap.from_func(inverse_index_map)
        self.initial_indices = tuple(initial_indices)
        self.final_indices = tuple(as_expr(e) for e in final_indices)
        self.inverse_index_map = inverse_index_map

    # ------------------------------------------------------------------ construction
    @staticmethod
    def from_func(
        mapping_function: Callable,
        ndim: int | None = None,
        inverse_index_map: Any = None,
        *,
        index_dtype: str = "int64",
    ) -> IndexMap:
        """The IndexMap of `mapping_function` (its parameters become the initial indices)."""
        index_map, separators = IndexMap.from_func_with_separators(
            mapping_function, ndim, inverse_index_map, index_dtype=index_dtype
        )
        if separators:
            raise ScheduleError(
                "IndexMap.from_func: the mapping returned IndexMap.AXIS_SEPARATOR; use "
                "IndexMap.from_func_with_separators to keep the separators"
            )
        return index_map

    @staticmethod
    def from_func_with_separators(
        mapping_function: Callable,
        ndim: int | None = None,
        inverse_index_map: Any = None,
        *,
        index_dtype: str = "int64",
    ) -> tuple[IndexMap, list[int]]:
        """(IndexMap, axis separator positions) of a mapping that may return AXIS_SEPARATOR."""
        args, kwargs = _make_args(mapping_function, ndim, index_dtype)
        mapping = mapping_function(*args, **kwargs)
        args = args + list(kwargs.values())
        items = list(mapping) if isinstance(mapping, list | tuple) else [mapping]
        final, separators = [], []
        for val in items:
            if val is _SEPARATOR:
                separators.append(len(final))
            elif isinstance(val, PrimExpr | int) and not isinstance(val, bool):
                final.append(as_expr(val, like=DataType(index_dtype)))
            elif type(val).__name__ == "IterVar":
                final.append(val.var)
            else:
                raise ScheduleError(
                    f"IndexMap: the mapping function returned {val!r} ({type(val).__name__}); "
                    "return index expressions (and IndexMap.AXIS_SEPARATOR) only"
                )
        return IndexMap(args, final, inverse_index_map), separators

    @staticmethod
    def from_text(text: str, index_dtype: str = "int32") -> IndexMap:
        """The IndexMap of `lambda i, j: (...)` source text (as traces print it), read as
        data: only names, integers and + - * // % are accepted, nothing is evaluated."""
        import ast

        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as err:
            raise ScheduleError(f"IndexMap.from_text: {text!r} is not a lambda: {err}") from err
        if not isinstance(tree, ast.Lambda) or tree.args.vararg or tree.args.kwonlyargs:
            raise ScheduleError(f"IndexMap.from_text: {text!r} is not `lambda i, j: (...)`")
        dtype = "int64" if "T.int64(" in text else index_dtype
        params = {a.arg: Var(a.arg, dtype) for a in tree.args.args}
        items = tree.body.elts if isinstance(tree.body, ast.Tuple | ast.List) else [tree.body]
        final = [_from_ast(e, params, DataType(dtype), text) for e in items]
        return IndexMap(list(params.values()), final)

    def as_lambda_text(self) -> str:
        """`lambda i, j: (...)`: the source `from_text` reads back."""
        ins = ", ".join(v.name for v in self.initial_indices)
        outs = ", ".join(str(e) for e in self.final_indices)
        return f"lambda {ins}: ({outs}{',' if len(self.final_indices) == 1 else ''})"

    # ------------------------------------------------------------------ queries
    @property
    def ndim(self) -> int:
        return len(self.initial_indices)

    def __len__(self) -> int:
        return len(self.final_indices)

    def __repr__(self) -> str:
        ins = ", ".join(v.name for v in self.initial_indices)
        outs = ", ".join(str(e) for e in self.final_indices)
        return f"IndexMap(lambda {ins}: ({outs}{',' if len(self.final_indices) == 1 else ''}))"

    __str__ = __repr__

    def is_equivalent_to(self, other_map: IndexMap) -> bool:
        """True when both maps give provably equal final indices for the same inputs."""
        from ..arith import Analyzer

        if not isinstance(other_map, IndexMap):
            return False
        if self.ndim != other_map.ndim or len(self) != len(other_map):
            return False
        mine = self.map_indices(list(other_map.initial_indices))
        ana = Analyzer()
        return all(ana.can_prove_equal(a, b) for a, b in zip(mine, other_map.final_indices))

    def map_indices(self, indices: Sequence[Any]) -> list[PrimExpr]:
        """The final indices with the initial indices replaced by `indices` (simplified)."""
        from ..arith import Analyzer

        if len(indices) != self.ndim:
            raise ScheduleError(
                f"{self}: takes {self.ndim} indices, got {len(indices)}; the map's arity must "
                "match the buffer's number of dimensions"
            )
        values = [as_expr(i) for i in indices]
        dtype = values[0].dtype if values else DataType("int32")
        final = retype(self.final_indices, self.initial_indices, dtype)
        vmap = dict(zip(retype_vars(self.initial_indices, dtype), values))
        ana = Analyzer()
        return [ana.simplify(substitute(e, vmap)) for e in final]

    def map_shape(self, shape: Sequence[Any]) -> list[PrimExpr]:
        """The shape of the image of a buffer of `shape` (the box that holds every result), in
        the index dtype of `shape`'s dims (an int64 shape gives int64 extents, so what is built
        from them does not mix int32 and int64); plain ints give int32 extents."""
        like = next((d.dtype for d in shape if isinstance(d, PrimExpr)), None)
        out = []
        for d in self._layout(shape).extents:
            e = as_expr(d)
            if like is not None and e.dtype != like and isinstance(e, IntImm):
                e = IntImm(like, e.value)
            out.append(e)
        return out

    def inverse(self, shape: Sequence[Any]) -> IndexMap:
        """The inverse over a buffer of `shape`; raises unless the map is a bijection."""
        if self.inverse_index_map is not None:
            return self.inverse_index_map
        layout = self._layout(shape)
        if layout.padded:
            raise ScheduleError(
                f"{self}: is not a bijection over shape {list(shape)}: its image "
                f"{layout.extents} has padding; use non_surjective_inverse"
            )
        return layout.inverse_map()

    def non_surjective_inverse(self, shape: Sequence[Any]) -> tuple[IndexMap, PrimExpr]:
        """(inverse, predicate that is true on the padding of the image) over `shape`."""
        layout = self._layout(shape)
        inverse = layout.inverse_map()
        return inverse, layout.padding_predicate(inverse)

    def map_ndarray(self, arr_src: Any) -> Any:
        """A numpy/NDArray `arr_src` rearranged into the mapped layout (padding is zero)."""
        import numpy as np

        src = arr_src.numpy() if hasattr(arr_src, "numpy") else np.asarray(arr_src)
        layout = self._layout(list(src.shape))
        out = np.zeros([int(const_value(e)) for e in layout.extents], dtype=src.dtype)
        grid = np.indices(src.shape).reshape(src.ndim, -1) if src.ndim else np.zeros((0, 1))
        env = {id(v): grid[k] for k, v in enumerate(self.initial_indices)}
        dst = tuple(_eval_numpy(e, env, grid.shape[1]) for e in self.final_indices)
        out[dst] = src.reshape(-1)
        if hasattr(arr_src, "numpy"):
            from ..runtime import ndarray as _nd

            return _nd.array(out)
        return out

    def _layout(self, shape: Sequence[Any]) -> _Layout:
        if len(shape) != self.ndim:
            raise ScheduleError(
                f"{self}: takes {self.ndim} indices but the buffer has {len(shape)} "
                f"dimensions (shape {list(shape)}); write the map with one parameter per "
                "dimension"
            )
        return analyse(self, [_extent(s) for s in shape])


def _make_args(fn: Callable, ndim: int | None, index_dtype: str) -> tuple[list, dict]:
    """(positional vars, keyword-only vars) for the mapping function's parameters; `*args`
    takes whatever `ndim` leaves over, between the two."""
    args, kwargs, var_arg = [], {}, None
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind == inspect.Parameter.VAR_POSITIONAL:
            var_arg = name
        elif param.kind == inspect.Parameter.VAR_KEYWORD:
            raise ScheduleError("IndexMap.from_func: the mapping function may not take **kwargs")
        elif param.kind == inspect.Parameter.KEYWORD_ONLY:
            kwargs[name] = Var(name, index_dtype)
        else:
            args.append(Var(name, index_dtype))
    if var_arg is not None:
        if ndim is None:
            raise ScheduleError(
                f"IndexMap.from_func: the mapping function takes *{var_arg}; pass ndim= (the "
                "buffer's number of dimensions)"
            )
        args += [Var(f"{var_arg}_{k}", index_dtype) for k in range(ndim - len(args) - len(kwargs))]
    elif ndim is not None and ndim != len(args) + len(kwargs):
        raise ScheduleError(
            f"IndexMap.from_func: the mapping function takes {len(args) + len(kwargs)} indices "
            f"but ndim={ndim}"
        )
    return args, kwargs


def _extent(s: Any) -> Any:
    if isinstance(s, Range):
        return s.extent
    return as_expr(s)


# ---------------------------------------------------------------------- dtype legalisation
class _Retype(Mutator):
    """Rewrite integer index arithmetic from one dtype to another (vars and constants)."""

    def __init__(self, vmap: dict, source: DataType, dtype: DataType) -> None:
        super().__init__()
        self.vmap, self.source, self.dtype = vmap, source, dtype

    def visit_Var(self, v: Var) -> Any:
        return self.vmap.get(v, v)

    def visit_IntImm(self, e: IntImm) -> Any:
        # only index constants move: an int8 pad value stays int8
        return IntImm(self.dtype, e.value) if e.dtype == self.source else e

    def visit_Cast(self, e: Cast) -> Any:
        value = self.visit(e.value)
        return value if value.dtype == self.dtype else e.replace(value=value)


_RETYPED: dict = {}


def retype_vars(vars_: Sequence[Var], dtype: DataType) -> list[Var]:
    """Vars like `vars_` with `dtype` (the same objects when the dtype already matches)."""
    out = []
    for v in vars_:
        if v.dtype == dtype or not v.dtype.is_integer:
            out.append(v)
            continue
        key = (id(v), str(dtype))
        if key not in _RETYPED or _RETYPED[key][0] is not v:
            _RETYPED[key] = (v, Var(v.name, dtype))
        out.append(_RETYPED[key][1])
    return out


def retype(exprs: Sequence[PrimExpr], vars_: Sequence[Var], dtype: DataType) -> list[PrimExpr]:
    """`exprs` over `vars_` rewritten to index dtype `dtype`."""
    if all(v.dtype == dtype for v in vars_) and all(e.dtype == dtype for e in exprs):
        return list(exprs)
    vmap = dict(zip(vars_, retype_vars(vars_, dtype)))
    source = vars_[0].dtype if vars_ else DataType(dtype)
    mut = _Retype(vmap, source, DataType(dtype))
    return [mut.visit(e) for e in exprs]


# ---------------------------------------------------------------------- mixed-radix analysis
@dataclass(frozen=True)
class _Digit:
    """coef * ((x_k // lower) % ext): one digit of initial index k."""

    coef: int
    k: int
    lower: int
    ext: Any  # int, or the symbolic extent of a whole index (lower == 1)


class _Unproven(Exception):
    """The expression is not a sum of digits of the initial indices."""


class _Digits:
    """Turn final-index expressions into lists of digits."""

    def __init__(self, ivars: Sequence[Var], extents: Sequence[Any]) -> None:
        self.pos = {id(v): k for k, v in enumerate(ivars)}
        self.extents = [const_value(e) if const_value(e) is not None else e for e in extents]
        # `i + c` (c > 0, constant extent) reads as a digit of a shifted index over [0, E + c)
        # whose first c values are padding; an index may not be used both shifted and plain
        self.shift: dict[int, int] = {}
        self.plain: set[int] = set()

    def _shifted(self, e: PrimExpr) -> tuple[list[_Digit], int] | None:
        for x, y in ((e.a, e.b), (e.b, e.a)):
            c = const_value(y)
            if not (isinstance(x, Var) and id(x) in self.pos and isinstance(c, int) and c > 0):
                continue
            k = self.pos[id(x)]
            total = self.extents[k]
            if not isinstance(total, int) or self.shift.get(k, c) != c:
                raise _Unproven(e)
            self.shift[k] = c
            return [_Digit(1, k, 1, total + c)], 0
        return None

    def of(self, e: PrimExpr) -> tuple[list[_Digit], int]:
        """(digits, constant offset) of `e`."""
        value = const_value(e)
        if isinstance(value, int):
            return [], value
        if isinstance(e, Var) and id(e) in self.pos:
            k = self.pos[id(e)]
            self.plain.add(k)
            ext = self.extents[k]
            return [_Digit(1, k, 1, ext)], 0
        if isinstance(e, Cast):
            return self.of(e.value)
        if isinstance(e, Add) and self._shifted(e) is not None:
            return self._shifted(e)
        if isinstance(e, Add):
            (da, ca), (db, cb) = self.of(e.a), self.of(e.b)
            return da + db, ca + cb
        if isinstance(e, Sub) and isinstance(const_value(e.b), int):
            d, c = self.of(e.a)
            return d, c - const_value(e.b)
        if isinstance(e, Mul):
            for x, y in ((e.a, e.b), (e.b, e.a)):
                scale = const_value(y)
                if isinstance(scale, int) and scale > 0:
                    d, c = self.of(x)
                    return [_Digit(t.coef * scale, t.k, t.lower, t.ext) for t in d], c * scale
            for x, y in ((e.a, e.b), (e.b, e.a)):
                if not self._uses_initial(y):  # a symbolic stride such as `n`
                    d, c = self.of(x)
                    if c != 0:
                        raise _Unproven(e)
                    return [_Digit(_times(t.coef, y), t.k, t.lower, t.ext) for t in d], 0
        if isinstance(e, FloorDiv | FloorMod):
            d = const_value(e.b)
            if isinstance(d, int) and d > 0:
                digits, c = self.of(e.a)
                return self._divmod(digits, c, d, isinstance(e, FloorDiv))
        raise _Unproven(e)

    def _uses_initial(self, e: PrimExpr) -> bool:
        found: list = []
        post_order_visit(e, lambda n: found.append(n) if id(n) in self.pos else None)
        return bool(found)

    def _divmod(self, digits: list, c: int, d: int, div: bool) -> tuple[list, int]:
        if c % d or any(not isinstance(t.coef, int) for t in digits):
            raise _Unproven(c)
        low, high = [], []
        for t in digits:
            for part in self._cut(t, d):
                (high if part.coef % d == 0 else low).append(part)
        if sum(t.coef * (t.ext - 1) for t in low) >= d:
            raise _Unproven(d)  # the low digits carry into the quotient
        if div:
            return [_Digit(t.coef // d, t.k, t.lower, t.ext) for t in high], c // d
        return low, 0

    def _cut(self, t: _Digit, d: int) -> list[_Digit]:
        """`t` as digits that each lie wholly below or wholly at/above the place value `d`."""
        if t.coef % d == 0:
            return [t]
        if d % t.coef:
            raise _Unproven(t)
        q = d // t.coef
        if not isinstance(t.ext, int):
            raise _Unproven(t)
        if t.ext <= q:
            return [t]
        top = self._is_top(t)
        if t.ext % q and not top:
            raise _Unproven(t)
        upper = -(-t.ext // q)
        return [_Digit(t.coef, t.k, t.lower, q), _Digit(t.coef * q, t.k, t.lower * q, upper)]

    def _is_top(self, t: _Digit) -> bool:
        total = self.extents[t.k]
        if isinstance(total, int):
            total += self.shift.get(t.k, 0)
        return isinstance(total, int) and t.lower * t.ext >= total


class _Layout:
    """The result of analysing a map over a box: extents of the image and the inverse."""

    def __init__(self, imap: IndexMap, extents: list, outputs: list | None) -> None:
        self.imap, self.in_extents, self.outputs = imap, extents, outputs
        self.extents: list = []
        self.padded = False
        self.shift: dict[int, int] = {}
        self.pieces: dict[int, list] = {}
        if outputs is not None:
            self._check()

    def _check(self) -> None:
        # a unit index is a digit only where it is a whole result (lambda i, j: (j, i), i in
        # [0, 1)); elsewhere it is the constant 0
        self.outputs = [
            ds if len(ds) == 1 else [t for t in ds if not _equal(t.ext, 1)] for ds in self.outputs
        ]
        for digits in self.outputs:
            place = _chain([(t.coef, t.ext) for t in digits])
            if place is None:
                self.outputs = None
                return
            self.extents.append(place)
        for j, digits in enumerate(self.outputs):
            for t in digits:
                self.pieces.setdefault(t.k, []).append((t.lower, t.ext, j, t.coef))
        for k, total in enumerate(self.in_extents):
            pieces = sorted(self.pieces.get(k, []), key=lambda p: p[0])
            lower = _chain([(p[0], p[1]) for p in pieces])
            total_v = const_value(total)
            if lower is None or (isinstance(lower, int) and lower == 1 and total_v == 1):
                self.outputs = None if lower is None else self.outputs
                if lower is None:
                    return
                continue
            if isinstance(lower, int) and isinstance(total_v, int):
                if lower < total_v:
                    self.outputs = None
                    return
                self.padded |= lower > total_v
            elif not _equal(lower, total):
                self.outputs = None
                return

    @property
    def bijective_or_padded(self) -> bool:
        return self.outputs is not None

    def _need(self) -> None:
        if self.outputs is None:
            raise ScheduleError(
                f"{self.imap}: cannot prove this map is injective over shape "
                f"{[str(e) for e in self.in_extents]}: each result must be a sum of digits "
                "(x // a) % b of the indices (splits, fusions, reorders), each digit used "
                "once; rewrite the map in that form"
            )

    def inverse_map(self) -> IndexMap:
        """The map from the image back to the initial indices."""
        from ..arith import Analyzer

        self._need()
        dtype = self.imap.initial_indices[0].dtype if self.imap.ndim else DataType("int32")
        ys = [Var(f"axis{j}", dtype) for j in range(len(self.extents))]
        ana = Analyzer()
        for y, ext in zip(ys, self.extents):
            if _int(ext) != 1:  # a unit axis stays a variable, as TVM keeps it
                ana.bind(y, Range.from_min_extent(0, as_expr(ext, like=dtype)))
        finals = []
        for k in range(self.imap.ndim):
            acc: PrimExpr = IntImm(dtype, 0)
            for low, ext, j, coef in self.pieces.get(k, []):
                acc = acc + _digit_of(ys[j], coef, ext, self.extents[j], low)
            if self.shift.get(k):
                acc = acc - IntImm(dtype, self.shift[k])
            finals.append(ana.simplify(acc))
        return IndexMap(ys, finals, self.imap)

    def padding_predicate(self, inv: IndexMap) -> PrimExpr:
        """True on the points of the image that no initial index maps to (over `inv`'s
        variables, `inv` being this layout's inverse_map())."""
        from ..arith import Analyzer
        from .expr import Or

        ana = Analyzer()
        bounds = {}
        for y, ext in zip(inv.initial_indices, self.extents):
            ana.bind(y, Range.from_min_extent(0, as_expr(ext, like=y.dtype)))
            bounds[id(y)] = _int(ext)
        pred: PrimExpr | None = None
        for k, (e, total) in enumerate(zip(inv.final_indices, self.in_extents)):
            term = _past_end(e, _int(total), bounds) if isinstance(_int(total), int) else None
            term = term if term is not None else ana.simplify(e >= total)
            if self.shift.get(k):  # the first values of a shifted index are padding too
                term = Or(ana.simplify(e < 0), term)
            if _is_false(term):
                continue
            pred = term if pred is None else Or(pred, term)
        return pred if pred is not None else IntImm("bool", 0)


def _past_end(e: PrimExpr, total: int, bounds: dict) -> PrimExpr | None:
    """`a * k + b >= total` (b in [0, k), a in [0, A)) written as TVM's simplifier writes it:
    `a == q and r <= b`, `q <= a` or `q < a or a == q and r <= b`; None for other shapes."""
    if not (isinstance(e, Add) and isinstance(e.a, Mul) and isinstance(e.b, Var)):
        return None
    a, k, b = e.a.a, const_value(e.a.b), e.b
    if not (isinstance(a, Var) and isinstance(k, int) and bounds.get(id(b)) == k):
        return None
    extent_a = bounds.get(id(a))
    q, r = divmod(total, k)
    if not isinstance(extent_a, int) or q >= extent_a:
        return IntImm("bool", 0) if isinstance(extent_a, int) else None
    qe, re = IntImm(a.dtype, q), IntImm(b.dtype, r)
    if r == 0:
        return qe <= a
    at_q = (a == qe) & (re <= b)
    return at_q if q == extent_a - 1 else (qe < a) | at_q


def _digit_of(y: Var, coef: Any, ext: Any, total: Any, lower: Any) -> PrimExpr:
    """(y // coef) % ext written as TVM writes digits: y % ext, y // coef, y % (coef*ext) // coef,
    scaled by `lower`."""
    top = _equal(_times(coef, ext), total)
    if _equal(coef, 1):
        digit = y if top else y % ext
    elif top:
        digit = y // coef
    else:
        digit = y % _times(coef, ext) // coef
    return digit if _equal(lower, 1) else digit * lower


def _times(a: Any, b: Any) -> Any:
    """a * b, staying a Python int when both are."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    return as_expr(a) * as_expr(b) if isinstance(a, PrimExpr) else as_expr(b) * a


def _equal(a: Any, b: Any) -> bool:
    """a == b, provably (ints compare directly)."""
    va = a if isinstance(a, int) else _int(a)
    vb = b if isinstance(b, int) else _int(b)
    if isinstance(va, int) and isinstance(vb, int):
        return va == vb
    if isinstance(va, int) != isinstance(vb, int):
        return False
    from ..arith import Analyzer

    return Analyzer().can_prove_equal(as_expr(a), as_expr(b))


def _chain(places: list) -> Any:
    """The total of mixed-radix digits given as (place value, extent), or None when a place
    value is not the product of the extents below it (a gap or an overlap)."""
    place: Any = 1
    rest = list(places)
    while rest:
        hit = next((k for k, (value, _) in enumerate(rest) if _equal(value, place)), None)
        if hit is None:
            return None
        _, ext = rest.pop(hit)
        place = _times(place, ext)
    return place


def _int(x: Any) -> Any:
    v = const_value(x) if isinstance(x, PrimExpr) else x
    return v


def _same(a: Any, b: Any) -> bool:
    from ..ir.structural import structural_equal

    return structural_equal(as_expr(a), as_expr(b))


def _is_false(e: PrimExpr) -> bool:
    return const_value(e) in (0, False)


def analyse(imap: IndexMap, extents: list) -> _Layout:
    """The mixed-radix analysis of `imap` over the box with `extents`."""
    from ..arith import Analyzer

    digits = _Digits(imap.initial_indices, extents)
    outputs: list | None = []
    for e in imap.final_indices:
        try:
            ds, c = digits.of(e)
        except _Unproven:
            outputs = None
            break
        if c != 0:
            outputs = None
            break
        outputs.append(ds)
    if digits.shift.keys() & digits.plain:
        outputs = None  # `i` and `i + 1` in one map: not a shifted digit system
    layout = _Layout(imap, extents, outputs)
    layout.shift = dict(digits.shift)
    layout.padded |= bool(digits.shift) and layout.outputs is not None
    if layout.outputs is None:
        # still give the image's bounding box, for map_shape and error messages
        ana = Analyzer()
        for v, ext in zip(imap.initial_indices, extents):
            ana.bind(v, Range.from_min_extent(0, as_expr(ext, like=v.dtype)))
        layout.extents = []
        for e in imap.final_indices:
            bound = ana.int_set(e)
            layout.extents.append(ana.simplify(bound.max_value - bound.min_value + 1))
    return layout


_TYPED_CONSTANTS = frozenset(
    f"{kind}{bits}" for kind in ("int", "uint") for bits in (8, 16, 32, 64)
) | {"float16", "float32", "float64", "bfloat16"}
_AST_OPS = {"Add": Add, "Sub": Sub, "Mult": Mul, "FloorDiv": FloorDiv, "Mod": FloorMod}


def _from_ast(node: Any, params: dict, dtype: DataType, text: str) -> PrimExpr:
    """An index expression from the AST of trace text (names, ints, + - * // %, T.int64(k))."""
    import ast

    from .expr import binary

    if isinstance(node, ast.Name) and node.id in params:
        return params[node.id]
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return IntImm(dtype, node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return IntImm(dtype, 0) - _from_ast(node.operand, params, dtype, text)
    if isinstance(node, ast.BinOp) and type(node.op).__name__ in _AST_OPS:
        a = _from_ast(node.left, params, dtype, text)
        b = _from_ast(node.right, params, dtype, text)
        return binary(_AST_OPS[type(node.op).__name__], a, b)
    typed = (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _TYPED_CONSTANTS
        and len(node.args) == 1
    )
    if typed:  # T.int64(4), T.float32(0.5): a typed constant (a pad value, say)
        arg = node.args[0]
        sign = -1 if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub) else 1
        arg = arg.operand if sign == -1 else arg
        if isinstance(arg, ast.Constant) and type(arg.value) in (int, float):
            return make_const(node.func.attr, sign * arg.value)
    raise ScheduleError(
        f"IndexMap.from_text: cannot read `{ast.unparse(node)}` in {text!r}; index maps in "
        "traces use names, integers and + - * // %"
    )


def _eval_numpy(e: PrimExpr, env: dict, n: int) -> Any:
    """Evaluate an index expression over numpy arrays of the initial indices."""
    import numpy as np

    value = const_value(e)
    if value is not None:
        return np.full(n, value, dtype=np.int64)
    if isinstance(e, Var):
        return env[id(e)]
    if isinstance(e, Cast):
        return _eval_numpy(e.value, env, n)
    ops = {
        Add: np.add,
        Sub: np.subtract,
        Mul: np.multiply,
        FloorDiv: np.floor_divide,
        FloorMod: np.mod,
    }
    for cls, fn in ops.items():
        if isinstance(e, cls):
            return fn(_eval_numpy(e.a, env, n), _eval_numpy(e.b, env, n))
    raise ScheduleError(f"IndexMap.map_ndarray: cannot evaluate {e} on arrays")


__all__ = ["IndexMap"]
