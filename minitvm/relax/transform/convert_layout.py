"""ConvertLayout and AlterOpLayout: run convolutions in another data layout and keep their
results in it for as long as the ops after them can take it.

One mechanism serves both passes; they differ only in the *policy* that picks a conv2d's
(data, kernel, out) layouts: ConvertLayout reads them from the user's table, AlterOpLayout
derives the blocked NCHW{c}c / OIHW{i}i{o}o form from the target's vector lanes (and also
stores constant `linear` weights transposed, (in, out), for the matmul kernel).

The rewrite walks each dataflow block once, in order, and remembers for every value the forms
it exists in: its *base* layout (what the original program holds), the layout its producer now
writes, and every `relax.layout_transform` already emitted for it. An op reads its operands
in the form it needs; a missing form is made by one transform from the producer's form and
remembered, so a value converted back for two consumers is converted once, and a value already
in the wanted form is used as it is — a transform and its inverse are never emitted back to
back. Ops that accept the new layout (the rules in `_RULES`: conv2d, elementwise unary ops,
broadcasting binary ops with a same-layout or per-channel operand, pooling) keep it; every
other op, every value leaving the dataflow block, and the function's result get the base form.

A constant operand (a bound weight, a per-channel bias) is packed here, by a numpy reshape and
transpose, so the graph holds the packed weight itself and nothing is left to do at run time
(a transform that must pad stays a `layout_transform` call, which FoldConstant computes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...arith import Analyzer
from ...error import ArgumentError, MiniTVMError
from ...ir.module import IRModule
from ...tir.expr import Range
from ...topi.layout import Layout, layout_index_map, transformed_shape
from ...topi.utils import const_int, prove_equal
from .. import expr as rx
from ..functor import ExprMutator, used_vars
from ..op import add, layout_transform, matmul, reshape
from ..op import nn as nn_op
from ..op.manipulate import layout_transform_index_map
from ..struct_info import TensorStructInfo
from ._util import map_functions
from .dead_code_elimination import remove_unused_bindings
from .decompose import Emitter
from ...dlight.cpu import MATMUL_PACK_MIN_ROWS_TRANSPOSED

CONV2D = "relax.nn.conv2d"
LAYOUT_TRANSFORM = "relax.layout_transform"
_NO_LAYOUT = ""  # base == layout: a result in the original program's form
# the kernel layout "default" stands for, per data layout (blocked data: see _default_kernel)
_DEFAULT_KERNEL = {"NCHW": "OIHW", "NHWC": "HWIO"}

# A policy maps a conv2d call to its new (data, kernel, out) layouts, or None to leave it.
Policy = Callable[[rx.Call], "tuple[str, str, str] | None"]


@dataclass
class _Forms:
    """The forms one value exists in: layout → expression holding it in that layout."""

    base: str  # the layout of the value in the original program
    current: str  # the layout its (rewritten) producer writes
    exprs: dict[str, rx.Expr] = field(default_factory=dict)


class _Rewriter:
    """Rewrites the dataflow blocks of one function under a conv layout policy."""

    def __init__(self, policy: Policy, rules: Mapping[str, Callable]):
        self.policy, self.rules = policy, rules
        self.forms: dict[Any, _Forms] = {}  # keyed by Var, or by id() of a Constant
        self.values: dict[rx.Var, rx.Expr] = {}  # the original value of every var bound so far
        self.em = Emitter(dataflow=True)

    # ------------------------------------------------------------------ forms
    def _key(self, e: rx.Expr) -> Any:
        return id(e) if isinstance(e, rx.Constant) else e

    def get(self, e: rx.Expr, src: str, dst: str) -> rx.Expr:
        """`e` (in layout `src` in the original program) in layout `dst`."""
        forms = self.forms.get(self._key(e))
        if forms is None:
            if src == dst:
                return e
            forms = _Forms(src, src, {src: e})
            if isinstance(e, rx.Var | rx.Constant):
                self.forms[self._key(e)] = forms
        if forms.base != src:  # the consumer names the same tensor another way
            return self._transform(self.original(e), src, dst)
        if dst not in forms.exprs:
            made = self._transform(forms.exprs[forms.current], forms.current, dst)
            forms.exprs[dst] = made
        return forms.exprs[dst]

    def original(self, e: rx.Expr) -> rx.Expr:
        """`e` in its base layout (the form the original program computes)."""
        forms = self.forms.get(self._key(e)) if isinstance(e, rx.Var) else None
        return e if forms is None else self.get(e, forms.base, forms.base)

    def blocked(self, e: rx.Expr) -> _Forms | None:
        """The forms of `e` when its producer writes a layout other than its base."""
        forms = self.forms.get(self._key(e)) if isinstance(e, rx.Var) else None
        return forms if forms is not None and forms.current != forms.base else None

    def _transform(self, e: rx.Expr, src: str, dst: str) -> rx.Expr:
        if isinstance(e, rx.Constant):
            packed = pack_array(e.data.numpy(), src, dst)
            if packed is not None:
                return rx.Constant(packed)
        hint = f"{getattr(e, 'name_hint', 'const')}_{dst}"
        return self.em.emit(layout_transform(e, layout_index_map(src, dst)), hint)

    # ------------------------------------------------------------------ blocks
    def rewrite_function(self, func: rx.Function) -> rx.Function:
        if not isinstance(func.body, rx.SeqExpr):
            return func
        blocks = []
        for block in func.body.blocks:
            blocks.append(
                self.rewrite_block(block) if isinstance(block, rx.DataflowBlock) else block
            )
        if all(a is b for a, b in zip(blocks, func.body.blocks, strict=True)):
            return func
        # transforms that a cancelled pair or a packed constant left unused go
        return remove_unused_bindings(func.replace(body=rx.SeqExpr(tuple(blocks), func.body.body)))

    def rewrite_block(self, block: rx.DataflowBlock) -> rx.DataflowBlock:
        self.em = Emitter(dataflow=True)
        changed = False
        for b in block.bindings:
            self.values[b.var] = b.value
            rule = _rule_of(b, self.rules)
            result = rule(self, b.value) if rule is not None else None
            if result is None:
                self.em.bindings.append(self._with_originals(b))
            else:
                self._bind(b, *result)
                changed = True
        # dataflow vars die with their block; only the base forms of outputs stay valid
        for key in [k for k, f in self.forms.items() if isinstance(k, rx.DataflowVar)]:
            del self.forms[key]
        for forms in self.forms.values():
            forms.exprs = {
                k: e for k, e in forms.exprs.items() if not isinstance(e, rx.DataflowVar)
            }
            if forms.current not in forms.exprs:  # a later block starts from the base form
                forms.current = forms.base
        if not changed:
            return block
        return rx.DataflowBlock(tuple(self.em.bindings))

    def _with_originals(self, b: rx.Binding) -> rx.Binding:
        """`b` reading every operand in its base layout (transforms emitted first)."""
        table = {v: self.original(v) for v in used_vars(b.value) if v in self.forms}
        table = {v: e for v, e in table.items() if e is not v}
        if not table:
            return b
        mutator = ExprMutator()
        mutator.var_map.update(table)
        return b.replace(value=mutator.visit_expr(b.value))

    def _bind(self, b: rx.Binding, call: rx.Expr, base: str, layout: str) -> None:
        """Bind the rewritten `call` (or the var it reduced to), whose result is in `layout`
        (base layout `base`)."""
        if layout == base:
            self.em.emit(call, b.var.name_hint, b.var)
            return
        var = self.em.emit(call, f"{b.var.name_hint}_{layout}")
        forms = _Forms(base, layout, {layout: var})
        self.forms[b.var] = forms
        if not isinstance(b.var, rx.DataflowVar):  # leaves the block: its own var holds the base
            back = layout_transform(var, layout_index_map(layout, base))
            forms.exprs[base] = self.em.emit(back, b.var.name_hint, b.var)


def pack_array(a: np.ndarray, src: str, dst: str) -> np.ndarray | None:
    """`a` (in layout `src`) rewritten in layout `dst` by reshapes and one transpose; None when
    a block of `dst` does not divide its axis (that needs padding: a layout_transform)."""
    s, d = Layout.parse(src), Layout.parse(dst)
    extents = {p: int(s.logical_dim(a.shape, p)) for p in s.primals}
    if any(d.block(p) and extents[p] % d.block(p) for p in d.primals):
        return None
    # src → one axis per primal (in src's primal order): each primal's outer then inner, merged
    order = [k for p in s.primals for k in (s.index_of(p), s.index_of(p.lower())) if k >= 0]
    logical = a.transpose(order).reshape([extents[p] for p in s.primals])
    # → dst: split every blocked primal into (outer, block), then put the axes in dst's order
    split, names = [], []
    for p in s.primals:
        block = d.block(p)
        split += [extents[p] // block, block] if block else [extents[p]]
        names += [p, p.lower()] if block else [p]
    return np.ascontiguousarray(
        logical.reshape(split).transpose([names.index(axis) for axis, _ in d.axes])
    )


def _rule_of(b: rx.Binding, rules: Mapping[str, Callable]) -> Callable | None:
    value = b.value
    if not (
        isinstance(b, rx.VarBinding) and isinstance(value, rx.Call) and isinstance(value.op, rx.Op)
    ):
        return None
    return rules.get(value.op.name)


# ----------------------------------------------------------------------------- op rules
# A rule gets the rewriter and the call, and returns (new call, base layout, layout of the
# result), or None when the op runs as before on its operands' base forms.


def _conv2d(rw: _Rewriter, call: rx.Call) -> tuple[rx.Call, str, str] | None:
    a = call.attrs
    old_data, old_kernel = a["data_layout"], a["kernel_layout"]
    old_out = a.get("out_layout") or old_data
    picked = rw.policy(call)
    if picked is None or picked == (old_data, old_kernel, old_out):
        return None
    data_layout, kernel_layout, out_layout = picked
    x, w = call.args
    x_probe, w_probe = _probe(x, old_data, data_layout), _probe(w, old_kernel, kernel_layout)
    if x_probe is None or w_probe is None:
        return None  # a block that does not divide the channels: keep the op as it is
    if not _accepts(_conv_call(call, x_probe, w_probe, picked), call, old_out, out_layout):
        return None
    data = rw.get(x, old_data, data_layout)
    weight = rw.get(w, old_kernel, kernel_layout)
    return _conv_call(call, data, weight, picked), old_out, out_layout


def _conv_call(
    call: rx.Call, data: rx.Expr, weight: rx.Expr, layouts: tuple[str, str, str]
) -> rx.Call:
    a = call.attrs
    return nn_op.conv2d(
        data,
        weight,
        a["strides"],
        a["padding"],
        a["dilation"],
        a["groups"],
        data_layout=layouts[0],
        kernel_layout=layouts[1],
        out_layout=layouts[2],
        out_dtype=a.get("out_dtype"),
    )


def _new_shape(e: rx.Expr, src: str, dst: str) -> tuple | None:
    """The shape of `e` in layout `dst`, None when the layouts do not fit it."""
    sinfo = e.struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
        return None
    try:
        return transformed_shape(sinfo.shape, src, dst)
    except MiniTVMError:
        return None


def _accepts(probe: rx.Call, call: rx.Call, base: str, layout: str) -> bool:
    """Whether the op takes the layout of `probe`: its checks pass and its result is `call`'s
    result in `layout` (an op that ignored the layout would give another shape)."""
    try:
        got = probe.struct_info
    except MiniTVMError:
        return False
    want = _new_shape(call, base, layout)
    return (
        want is not None
        and isinstance(got, TensorStructInfo)
        and got.shape is not None
        and len(got.shape) == len(want)
        and all(prove_equal(a, b) for a, b in zip(got.shape, want, strict=True))
    )


def _probe(e: rx.Expr, src: str, dst: str) -> rx.Var | None:
    """A stand-in var for `e` in layout `dst` (None when `e` does not fit it)."""
    shape = _new_shape(e, src, dst)
    return None if shape is None else rx.Var("probe", TensorStructInfo(shape, e.struct_info.dtype))


def _unary(rw: _Rewriter, call: rx.Call) -> tuple[rx.Call, str, str] | None:
    forms = rw.blocked(call.args[0])
    if forms is None:
        return None
    x = rw.get(call.args[0], forms.base, forms.current)
    return call.replace(args=(x, *call.args[1:])), forms.base, forms.current


def _binary(rw: _Rewriter, call: rx.Call) -> tuple[rx.Call, str, str] | None:
    blocked = [rw.blocked(a) for a in call.args]
    forms = next((f for f in blocked if f is not None), None)
    if forms is None:
        return None
    base, layout = Layout.parse(forms.base), Layout.parse(forms.current)
    out = call.struct_info
    if not isinstance(out, TensorStructInfo) or out.shape is None or out.ndim != base.ndim:
        return None
    args = []
    for a in call.args:
        how = _operand_plan(a, base, layout, out.shape)
        if how is None:
            return None
        args.append(how)
    new_args = tuple(make(rw) for make in args)
    return call.replace(args=new_args), forms.base, forms.current


def _operand_plan(
    a: rx.Expr, base: Layout, layout: Layout, out_shape: Sequence[Any]
) -> Callable[[_Rewriter], rx.Expr] | None:
    """How to read operand `a` of a broadcasting op computed in `layout`, or None if it can't be."""
    sinfo = a.struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or sinfo.ndim > base.ndim:
        return None
    shape = (1,) * (base.ndim - sinfo.ndim) + tuple(sinfo.shape)
    if all(const_int(d) == 1 for d in shape):
        return lambda rw: a  # a scalar broadcasts in every layout
    for p in base.primals:
        k = base.index_of(p)
        full = prove_equal(shape[k], out_shape[k])
        if not full and (layout.block(p) is not None or const_int(shape[k]) != 1):
            return None  # a broadcast along a blocked axis, or an unknown one
    if sinfo.ndim == base.ndim:
        return lambda rw: rw.get(a, base.name, layout.name)

    def widened(rw: _Rewriter) -> rx.Expr:
        if isinstance(a, rx.Constant):  # e.g. a (C, 1, 1) bias: packed here like the weights
            full_rank = rx.Constant(a.data.numpy().reshape([int(d) for d in shape]))
        else:
            full_rank = rw.em.emit(reshape(a, shape), f"{a.name_hint}_{base.name}")
        return rw.get(full_rank, base.name, layout.name)

    return widened


