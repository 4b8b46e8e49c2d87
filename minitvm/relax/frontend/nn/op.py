"""nn.op: operators on nn.Tensors (TVM's `relax.frontend.nn.op`); each emits relax op calls.

Every function takes a trailing `name` (the emitted variable's name hint). The elementwise
ones are one row each (a relax op and a name hint). Norms, attention and the calls of
TE/TIR/packed functions are written out below; the composite ones are in `op_compose.py`.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ....error import ArgumentError, ShapeError
from ....tir.expr import FloatImm, IntImm, PrimExpr
from ... import op as _op
from ...expr import PrimValue, ShapeExpr, StringImm
from ...expr import Tuple as RxTuple
from .core import Tensor, current_builder, wrap_nested


def _expr(x: Any, what: str) -> Any:
    if not isinstance(x, Tensor):
        raise ArgumentError(f"nn.op.{what}: expected an nn.Tensor, got {type(x).__name__}")
    return x._expr


def _operand(x: Any, other: Any, what: str) -> Any:
    """A tensor operand; a Python number takes the dtype of the other operand."""
    if isinstance(x, bool | int | float) and isinstance(other, Tensor):
        return Tensor.from_scalar(x, other.dtype)._expr
    return _expr(x, what)


def _make_unary(op_name: str, relax_op: Callable, default: str) -> Callable:
    def unary(x: Tensor, name: str = default) -> Tensor:
        return wrap_nested(relax_op(_expr(x, op_name)), name)

    unary.__name__ = unary.__qualname__ = op_name
    unary.__doc__ = f"Elementwise {op_name} of `x`."
    return unary


def _make_binary(
    op_name: str, relax_op: Callable, default: str, operands: tuple[str, str] = ("a", "b")
) -> Callable:
    """An elementwise op whose two operands have TVM's keyword names `operands`."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = inspect.Signature(
        [inspect.Parameter(n, kind) for n in operands]
        + [inspect.Parameter("name", kind, default=default)]
    )

    def binary(*args: Any, **kwargs: Any) -> Tensor:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as err:
            raise ArgumentError(f"nn.op.{op_name}{signature}: {err}") from err
        bound.apply_defaults()
        a, b, name = bound.arguments.values()
        return wrap_nested(relax_op(_operand(a, b, op_name), _operand(b, a, op_name)), name)

    binary.__name__ = binary.__qualname__ = op_name
    binary.__signature__ = signature
    a, b = operands
    binary.__doc__ = f"Elementwise {op_name} of `{a}` and `{b}` (numpy broadcasting)."
    return binary


# One row per elementwise op: nn.op name = (its relax op, the default name hint).
relu = _make_unary("relu", _op.nn.relu, "relu")
silu = _make_unary("silu", _op.nn.silu, "silu")
relu6 = _make_unary("relu6", _op.nn.relu6, "relu6")
sigmoid = _make_unary("sigmoid", _op.sigmoid, "sigmoid")
tanh = _make_unary("tanh", _op.tanh, "tanh")
exp = _make_unary("exp", _op.exp, "exp")
log = _make_unary("log", _op.log, "log")
floor = _make_unary("floor", _op.floor, "floor")
negative = _make_unary("negative", _op.negative, "neg")
square = _make_unary("square", _op.square, "square")
sqrt = _make_unary("sqrt", _op.sqrt, "sqrt")
add = _make_binary("add", _op.add, "add")
subtract = _make_binary("subtract", _op.subtract, "subtract")
multiply = _make_binary("multiply", _op.multiply, "mul")
divide = _make_binary("divide", _op.divide, "divide")
maximum = _make_binary("maximum", _op.maximum, "maximum", ("x1", "x2"))
minimum = _make_binary("minimum", _op.minimum, "minimum", ("x1", "x2"))
less = _make_binary("less", _op.less, "less")
less_equal = _make_binary("less_equal", _op.less_equal, "less_equal")
greater = _make_binary("greater", _op.greater, "greater")
greater_equal = _make_binary("greater_equal", _op.greater_equal, "greater_equal")
equal = _make_binary("equal", _op.equal, "equal")
not_equal = _make_binary("not_equal", _op.not_equal, "not_equal")


