"""dlsys-style computation-graph nodes over relax ops.

A `Node` is an op applied to input nodes. Each op is one row of `AD_OPS`: how the node becomes a
relax expression once its inputs are relax values (`emit(inputs, **attrs)`). `gradients(y, xs)`
returns `Gradient` nodes: ordinary nodes whose value is computed, when the graph is emitted, by
`relax.transform.gradient.backprop` (the op table's gradient rules), so gradients of gradients
are just more nodes.

    x = ad.Variable("x"); w = ad.Variable("w")
    loss = ad.softmaxcrossentropy_op(ad.matmul_op(x, w), y_)
    grad_w, = ad.gradients(loss, [w])
    ad.Executor([loss, grad_w]).run({x: xv, w: wv, y_: yv})
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..error import MiniTVMError
from ..ir.recursion import post_order
from ..relax import op as R
from ..relax.expr import Expr
from ..relax.op import grad as G

_ids = itertools.count()


class Node:
    """A node of the graph: `op(*inputs, **attrs)`; Variables have op None. Hashable by identity."""

    __slots__ = ("attrs", "id", "inputs", "name", "op")

    def __init__(self, op: AdOp | None, inputs: Sequence[Node], attrs: dict, name: str) -> None:
        self.op, self.inputs, self.attrs, self.name = op, tuple(inputs), dict(attrs), name
        self.id = next(_ids)

    # operator overloading: nodes and Python scalars
    def __add__(self, other: Any) -> Node:
        return (
            add_op(self, other)
            if isinstance(other, Node)
            else add_byconst_op(self, const_val=other)
        )

    def __mul__(self, other: Any) -> Node:
        return (
            mul_op(self, other)
            if isinstance(other, Node)
            else mul_byconst_op(self, const_val=other)
        )

    def __sub__(self, other: Any) -> Node:
        return (
            sub_op(self, other)
            if isinstance(other, Node)
            else add_byconst_op(self, const_val=-other)
        )

    def __rsub__(self, other: Any) -> Node:
        return rsub_byconst_op(self, const_val=other)

    def __truediv__(self, other: Any) -> Node:
        return (
            div_op(self, other)
            if isinstance(other, Node)
            else mul_byconst_op(self, const_val=1.0 / other)
        )

    def __rtruediv__(self, other: Any) -> Node:
        return rdiv_byconst_op(self, const_val=other)

    def __neg__(self) -> Node:
        return neg_op(self)

    __radd__ = __add__
    __rmul__ = __mul__

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


def Variable(name: str) -> Node:
    """An input of the graph, fed through `Executor.run(feed_dict)`."""
    return Node(None, (), {}, name)


Placeholder = Variable


@dataclass(frozen=True, eq=False)
class AdOp:
    """One dlsys op: `emit(*input relax values, **attrs) -> relax expr`; `fmt` names its nodes."""

    name: str
    emit: Callable[..., Expr]
    fmt: str
    arity: int = 1  # how many leading arguments are nodes

    def __call__(self, *args: Any, **attrs: Any) -> Node:
        n = self.arity
        inputs, extra = args[:n], args[n:]
        if extra:  # attributes given positionally: conv2d_op(x, w, 2, 1), max_pool2d_op(x, 2)
            names = [p for p in inspect.signature(self.emit).parameters][n:]
            if len(extra) > len(names):
                raise MiniTVMError(f"ad.{self.name}: too many arguments ({len(args)})")
            attrs = {**dict(zip(names, extra)), **attrs}
        for k, x in enumerate(inputs):
            if not isinstance(x, Node):
                raise MiniTVMError(
                    f"ad.{self.name}: input {k} is a {type(x).__name__}, not a node; "
                    "wrap data in ad.Variable and feed it, or use the *_byconst ops for scalars"
                )
        names = {f"a{k}": x.name for k, x in enumerate(inputs)}
        return Node(self, inputs, attrs, self.fmt.format(**names, **attrs))


def _matmul(a: Expr, b: Expr, trans_A: bool = False, trans_B: bool = False) -> Expr:
    if trans_A:
        a = R.permute_dims(a, [1, 0])
    if trans_B:
        b = R.permute_dims(b, [1, 0])
    return R.matmul(a, b)


def _softmax_xent(logits: Expr, labels: Expr) -> Expr:
    """mean over rows of -sum(labels * log_softmax(logits)), shaped (1,)."""
    per_row = R.sum(R.multiply(labels, R.nn.log_softmax(logits, axis=-1)), axis=[1])
    return R.reshape(R.negative(R.mean(per_row)), (1,))


def _flatten(x: Expr) -> Expr:
    shape = G.shape_of(x, "flatten_op's input")
    rest = shape[1]
    for d in shape[2:]:
        rest = rest * d
    return R.reshape(x, (shape[0], rest))


def _bias_add(x: Expr, b: Expr, axis: int = 1) -> Expr:
    nd = len(G.shape_of(x, "add_bias_op's input"))
    axis = axis % nd
    bs = G.shape_of(b, "add_bias_op's bias")
    return R.add(x, R.reshape(b, tuple(bs) + (1,) * (nd - axis - 1)))


def _pool(fn: Callable) -> Callable:
    def emit(x: Expr, kernel: Any = 2, stride: Any = None, padding: Any = 0) -> Expr:
        return fn(x, kernel, kernel if stride is None else stride, padding)

    return emit


def _table(rows: list[tuple[str, Callable[..., Expr], str]]) -> dict[str, AdOp]:
    return {name: AdOp(name, emit, fmt, fmt.count("{a")) for name, emit, fmt in rows}


AD_OPS: dict[str, AdOp] = _table(
    [
        ("add_op", R.add, "({a0}+{a1})"),
        ("add_byconst_op", lambda a, const_val: R.add(a, float(const_val)), "({a0}+{const_val})"),
        ("sub_op", R.subtract, "({a0}-{a1})"),
        (
            "rsub_byconst_op",
            lambda a, const_val: R.subtract(float(const_val), a),
            "({const_val}-{a0})",
        ),
        ("mul_op", R.multiply, "({a0}*{a1})"),
        (
            "mul_byconst_op",
            lambda a, const_val: R.multiply(a, float(const_val)),
            "({a0}*{const_val})",
        ),
        ("div_op", R.divide, "({a0}/{a1})"),
        (
            "rdiv_byconst_op",
            lambda a, const_val: R.divide(float(const_val), a),
            "({const_val}/{a0})",
        ),
        ("neg_op", R.negative, "(-{a0})"),
        ("exp_op", R.exp, "exp({a0})"),
        ("log_op", R.log, "log({a0})"),
        ("tanh_op", R.tanh, "tanh({a0})"),
        ("sigmoid_op", R.sigmoid, "sigmoid({a0})"),
        ("matmul_op", _matmul, "matmul({a0},{a1},{trans_A},{trans_B})"),
        ("relu_op", R.nn.relu, "relu({a0})"),
        ("relu_gradient_op", G.relu_grad, "relu_gradient({a0},{a1})"),
        ("softmax_op", lambda x: R.nn.softmax(x, axis=-1), "softmax({a0})"),
        ("softmaxcrossentropy_op", _softmax_xent, "softmaxcrossentropy({a0},{a1})"),
        ("broadcastto_op", G.broadcast_like, "broadcast_to({a0},{a1})"),
        ("reducesumaxiszero_op", lambda a: R.sum(a, axis=[0]), "reduce_sum_axis_zero({a0})"),
        (
            "reduce_sum_op",
            lambda a, axis=None, keepdims=False: R.sum(a, axis, keepdims),
            "reduce_sum({a0})",
        ),
        ("oneslike_op", G.ones_like, "oneslike({a0})"),
        ("zeroslike_op", G.zeros_like, "zeroslike({a0})"),
        ("reshape_op", lambda a, shape: R.reshape(a, shape), "reshape({a0},{shape})"),
        ("transpose_op", lambda a, axes=None: R.permute_dims(a, axes), "transpose({a0})"),
        ("flatten_op", _flatten, "flatten({a0})"),
        ("add_bias_op", _bias_add, "add_bias({a0},{a1})"),
        (
            "conv2d_op",
            lambda x, w, stride=1, padding=0: R.nn.conv2d(x, w, strides=stride, padding=padding),
            "conv2d({a0},{a1})",
        ),
        ("max_pool2d_op", _pool(R.nn.max_pool2d), "max_pool2d({a0})"),
        ("avg_pool2d_op", _pool(R.nn.avg_pool2d), "avg_pool2d({a0})"),
    ]
)


def _with_defaults(op: AdOp, **defaults: Any) -> Callable[..., Node]:
    def make(*inputs: Any, **attrs: Any) -> Node:
        return op(*inputs, **{**defaults, **attrs})

    make.__name__ = op.name
    make.__doc__ = f"ad.{op.name}: a node whose value is {op.fmt}."
    return make


add_op = AD_OPS["add_op"]
add_byconst_op = AD_OPS["add_byconst_op"]
sub_op = AD_OPS["sub_op"]
rsub_byconst_op = AD_OPS["rsub_byconst_op"]
mul_op = AD_OPS["mul_op"]
mul_byconst_op = AD_OPS["mul_byconst_op"]
div_op = AD_OPS["div_op"]
rdiv_byconst_op = AD_OPS["rdiv_byconst_op"]
neg_op = AD_OPS["neg_op"]
exp_op = AD_OPS["exp_op"]
log_op = AD_OPS["log_op"]
tanh_op = AD_OPS["tanh_op"]
sigmoid_op = AD_OPS["sigmoid_op"]
matmul_op = _with_defaults(AD_OPS["matmul_op"], trans_A=False, trans_B=False)
relu_op = AD_OPS["relu_op"]
relu_gradient_op = AD_OPS["relu_gradient_op"]
softmax_op = AD_OPS["softmax_op"]
softmaxcrossentropy_op = AD_OPS["softmaxcrossentropy_op"]
broadcastto_op = AD_OPS["broadcastto_op"]
reducesumaxiszero_op = AD_OPS["reducesumaxiszero_op"]
reduce_sum_axis_zero = reducesumaxiszero_op
reduce_sum_op = AD_OPS["reduce_sum_op"]
oneslike_op = AD_OPS["oneslike_op"]
zeroslike_op = AD_OPS["zeroslike_op"]
reshape_op = AD_OPS["reshape_op"]
transpose_op = AD_OPS["transpose_op"]
flatten_op = AD_OPS["flatten_op"]
add_bias_op = AD_OPS["add_bias_op"]
add_bias = add_bias_op
conv2d_op = AD_OPS["conv2d_op"]
max_pool2d_op = AD_OPS["max_pool2d_op"]
avg_pool2d_op = AD_OPS["avg_pool2d_op"]


# ----------------------------------------------------------------------------- gradients


@dataclass(eq=False)
class _GradGroup:
    """One `gradients(y, xs)` call: its nodes share one backward pass when emitted."""

    y: Node
    xs: tuple
    nodes: list = field(default_factory=list)


def _emit_gradient(*_: Any, **__: Any) -> Expr:
    raise MiniTVMError("gradient nodes are emitted by the executor's graph builder")


GRADIENT_OP = AdOp("gradient", _emit_gradient, "grad({a0})", arity=1 << 30)


def gradients(output_node: Node, node_list: Sequence[Node]) -> list[Node]:
    """The gradient of `output_node` (summed over its elements) w.r.t. each node of `node_list`,
    as nodes; they may be fed to `gradients` again (higher-order derivatives)."""
    if not isinstance(output_node, Node):
        raise MiniTVMError(
            f"ad.gradients: output_node must be a node, got {type(output_node).__name__}"
        )
    xs = tuple(node_list)
    for k, x in enumerate(xs):
        if not isinstance(x, Node):
            raise MiniTVMError(f"ad.gradients: node_list[{k}] is a {type(x).__name__}, not a node")
    group = _GradGroup(output_node, xs)
    for k, x in enumerate(xs):
        node = Node(
            GRADIENT_OP,
            (output_node,) + xs,
            {"group": group, "index": k},
            f"grad({output_node.name}, {x.name})",
        )
        group.nodes.append(node)
    return list(group.nodes)


def find_topo_sort(node_list: Sequence[Node]) -> list[Node]:
    """Post-order DFS: every node after its inputs (iterative, so deep graphs are fine)."""
    return post_order(node_list, lambda node: node.inputs, key=lambda node: node.id)


__all__ = [
    "AD_OPS",
    "GRADIENT_OP",
    "AdOp",
    "Node",
    "Placeholder",
    "Variable",
    "add_bias",
    "add_bias_op",
    "add_byconst_op",
    "add_op",
    "avg_pool2d_op",
    "broadcastto_op",
    "conv2d_op",
    "div_op",
    "exp_op",
    "find_topo_sort",
    "flatten_op",
    "gradients",
    "log_op",
    "matmul_op",
    "max_pool2d_op",
    "mul_byconst_op",
    "mul_op",
    "neg_op",
    "oneslike_op",
    "rdiv_byconst_op",
    "reduce_sum_axis_zero",
    "reduce_sum_op",
    "reducesumaxiszero_op",
    "relu_gradient_op",
    "relu_op",
    "reshape_op",
    "rsub_byconst_op",
    "sigmoid_op",
    "softmax_op",
    "softmaxcrossentropy_op",
    "sub_op",
    "tanh_op",
    "transpose_op",
    "zeroslike_op",
]