def _pool(rw: _Rewriter, call: rx.Call) -> tuple[rx.Call, str, str] | None:
    forms = rw.blocked(call.args[0])
    if forms is None or call.attrs.get("layout") != forms.base:
        return None
    if call.attrs.get("out_layout", call.attrs["layout"]) != call.attrs["layout"]:
        return None  # the result leaves in another layout: this rewrite would mislabel it
    attrs = dict(call.attrs)
    attrs["layout"] = forms.current
    if "out_layout" in attrs:
        attrs["out_layout"] = forms.current
    probe = call.replace(args=(_probe(call.args[0], forms.base, forms.current),), attrs=attrs)
    if not _accepts(probe, call, forms.base, forms.current):
        return None
    x = rw.get(call.args[0], forms.base, forms.current)
    return call.replace(args=(x,), attrs=attrs), forms.base, forms.current


def _cancel_inverse(rw: _Rewriter, call: rx.Call) -> tuple[rx.Expr, str, str] | None:
    """`layout_transform(layout_transform(y, m1), m2)` with m2 undoing m1 is `y` itself."""
    x = call.args[0]
    inner = rw.values.get(x) if isinstance(x, rx.Var) else None
    if not (isinstance(inner, rx.Call) and getattr(inner.op, "name", None) == LAYOUT_TRANSFORM):
        return None
    if call.attrs["pad_value"] is not None or inner.attrs["pad_value"] is not None:
        return None
    y = inner.args[0]
    y_info, out_info = y.struct_info, call.struct_info
    if not _same_shape(y_info, out_info):
        return None
    m1, m2 = (layout_transform_index_map(c) for c in (inner, call))
    ana = Analyzer()
    for v, extent in zip(m1.initial_indices, y_info.shape, strict=True):
        ana.bind(v, Range.from_min_extent(0, extent))
    round_trip = m2.map_indices(list(m1.final_indices))
    if not all(
        ana.can_prove_equal(a, b) for a, b in zip(round_trip, m1.initial_indices, strict=True)
    ):
        return None
    return rw.original(y), _NO_LAYOUT, _NO_LAYOUT