def _reduction(relax_op: Callable, op_name: str) -> Callable:
    def reduce(
        x: Tensor, axis: int | list[int] | None = None, keepdims: bool = False, name: str = op_name
    ) -> Tensor:
        return wrap_nested(relax_op(_expr(x, op_name), axis, keepdims), name)

    reduce.__name__ = reduce.__qualname__ = op_name
    reduce.__doc__ = f"{op_name} of `x` over `axis` (all axes when None)."
    return reduce


sum = _reduction(_op.sum, "sum")
max = _reduction(_op.max, "max")
min = _reduction(_op.min, "min")
mean = _reduction(_op.mean, "mean")


def matmul(a: Tensor, b: Tensor, out_dtype: str | None = None, name: str = "matmul") -> Tensor:
    """`a @ b` with numpy's batching rules."""
    return wrap_nested(_op.matmul(_expr(a, "matmul"), _expr(b, "matmul"), out_dtype), name)


def astype(x: Tensor, dtype: str, name: str = "astype") -> Tensor:
    """`x` cast to `dtype` (no op when it has that dtype already)."""
    if x.dtype == str(dtype):
        return x
    return wrap_nested(_op.astype(_expr(x, "astype"), dtype), name)


def reshape(x: Tensor, shape: Sequence[Any], name: str = "reshape") -> Tensor:
    """`x` with a new shape (one dim may be -1)."""
    return wrap_nested(_op.reshape(_expr(x, "reshape"), list(shape)), name)


def permute_dims(x: Tensor, axes: list[int] | None = None, name: str | None = None) -> Tensor:
    """`x` with its axes reordered (reversed when `axes` is None). Without a `name`, the
    transposed weight of a `linear*` layer is named `matmul*`, as TVM names it."""
    if name is None:
        x_name = getattr(_expr(x, "permute_dims"), "name_hint", "")
        name = (
            x_name.replace("linear", "matmul").replace(".", "_")
            if "linear" in x_name
            else "permute_dims"
        )
    return wrap_nested(_op.permute_dims(_expr(x, "permute_dims"), axes), name)


def permute(x: Tensor, axes: list[int] | None, name: str = "permute") -> Tensor:
    """Alias of permute_dims (torch's name)."""
    return permute_dims(x, axes, name)


def broadcast_to(x: Tensor, shape: Sequence[Any], name: str = "broadcast_to") -> Tensor:
    return wrap_nested(_op.broadcast_to(_expr(x, "broadcast_to"), list(shape)), name)


def repeat(x: Tensor, repeats: int, axis: int | None = None, name: str = "repeat") -> Tensor:
    return wrap_nested(_op.repeat(_expr(x, "repeat"), repeats, axis), name)


def squeeze(x: Tensor, axis: int = -1, name: str = "squeeze") -> Tensor:
    return wrap_nested(_op.squeeze(_expr(x, "squeeze"), axis), name)


def unsqueeze(x: Tensor, dim: int, name: str = "unsqueeze") -> Tensor:
    return wrap_nested(_op.expand_dims(_expr(x, "unsqueeze"), dim), name)


def concat(x: list[Tensor], dim: int, name: str = "concat") -> Tensor:
    """The tensors of `x` joined along `dim`."""
    return wrap_nested(_op.concat([_expr(t, "concat") for t in x], dim), name)


def split(
    ary: Tensor, indices_or_sections: int | Sequence[int], axis: int = 0, name: str = "split"
) -> tuple[Tensor, ...]:
    """`ary` cut into equal sections (an int) or at the given indices, along `axis`."""
    return wrap_nested(_op.split(_expr(ary, "split"), indices_or_sections, axis), name)


def chunk(x: Tensor, chunks: int, dim: int = 0, name: str = "chunk") -> tuple[Tensor, ...]:
    """`x` cut into `chunks` equal parts along `dim`."""
    return split(x, chunks, dim, name)


def take(x: Tensor, indices: Tensor, axis: int | None = None, name: str = "take") -> Tensor:
    """Rows (elements along `axis`) of `x` at `indices`."""
    return wrap_nested(_op.take(_expr(x, "take"), _expr(indices, "take"), axis), name)


def where(condition: Tensor, x1: Any, x2: Any, name: str = "where") -> Tensor:
    """`x1` where `condition` holds, else `x2`."""
    like = x1 if isinstance(x1, Tensor) else x2
    args = [_operand(v, like, "where") for v in (x1, x2)]
    return wrap_nested(_op.where(_expr(condition, "where"), *args), name)