def _same_shape(a: Any, b: Any) -> bool:
    return (
        isinstance(a, TensorStructInfo)
        and isinstance(b, TensorStructInfo)
        and a.shape is not None
        and b.shape is not None
        and a.dtype == b.dtype
        and len(a.shape) == len(b.shape)
        and all(prove_equal(p, q) for p, q in zip(a.shape, b.shape, strict=True))
    )


def _static_rows(x: rx.Expr) -> float:
    """The rows of `x` as a matrix (the product of all but its last dim); inf when unknown."""
    sinfo = x.struct_info
    shape = getattr(sinfo, "shape", None)
    if shape is None:
        return math.inf
    dims = [const_int(d) for d in tuple(shape)[:-1]]
    return math.inf if any(d is None for d in dims) else math.prod(dims)


def _pretransposed_linear(rw: _Rewriter, call: rx.Call) -> tuple[rx.Expr, str, str] | None:
    """`linear(x, W) [+ b]` with a constant W is `matmul(x, W.T) [+ b]`, W.T stored: the
    matmul kernel then reads its weight rows contiguously along the output axis."""
    w = call.args[1]
    if not isinstance(w, rx.Constant) or len(w.data.shape) != 2:
        return None
    x = rw.original(call.args[0])
    if _static_rows(x) < MATMUL_PACK_MIN_ROWS_TRANSPOSED:
        # few rows (a batch-1 classifier): the kernel's dot-product rule streams W [N, K] along
        # its contiguous rows; W.T would be read 64 columns at a time with a stride per k
        # (VGG-16's 25088 x 4096 layer: 47 ms transposed vs 22 ms as given)
        return None
    product = matmul(
        x, rx.Constant(np.ascontiguousarray(w.data.numpy().T)), call.attrs["out_dtype"]
    )
    if len(call.args) == 2:
        return product, _NO_LAYOUT, _NO_LAYOUT
    bias = rw.original(call.args[2])
    return add(rw.em.emit(product, "matmul"), bias), _NO_LAYOUT, _NO_LAYOUT