def cumsum(
    data: Tensor,
    axis: int | None = None,
    dtype: str | None = None,
    exclusive: bool | None = None,
    name: str = "cumsum",
) -> Tensor:
    return wrap_nested(_op.cumsum(_expr(data, "cumsum"), axis, dtype, bool(exclusive)), name)


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    return wrap_nested(_op.nn.softmax(_expr(x, "softmax"), axis), name)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0, name: str = "softplus"):
    return wrap_nested(_op.nn.softplus(_expr(x, "softplus"), beta, threshold), name)


def gelu(x: Tensor, approximate: str | None = None, name: str = "gelu") -> Tensor:
    """GELU; `approximate="tanh"` uses the tanh formula, otherwise the exact erf one."""
    if approximate not in (None, "none", "tanh"):
        raise ArgumentError(f"nn.op.gelu: approximate must be None or 'tanh', got {approximate!r}")
    relax_op = _op.nn.gelu_tanh if approximate == "tanh" else _op.nn.gelu
    return wrap_nested(relax_op(_expr(x, "gelu")), name)


def _shape_arg(shape: Any) -> list:
    if isinstance(shape, int | PrimExpr):
        return [shape]
    return list(shape)


def full(shape: Sequence[Any], fill_value: Any, dtype: str = "float32", name: str = "full"):
    """A tensor of `shape` filled with `fill_value` (a number, a tir constant or a 0-d Tensor)."""
    if isinstance(fill_value, FloatImm | IntImm):  # a constant, as TVM makes of a Python number
        fill_value = fill_value.value
    value = fill_value._expr if isinstance(fill_value, Tensor) else fill_value
    return wrap_nested(_op.full(_shape_arg(shape), value, dtype), name)


def zeros(shape: Sequence[Any], dtype: str = "float32", name: str = "zeros") -> Tensor:
    return wrap_nested(_op.zeros(_shape_arg(shape), dtype), name)


def ones(shape: Sequence[Any], dtype: str = "float32", name: str = "ones") -> Tensor:
    return wrap_nested(_op.ones(_shape_arg(shape), dtype), name)


def empty(shape: Sequence[Any], dtype: str = "float32", name: str = "empty") -> Tensor:
    """A tensor of `shape` whose values are unspecified (minitvm fills zeros)."""
    return zeros(shape, dtype, name)


def pad(
    x: Tensor, pad: list[int], mode: str = "constant", value: float = 0.0, name: str = "pad"
) -> Tensor:
    """`x` padded by `pad` = [before_0, after_0, before_1, after_1, ...]."""
    return wrap_nested(_op.nn.pad(_expr(x, "pad"), pad, value, mode), name)


def layer_norm(
    x: Tensor,
    normalized_shape: int | list[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    name: str = "layer_norm",
) -> Tensor:
    """Normalise over the last len(normalized_shape) axes, then scale and shift."""
    dims = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    if list(x.shape[-len(dims) :]) != dims:
        raise ShapeError(
            f"nn.op.layer_norm: normalized_shape {dims} does not match the last dims of x {x.shape}"
        )
    axes = list(range(-len(dims), 0))
    gamma = weight._expr if weight is not None else Tensor.from_scalar(1, x.dtype)._expr
    beta = bias._expr if bias is not None else Tensor.from_scalar(0, x.dtype)._expr
    if weight is None or bias is None:  # the op takes both; broadcast 1 / 0 to the norm shape
        bb = current_builder("layer_norm")
        if weight is None:
            gamma = bb.emit(_op.broadcast_to(gamma, dims))
        if bias is None:
            beta = bb.emit(_op.broadcast_to(beta, dims))
    return wrap_nested(_op.nn.layer_norm(x._expr, gamma, beta, axes, eps), name)


def group_norm(
    x: Tensor,
    num_groups: int,
    weight: Tensor | None,
    bias: Tensor | None,
    eps: float = 1e-5,
    channel_axis: int = 1,
    axes: list[int] | None = None,
    name: str = "group_norm",
) -> Tensor:
    """Normalise each group of channels over `axes` (default: every axis after the channel)."""
    if axes is None:
        axes = [i for i in range(2, x.ndim)]
    channels = [x.shape[channel_axis]]
    bb = current_builder("group_norm")
    gamma = weight._expr if weight is not None else bb.emit(_op.ones(channels, x.dtype))
    beta = bias._expr if bias is not None else bb.emit(_op.zeros(channels, x.dtype))
    call = _op.nn.group_norm(x._expr, gamma, beta, num_groups, channel_axis, axes, eps)
    return wrap_nested(call, name)


def conv1d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | list[int] = 1,
    padding: int | list[int] = 0,
    dilation: int | list[int] = 1,
    groups: int = 1,
    name: str = "conv1d",
) -> Tensor:
    """1-D convolution in NCW layout (weight OIW), plus an optional per-channel bias."""
    out = _op.nn.conv1d(x._expr, weight._expr, stride, padding, dilation, groups)
    out = wrap_nested(out, name)
    if bias is not None:
        out = wrap_nested(_op.add(out._expr, reshape(bias, [1, -1, 1])._expr), name)
    return out


def conv2d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | list[int] = 1,
    padding: int | list[int] = 0,
    dilation: int | list[int] = 1,
    groups: int = 1,
    data_layout: str | None = "NCHW",
    name: str = "conv2d",
) -> Tensor:
    """2-D convolution (weight OIHW), plus an optional per-channel bias."""
    layout = data_layout or "NCHW"

    def pair(v: Any) -> Any:
        return [v, v] if isinstance(v, int) else list(v)

    out = _op.nn.conv2d(
        x._expr, weight._expr, pair(stride), pair(padding), pair(dilation), groups, layout
    )
    out = wrap_nested(out, name)
    if bias is not None:
        shape = [1, 1, 1, 1]
        shape[layout.index("C")] = -1
        out = wrap_nested(_op.add(out._expr, reshape(bias, shape)._expr), name)
    return out


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool | None = False,
    scale: float | None = None,
    name: str = "scaled_dot_product_attention",
) -> Tensor:
    """Attention over (batch, seq, heads, head_dim) tensors; `attn_mask` is added to the scores."""
    bias = attn_mask._expr if attn_mask is not None else None
    call = _op.nn.attention(
        query._expr, key._expr, value._expr, bias, scale, "TopLeft" if is_causal else None
    )
    return wrap_nested(call, name)


def _out_sinfo(out: Any, what: str) -> Any:
    if isinstance(out, Tensor):
        return out._expr.struct_info
    if isinstance(out, list | tuple) and out and builtins.all(isinstance(t, Tensor) for t in out):
        return [t._expr.struct_info for t in out]
    raise ArgumentError(
        f"nn.op.{what}: out must be an nn.Tensor placeholder or a list of them, e.g. "
        'nn.Tensor.placeholder((n, 128), "float32")'
    )


def tensor_expr_op(
    tensor_expr_func: Callable,
    name_hint: str,
    args: list[Any],
    *,
    attrs: dict[str, Any] | None = None,
) -> Any:
    """Call a TE function (e.g. `topi.nn.relu`) on nn Tensors: it becomes a PrimFunc of the
    module, called through call_tir."""
    bb = current_builder("tensor_expr_op")
    te_args = [a._expr if isinstance(a, Tensor) else a for a in args]
    call = bb.call_te(tensor_expr_func, *te_args, primfunc_name_hint=name_hint)
    if attrs:
        gv = call.args[0]
        func = bb.get()[gv]
        bb.update_func(gv, func.with_attrs(attrs) if hasattr(func, "with_attrs") else func)
    return wrap_nested(call, name_hint)


def _ir_op_args(args: Any, what: str) -> tuple[list, list]:
    """The relax tensors and the tir scalars (ShapeExprs spread) among a tensor_ir_op's args."""
    args = list(args) if isinstance(args, list | tuple) else [args]
    tensors = [a._expr for a in args if isinstance(a, Tensor)]
    scalars = [a for a in args if isinstance(a, PrimExpr | int) and not isinstance(a, Tensor)]
    bad = [a for a in args if not isinstance(a, Tensor | PrimExpr | int | ShapeExpr)]
    if bad:
        raise ArgumentError(
            f"nn.op.{what}: arguments must be nn Tensors or tir expressions, got "
            f"{type(bad[0]).__name__}"
        )
    for shape in (a for a in args if isinstance(a, ShapeExpr)):
        scalars.extend(shape.values)
    return tensors, scalars


def tensor_ir_op(func: Any, name_hint: str, args: Any, out: Any) -> Any:
    """Call the tir.PrimFunc `func` in destination-passing style on `args` (Tensors, then tir
    expressions passed as its scalar arguments); `out` describes the outputs."""
    from ...op.base import call_tir

    tensors, scalars = _ir_op_args(args, f"tensor_ir_op({name_hint!r})")
    bb = current_builder("tensor_ir_op")
    gv = bb.add_func(func, name_hint)
    call = call_tir(gv, tensors, _out_sinfo(out, "tensor_ir_op"), scalars or None)
    return wrap_nested(bb.emit(call, name_hint), name_hint)