_UNARY_OPS = (
    "relax.nn.relu",
    "relax.nn.gelu",
    "relax.nn.silu",
    "relax.clip",
    "relax.exp",
    "relax.log",
    "relax.sqrt",
    "relax.tanh",
    "relax.sigmoid",
    "relax.negative",
    "relax.abs",
    "relax.astype",
)
_BINARY_OPS = (
    "relax.add",
    "relax.subtract",
    "relax.multiply",
    "relax.divide",
    "relax.maximum",
    "relax.minimum",
    "relax.power",
)
_POOL_OPS = ("relax.nn.max_pool2d", "relax.nn.avg_pool2d", "relax.nn.adaptive_avg_pool2d")

_RULES: dict[str, Callable] = {
    CONV2D: _conv2d,
    LAYOUT_TRANSFORM: _cancel_inverse,
    **{name: _unary for name in _UNARY_OPS},
    **{name: _binary for name in _BINARY_OPS},
    **{name: _pool for name in _POOL_OPS},
}
# AlterOpLayout also stores constant dense weights the way the matmul kernel reads them
_TARGET_RULES: dict[str, Callable] = {
    **_RULES,
    "relax.nn.linear": _pretransposed_linear,
    "relax.nn.dense": _pretransposed_linear,
}


# ----------------------------------------------------------------------------- policies


def _conv_shapes(call: rx.Call) -> tuple[int, int, int, int] | None:
    """(C, O, groups, weight's in-channels) of an NCHW/OIHW conv2d with static channels."""
    a = call.attrs
    if a["data_layout"] != "NCHW" or a["kernel_layout"] != "OIHW":
        return None
    if (a.get("out_layout") or "NCHW") != "NCHW":
        return None
    x, w = (arg.struct_info for arg in call.args)
    if x.shape is None or w.shape is None:
        return None
    dims = const_int(x.shape[1]), const_int(w.shape[0]), const_int(w.shape[1])
    if None in dims:
        return None
    return dims[0], dims[1], a["groups"], dims[2]


def channel_block(channels: int, lanes: int) -> int | None:
    """The block of `channels` for `lanes`-wide vectors: all of them when they fit in one vector,
    else the largest power of two up to `lanes` (at least 4) dividing them; None if none does."""
    if channels <= lanes:
        return channels
    b = lanes
    while b >= 4:
        if channels % b == 0:
            return b
        b //= 2
    return None


def blocked_policy(lanes: int) -> Policy:
    """NCHW{c}c convs with c from `lanes` (AlterOpLayout's choice); depthwise OIHW1i{c}o."""

    def policy(call: rx.Call) -> tuple[str, str, str] | None:
        dims = _conv_shapes(call)
        if dims is None:
            return None
        c, o, groups, per_group = dims
        if groups == 1:
            ic, oc = channel_block(c, lanes), channel_block(o, lanes)
            if ic is None or oc is None:
                return None
            return f"NCHW{ic}c", f"OIHW{ic}i{oc}o", f"NCHW{oc}c"
        if groups == c == o and per_group == 1:
            b = channel_block(c, lanes)
            return None if b is None else (f"NCHW{b}c", f"OIHW1i{b}o", f"NCHW{b}c")
        return None

    return policy