def tensor_ir_inplace_op(
    func: Any, name_hint: str, args: Any, inplace_indices: Any, out: Any
) -> Any:
    """As tensor_ir_op, but output i is written into the Tensor argument at
    `inplace_indices[i]` (-1: a fresh output): one `R.call_tir_inplace`."""
    from ...op.call_tir_inplace import call_tir_inplace

    tensors, scalars = _ir_op_args(args, f"tensor_ir_inplace_op({name_hint!r})")
    bb = current_builder("tensor_ir_inplace_op")
    gv = bb.add_func(func, name_hint)
    sinfo = _out_sinfo(out, "tensor_ir_inplace_op")
    call = call_tir_inplace(gv, tensors, inplace_indices, sinfo, scalars or None)
    return wrap_nested(bb.emit(call, name_hint), name_hint)


def extern(name: str, args: Sequence[Any], out: Any) -> Any:
    """Call the registered packed function `name` in destination-passing style (it writes the
    outputs described by `out`). Arguments are nn Tensors, Python ints (int64), floats
    (float64), str, tir expressions, or lists of these (passed as tuples), as in TVM."""
    from ...op.base import call_dps_packed

    def convert(arg: Any) -> Any:
        if isinstance(arg, Tensor):
            return arg._expr
        if isinstance(arg, bool):
            raise ArgumentError(f"nn.op.extern({name!r}): a bool argument is not supported")
        if isinstance(arg, int):
            return PrimValue(IntImm("int64", arg))
        if isinstance(arg, float):
            return PrimValue(FloatImm("float64", arg))
        if isinstance(arg, str):
            return StringImm(arg)
        if isinstance(arg, PrimExpr):
            return PrimValue(arg)
        if isinstance(arg, list | tuple):
            return RxTuple(tuple(convert(a) for a in arg))
        raise ArgumentError(
            f"nn.op.extern({name!r}): arguments are nn Tensors, ints, floats, str, tir "
            f"expressions or lists of them, got {type(arg).__name__}"
        )

    call = call_dps_packed(name, [convert(a) for a in args], _out_sinfo(out, "extern"))
    return wrap_nested(call, name.replace(".", "_"))


from .debug import debug_func, print_
from .op_compose import arange, prelu, rms_norm, triu  # written with the ops above
from .op_extra import (  # they use _expr above
    argsort,
    ccl_allgather,
    ccl_allreduce,
    ccl_broadcast_from_worker0,
    conv1d_transpose,
    conv3d,
    get_timestep_embedding,
    interpolate,
    sort,
    topk,
)
from .op_sampling import (  # token sampling (TVM's LLM decoding ops)
    multinomial_from_uniform,
    renormalize_top_p_top_k_prob,
    sample_top_p_top_k_from_sorted_prob,
)

__all__ = [
    "add",
    "arange",
    "argsort",
    "astype",
    "broadcast_to",
    "ccl_allgather",
    "ccl_allreduce",
    "ccl_broadcast_from_worker0",
    "chunk",
    "concat",
    "conv1d",
    "conv1d_transpose",
    "conv2d",
    "conv3d",
    "cumsum",
    "debug_func",
    "divide",
    "empty",
    "equal",
    "exp",
    "extern",
    "floor",
    "full",
    "gelu",
    "get_timestep_embedding",
    "greater",
    "greater_equal",
    "group_norm",
    "interpolate",
    "layer_norm",
    "less",
    "less_equal",
    "log",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multinomial_from_uniform",
    "multiply",
    "negative",
    "not_equal",
    "ones",
    "pad",
    "permute",
    "permute_dims",
    "prelu",
    "print_",
    "relu",
    "relu6",
    "renormalize_top_p_top_k_prob",
    "repeat",
    "reshape",
    "rms_norm",
    "sample_top_p_top_k_from_sorted_prob",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "sort",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "subtract",
    "sum",
    "take",
    "tanh",
    "tensor_expr_op",
    "tensor_ir_inplace_op",
    "tensor_ir_op",
    "topk",
    "triu",
    "unsqueeze",
    "where",
    "zeros",
]