def _default_kernel(data_layout: str, call: rx.Call) -> str:
    """The kernel layout "default" means next to `data_layout`."""
    if data_layout in _DEFAULT_KERNEL:
        return _DEFAULT_KERNEL[data_layout]
    block = Layout.parse(data_layout).block("C")
    groups, c = call.attrs["groups"], call.args[0].struct_info.shape[1]
    if groups != 1 and groups == const_int(c):
        return f"OIHW1i{block}o"
    return f"OIHW{block}i{block}o"


def table_policy(desired: Mapping[str, Sequence[str]]) -> Policy:
    """ConvertLayout's policy: the conv2d layouts the user asked for."""
    unknown = set(desired) - {CONV2D, *_POOL_OPS}
    if unknown:
        raise ArgumentError(
            f"ConvertLayout: no layout rule for {sorted(unknown)}; desired_layouts takes "
            f"{CONV2D!r} (and pooling ops, which follow their input's layout)"
        )
    wanted = list(desired.get(CONV2D, ()))
    if not wanted:
        return lambda call: None
    if len(wanted) not in (1, 2):
        raise ArgumentError(
            f"ConvertLayout: desired_layouts[{CONV2D!r}] = {wanted}: give [data_layout] or "
            "[data_layout, kernel_layout] (kernel 'default' picks the usual one)"
        )
    data_layout = wanted[0]
    for text in wanted:
        if text != "default":
            Layout.parse(text)  # a malformed string is the user's error, reported now

    def policy(call: rx.Call) -> tuple[str, str, str] | None:
        if call.args[0].struct_info.shape is None:
            return None
        kernel = wanted[1] if len(wanted) > 1 and wanted[1] != "default" else None
        return data_layout, kernel or _default_kernel(data_layout, call), data_layout

    return policy


def _vector_lanes(target: Any, bits: int = 32) -> int | None:
    """How many `bits`-wide lanes one vector register of `target` holds (None: not a CPU)."""
    from ...target import Target
    from ...target.target import enabled_features

    target = Target(target if target is not None else (Target.current() or "llvm"))
    if target.kind.name != "llvm":
        return None
    features = target.required_features or enabled_features(target.features)
    width = 512 if "avx512f" in features else 256 if "avx" in features else 128
    return width // bits


# ----------------------------------------------------------------------------- passes


def convert_layout_with(
    mod: IRModule, policy: Policy, rules: Mapping[str, Callable] = _RULES
) -> IRModule:
    """Rewrite every relax function of `mod` under the conv2d layout `policy`."""
    return map_functions(mod, lambda f: _Rewriter(policy, rules).rewrite_function(f))


def convert_layout(mod: IRModule, desired_layouts: Mapping[str, Sequence[str]]) -> IRModule:
    """ConvertLayout: convs in the layouts of `desired_layouts`, values kept in them downstream."""
    return convert_layout_with(mod, table_policy(desired_layouts))


def alter_op_layout(mod: IRModule, target: Any = None) -> IRModule:
    """AlterOpLayout: every conv2d in NCHW{c}c with c from `target`'s vector lanes, constant
    linear weights stored transposed."""
    lanes = _vector_lanes(target)
    if lanes is None:
        return mod
    return convert_layout_with(mod, blocked_policy(lanes), _TARGET_RULES)


__all__ = [
    "alter_op_layout",
    "blocked_policy",
    "channel_block",
    "convert_layout",
    "convert_layout_with",
    "table_policy",
]
