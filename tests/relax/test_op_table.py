"""Every op of the table: its shape rule agrees with its numpy reference, and its TE
legalization (compiled by the driver) agrees with the numpy reference, with a symbolic batch dim."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.relax import op
from minitvm.relax.eval_ref import eval_dim, evaluate
from minitvm.relax.op.base import STRUCTURAL_OPS
from minitvm.relax.struct_info import TensorStructInfo, TupleStructInfo
from minitvm.topi.layout import layout_index_map


@dataclass
class Case:
    build: Callable[..., Any]  # relax args -> Call
    shapes: list  # per argument: a shape (ints and "n"), or ("int32", shape) for index tensors
    dtype: str = "float32"
    positive: bool = False  # inputs drawn from (0.5, 2) (log, sqrt, power)
    ops: tuple = ()  # op names covered (default: inferred from the built call)
    rtol: float = 1e-5
    atol: float = 1e-5
    symbolic: bool = True  # also run with "n" symbolic
    tuple_args: tuple = ()  # argument positions passed as one tuple (concat)
    extra: dict = field(default_factory=dict)


N = 3  # the value the symbolic batch dim "n" takes at run time

CASES: dict[str, Case] = {
    "add": Case(lambda x, y: op.add(x, y), [("n", 4), (4,)]),
    "add_bcast_ones": Case(lambda x, y: op.add(x, y), [("n", 1, 5), (3, 1)], symbolic=True),
    "subtract": Case(lambda x, y: op.subtract(x, y), [("n", 4), ("n", 4)]),
    "multiply": Case(lambda x, y: op.multiply(x, y), [(2, "n", 4), (4,)]),
    "divide": Case(lambda x, y: op.divide(x, y), [("n", 4), ("n", 4)], positive=True),
    "power": Case(lambda x, y: op.power(x, y), [("n", 4), (4,)], positive=True, rtol=1e-4),
    "equal": Case(lambda x, y: op.equal(x, y), [("n", 4), (4,)]),
    "equal_max": Case(
        lambda x: op.equal(x, op.max(x, axis=1, keepdims=True)), [("n", 4)]
    ),  # some True: the row maxima
    "maximum": Case(lambda x, y: op.maximum(x, y), [("n", 4), (1, 4)]),
    "ewise_fma": Case(lambda x, y, z: op.ewise_fma(x, y, z), [("n", 4), (4,), ("n", 1)]),
    "minimum": Case(lambda x, y: op.minimum(x, y), [("n", 4), ()]),
    "negative": Case(lambda x: op.negative(x), [("n", 4)]),
    "abs": Case(lambda x: op.abs(x), [("n", 4)]),
    "exp": Case(lambda x: op.exp(x), [("n", 4)]),
    "log": Case(lambda x: op.log(x), [("n", 4)], positive=True),
    "sqrt": Case(lambda x: op.sqrt(x), [("n", 4)], positive=True),
    "tanh": Case(lambda x: op.tanh(x), [("n", 4)]),
    "sigmoid": Case(lambda x: op.sigmoid(x), [("n", 4)]),
    "matmul": Case(lambda x, y: op.matmul(x, y), [("n", 8), (8, 5)], rtol=1e-4),
    "matmul_batched": Case(lambda x, y: op.matmul(x, y), [(2, "n", 6), (1, 6, 3)], rtol=1e-4),
    "matmul_vec_left": Case(lambda x, y: op.matmul(x, y), [(6,), (2, 6, "n")], rtol=1e-4),
    "matmul_vec": Case(lambda x, y: op.matmul(x, y), [("n", 6), (6,)], rtol=1e-4),
    "nn.linear": Case(lambda x, w, b: op.nn.linear(x, w, b), [("n", 8), (5, 8), (5,)], rtol=1e-4),
    "nn.linear_nobias": Case(lambda x, w: op.linear(x, w), [(2, "n", 8), (5, 8)], rtol=1e-4),
    "nn.dense_2022": Case(lambda x, w: op.nn.dense(x, w), [("n", 8), (5, 8)], rtol=1e-4),
    "nn.relu": Case(lambda x: op.nn.relu(x), [("n", 4)]),
    "nn.gelu": Case(lambda x: op.nn.gelu(x), [("n", 4)], rtol=1e-4, atol=1e-5),
    "nn.softmax": Case(lambda x: op.nn.softmax(x), [("n", 7)]),
    "nn.softmax_axis0": Case(lambda x: op.nn.softmax(x, axis=0), [("n", 7)]),
    "nn.log_softmax": Case(lambda x: op.nn.log_softmax(x, axis=1), [("n", 5, 2)], rtol=1e-4),
    "nn.conv2d": Case(
        lambda x, w: op.nn.conv2d(x, w, strides=2, padding=(1, 0, 2, 1), dilation=(1, 2)),
        [("n", 4, 9, 8), (6, 4, 3, 2)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv2d_groups": Case(
        lambda x, w: op.nn.conv2d(x, w, padding=1, groups=2),
        [("n", 4, 6, 6), (6, 2, 3, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.max_pool2d": Case(lambda x: op.nn.max_pool2d(x, 3, 2, 1), [("n", 2, 7, 8)]),
    "nn.max_pool2d_ceil": Case(
        lambda x: op.nn.max_pool2d(x, 2, 2, 0, ceil_mode=True), [(1, 2, 7, 7)], symbolic=False
    ),
    "nn.avg_pool2d": Case(lambda x: op.nn.avg_pool2d(x, 3, 2, 1), [("n", 2, 7, 8)]),
    "nn.avg_pool2d_incl": Case(
        lambda x: op.nn.avg_pool2d(x, (2, 3), 1, (1, 1), count_include_pad=True), [("n", 2, 5, 6)]
    ),
    "nn.adaptive_avg_pool2d": Case(
        lambda x: op.nn.adaptive_avg_pool2d(x, (3, 2)), [("n", 2, 7, 5)]
    ),
    "nn.adaptive_avg_pool2d_global": Case(
        lambda x: op.nn.adaptive_avg_pool2d(x, 1), [("n", 3, 4, 4)]
    ),
    "nn.conv2d_nhwc": Case(
        lambda x, w: op.nn.conv2d(
            x, w, 2, (1, 0, 1, 1), 1, data_layout="NHWC", kernel_layout="HWIO"
        ),
        [("n", 7, 6, 3), (3, 2, 3, 5)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv2d_nchwc": Case(
        lambda x, w: op.nn.conv2d(
            x, w, 1, 1, data_layout="NCHW2c", kernel_layout="OIHW2i4o", out_layout="NCHW4c"
        ),
        [("n", 2, 5, 4, 2), (2, 2, 3, 3, 2, 4)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.max_pool2d_nhwc": Case(
        lambda x: op.nn.max_pool2d(x, 3, 2, 1, layout="NHWC"), [("n", 7, 8, 3)]
    ),
    "nn.avg_pool2d_nchwc": Case(
        lambda x: op.nn.avg_pool2d(x, (2, 3), 1, (1, 1), layout="NCHW4c"), [("n", 1, 5, 6, 4)]
    ),
    "nn.adaptive_avg_pool2d_nhwc": Case(
        lambda x: op.nn.adaptive_avg_pool2d(x, (3, 2), layout="NHWC"), [("n", 7, 5, 2)]
    ),
    "clip": Case(lambda x: op.clip(x, -0.5, 0.7), [("n", 4)]),
    "nn.relu6": Case(
        lambda x: op.nn.relu6(op.multiply(x, op.full((4,), 5.0, "float32"))), [("n", 4)]
    ),
    "nn.batch_norm": Case(
        lambda x, g, b, m, v: op.nn.batch_norm(x, g, b, m, v),
        [("n", 3, 2, 2), (3,), (3,), (3,), (3,)],
        positive=True,
        rtol=1e-4,
    ),
    "nn.layer_norm": Case(
        lambda x, g, b: op.nn.layer_norm(x, g, b, axes=[-2, -1]),
        [("n", 3, 4), (3, 4), (3, 4)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "sum": Case(lambda x: op.sum(x, axis=1), [("n", 4, 3)], rtol=1e-5),
    "sum_all_keep": Case(lambda x: op.sum(x, keepdims=True), [("n", 4)], rtol=1e-5),
    "mean": Case(lambda x: op.mean(x, axis=[0, 2], keepdims=True), [("n", 4, 3)]),
    "max": Case(lambda x: op.max(x, axis=-1), [("n", 4, 3)]),
    "min": Case(lambda x: op.min(x, axis=0), [("n", 4)]),
    "prod": Case(lambda x: op.prod(x, axis=1), [("n", 3)], positive=True),
    "reshape": Case(lambda x: op.reshape(x, (2, -1)), [("n", 4)]),
    "reshape_static": Case(lambda x: op.reshape(x, (6, 2)), [(3, 4)], symbolic=False),
    "permute_dims": Case(lambda x: op.permute_dims(x, [2, 0, 1]), [("n", 4, 3)]),
    "permute_dims_default": Case(lambda x: op.permute_dims(x), [("n", 4)]),
    "flatten": Case(lambda x: op.flatten(x), [("n", 2, 3)]),
    "concat": Case(lambda x, y, z: op.concat([x, y, z], axis=1), [("n", 2), ("n", 3), ("n", 1)]),
    "split": Case(lambda x: op.split(x, 2, axis=1), [("n", 6)]),
    "split_indices": Case(lambda x: op.split(x, [1, 4], axis=0), [(6, "n")]),
    "strided_slice": Case(
        lambda x: op.strided_slice(x, [0, 1], [1, 0], [5, -1], [2, 1]), [(6, "n")]
    ),
    "strided_slice_neg": Case(lambda x: op.strided_slice(x, [1], [-1], [0], [-2]), [("n", 7)]),
    "take": Case(lambda x, i: op.take(x, i, axis=0), [(5, "n"), ("int32", (4,))]),
    # indices wrapped into the axis (out-of-range ones are a run-time error, tested elsewhere)
    "sort": Case(lambda x: op.sort(x, 1, True), [("n", 6)]),
    "argsort": Case(lambda x: op.argsort(x, 0), [("n", 5)]),
    "topk": Case(lambda x: op.topk(x, 2, 1), [("n", 6)]),
    "scatter_elements": Case(
        lambda d, i, u: op.scatter_elements(d, i, u, 1, "add"),
        [("n", 8), ("int32", ("n", 3)), ("n", 3)],
    ),
    "scatter_nd": Case(
        lambda d, i, u: op.scatter_nd(d, i, u, "max"), [(8, 4), ("int32", ("n", 1)), ("n", 4)]
    ),
    "gather_nd": Case(lambda d, i: op.gather_nd(d, i), [(8, 7), ("int32", ("n", 2))]),
    "one_hot": Case(lambda i: op.one_hot(i, 2.0, 0.5, 5), [("int32", ("n", 3))]),
    "nn.max_pool3d": Case(
        lambda x: op.nn.max_pool3d(x, (2, 3, 2), (2, 1, 2), (1, 0, 1, 0, 1, 1), ceil_mode=True),
        [("n", 2, 5, 6, 7)],
    ),
    "nn.avg_pool3d": Case(
        lambda x: op.nn.avg_pool3d(x, 3, 2, 1, (1, 2, 1), count_include_pad=True),
        [("n", 2, 7, 6, 9)],
    ),
    "random.dropout_mask": Case(
        lambda x, k: op.multiply(x, op.random.dropout_mask(k, (4,), 0.5)),
        [("n", 4), ("int64", (2,))],
    ),
    "gather_elements": Case(
        lambda x, i: op.gather_elements(x, op.floor_mod(i, relax.const(5, "int32")), axis=0),
        [(5, "n"), ("int32", (3, "n"))],
    ),
    "arange": Case(lambda x: op.add(x, op.arange(0, 4, 1, "float32")), [("n", 4)]),
    # ONNX's elementwise math (relax/op/elementwise_math.py); asin/acos on tanh(x) in (-1, 1)
    "tan": Case(lambda x: op.tan(x), [("n", 3)], rtol=1e-4, atol=1e-4),
    "sinh": Case(lambda x: op.sinh(x), [("n", 3)], rtol=1e-5),
    "cosh": Case(lambda x: op.cosh(x), [("n", 3)], rtol=1e-5),
    "asin": Case(lambda x: op.asin(op.tanh(x)), [("n", 3)], rtol=1e-4, atol=1e-5),
    "acos": Case(lambda x: op.acos(op.tanh(x)), [("n", 3)], rtol=1e-4, atol=1e-5),
    "atan": Case(lambda x: op.atan(x), [("n", 3)]),
    # TVM's inverse hyperbolics: acosh on 1 + x*x >= 1, atanh on tanh(x) / 2 in (-1, 1)
    "asinh": Case(lambda x: op.asinh(x), [("n", 3)], rtol=1e-4, atol=1e-5),
    "acosh": Case(
        lambda x: op.acosh(op.add(op.multiply(x, x), relax.const(1.5, "float32"))),
        [("n", 3)],
        rtol=1e-4,
        atol=1e-5,
    ),
    "atanh": Case(
        lambda x: op.atanh(op.multiply(op.tanh(x), relax.const(0.5, "float32"))),
        [("n", 3)],
        rtol=1e-4,
        atol=1e-5,
    ),
    "trunc": Case(lambda x: op.trunc(op.multiply(x, relax.const(3.0, "float32"))), [("n", 3)]),
    "isnan": Case(lambda x: op.isnan(op.log(x)), [("n", 3)]),
    "isinf": Case(lambda x: op.isinf(op.divide(relax.const(1.0, "float32"), x)), [("n", 3)]),
    "isfinite": Case(lambda x: op.isfinite(op.log(x)), [("n", 3)]),
    "bitwise_not": Case(lambda i: op.bitwise_not(i), [("int32", ("n", 3))]),
    "bitwise_and": Case(lambda a, b: op.bitwise_and(a, b), [("int32", ("n", 3)), ("int32", (3,))]),
    "bitwise_or": Case(lambda a, b: op.bitwise_or(a, b), [("int32", ("n", 3)), ("int32", (3,))]),
    "bitwise_xor": Case(lambda a, b: op.bitwise_xor(a, b), [("int32", ("n", 3)), ("int32", (3,))]),
    # shift amounts masked into [0, 7]: shifts by a negative amount or past the width differ
    "left_shift": Case(
        lambda a, b: op.left_shift(a, op.bitwise_and(b, relax.const(7, "int32"))),
        [("int32", ("n", 3)), ("int32", (3,))],
    ),
    "right_shift": Case(
        lambda a, b: op.right_shift(a, op.bitwise_and(b, relax.const(7, "int32"))),
        [("int32", ("n", 3)), ("int32", (3,))],
    ),
    "reinterpret": Case(lambda x: op.reinterpret(x, "int32"), [("n", 3)]),
    "cumprod": Case(lambda x: op.cumprod(x, 1), [("n", 4)], positive=True, rtol=1e-5),
    "sparse_reshape": Case(
        lambda x: op.sparse_reshape(
            relax.const(np.array([[0, 1], [1, 5], [1, 2]], "int64")),
            relax.const(np.array([2, 6], "int64")),
            relax.const(np.array([3, -1], "int64")),
        ),
        [(2,)],
        symbolic=False,
    ),
    "take_axis1": Case(lambda x, i: op.take(x, i, axis=1), [("n", 5), ("int32", (2, 2))]),
    "layout_transform": Case(
        lambda x: op.layout_transform(x, layout_index_map("NCHW", "NCHW4c")), [("n", 8, 3, 2)]
    ),
    "layout_transform_back": Case(
        lambda x: op.layout_transform(x, layout_index_map("NCHW4c", "NHWC")), [("n", 2, 3, 2, 4)]
    ),
    "layout_transform_pad": Case(
        lambda x: op.layout_transform(x, lambda a, b: (a // 4, b, a % 4), pad_value=-2.0),
        [(6, "n")],
        symbolic=False,
    ),
    "astype": Case(lambda x: op.astype(x, "int32"), [("n", 4)]),
    "expand_dims": Case(lambda x: op.expand_dims(x, 1), [("n", 4)]),
    "zeros": Case(lambda x: op.add(x, op.zeros((4,), "float32")), [("n", 4)]),
    "ones": Case(lambda x: op.multiply(x, op.ones((1, 4), "float32")), [("n", 4)]),
    "full": Case(lambda x: op.add(x, op.full((4,), 2.5, "float32")), [("n", 4)]),
    "zeros_like": Case(lambda x: op.add(x, op.zeros_like(x)), [("n", 3)]),
    "ones_like": Case(lambda x: op.subtract(x, op.ones_like(x, "float32")), [("n", 3)]),
    "full_like": Case(lambda x: op.multiply(x, op.full_like(x, 1.5)), [(2, "n")]),
    "grad.no_grad": Case(lambda x: op.add(x, op.grad.no_grad(x)), [("n", 3)]),
    # ops the importers need (torch / ONNX frontends)
    "rsqrt": Case(lambda x: op.rsqrt(x), [("n", 4)], positive=True),
    "square": Case(lambda x: op.square(x), [("n", 4)]),
    "sin": Case(lambda x: op.sin(x), [("n", 4)]),
    "cos": Case(lambda x: op.cos(x), [("n", 4)]),
    "floor": Case(lambda x: op.floor(op.multiply(x, op.full((), 3.0, "float32"))), [("n", 4)]),
    "ceil": Case(lambda x: op.ceil(op.multiply(x, op.full((), 3.0, "float32"))), [("n", 4)]),
    "round": Case(lambda x: op.round(op.multiply(x, op.full((), 3.0, "float32"))), [("n", 4)]),
    "round_half_even": Case(
        lambda x: op.round(
            op.multiply(
                op.floor(op.multiply(x, op.full((), 4.0, "float32"))), op.full((), 0.5, "float32")
            )
        ),
        [("n", 8)],
    ),
    "sign": Case(lambda x: op.sign(x), [("n", 4)]),
    "sign_int": Case(lambda x: op.sign(op.subtract(x, 2)), [("int32", ("n", 4))]),
    "floor_divide": Case(lambda x, y: op.floor_divide(x, y), [("n", 4), (4,)], positive=True),
    "floor_divide_int": Case(
        lambda x: op.floor_divide(op.subtract(x, 3), 2), [("int32", ("n", 5))]
    ),
    "floor_mod_int": Case(lambda x: op.floor_mod(op.subtract(x, 3), -3), [("int32", ("n", 5))]),
    "floor_mod": Case(lambda x, y: op.floor_mod(x, y), [("n", 4), (4,)], positive=True),
    "mod_int": Case(lambda x: op.mod(op.subtract(x, 3), -3), [("int32", ("n", 5))]),
    "mod": Case(lambda x, y: op.mod(x, y), [("n", 4), (4,)], positive=True),
    "not_equal": Case(lambda x: op.not_equal(x, op.max(x, axis=1, keepdims=True)), [("n", 4)]),
    "less": Case(lambda x, y: op.less(x, y), [("n", 4), (4,)]),
    "less_equal": Case(lambda x: op.less_equal(x, op.min(x, axis=1, keepdims=True)), [("n", 4)]),
    "greater": Case(lambda x, y: op.greater(x, y), [("n", 1, 4), (3, 1)]),
    "greater_equal": Case(lambda x: op.greater_equal(x, 0.0), [("n", 4)]),
    "logical_and": Case(
        lambda x, y: op.logical_and(op.less(x, 0.0), op.less(y, 0.0)), [("n", 4), (4,)]
    ),
    "logical_or": Case(
        lambda x, y: op.logical_or(op.less(x, 0.0), op.less(y, 0.0)), [("n", 4), (4,)]
    ),
    "logical_xor": Case(
        lambda x, y: op.logical_xor(op.less(x, 0.0), op.less(y, 0.0)), [("n", 4), ("n", 4)]
    ),
    "logical_not": Case(lambda x: op.logical_not(op.less(x, 0.0)), [("n", 4)]),
    "where": Case(lambda x, y: op.where(op.less(x, y), x, y), [("n", 4), (4,)]),
    "where_scalar": Case(lambda x: op.where(op.greater(x, 0.0), x, 0.0), [("n", 1, 4)]),
    "where_bcast": Case(
        lambda c, x, y: op.where(op.less(c, 0.0), x, y), [("n", 1), (1, 4), ("n", 4)]
    ),
    "erf_public": Case(lambda x: op.erf(x), [("n", 4)], ops=("relax.erf",)),
    "nn.silu": Case(lambda x: op.nn.silu(x), [("n", 4)]),
    "nn.gelu_tanh": Case(lambda x: op.nn.gelu_tanh(x), [("n", 4)], rtol=1e-4, atol=1e-5),
    "nn.leakyrelu": Case(lambda x: op.nn.leakyrelu(x, 0.2), [("n", 4)]),
    "nn.softplus": Case(
        lambda x: op.nn.softplus(x, beta=2.0, threshold=1.5), [("n", 6)], rtol=1e-4, atol=1e-6
    ),
    "nn.dropout": Case(lambda x: op.nn.dropout(x, 0.3), [("n", 4)]),
    "nn.group_norm": Case(
        lambda x, g, b: op.nn.group_norm(x, g, b, num_groups=2, channel_axis=1, axes=[2, 3]),
        [("n", 4, 3, 2), (4,), (4,)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.group_norm_nhwc": Case(
        lambda x, g, b: op.nn.group_norm(x, g, b, num_groups=3, channel_axis=-1, axes=[1]),
        [("n", 5, 6), (6,), (6,)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.attention": Case(
        lambda q, k, v: op.nn.attention(q, k, v),
        [("n", 5, 2, 4), ("n", 3, 2, 4), ("n", 3, 2, 6)],
        rtol=1e-4,
        atol=1e-5,
    ),
    "nn.attention_causal_bias": Case(
        lambda q, k, v, b: op.nn.attention(q, k, v, b, scale=0.3, causal_mask="TopLeft"),
        [(2, "n", 2, 4), (2, 5, 2, 4), (2, 5, 2, 3), (1, 2, "n", 5)],
        rtol=1e-4,
        atol=1e-5,
    ),
    "nn.attention_bottom_right": Case(
        lambda q, k, v: op.nn.attention(q, k, v, causal_mask="BottomRight"),
        [(1, 3, 1, 4), (1, "n", 1, 4), (1, "n", 1, 4)],
        rtol=1e-4,
        atol=1e-5,
    ),
    "squeeze": Case(lambda x: op.squeeze(x, [1, -1]), [("n", 1, 4, 1)]),
    "squeeze_all": Case(lambda x: op.squeeze(x), [(1, "n", 1, 4)]),
    "broadcast_to": Case(lambda x: op.broadcast_to(x, (2, 3, 4)), [(3, 1)], symbolic=False),
    # a symbolic target dim must be a dim of x (call_te takes output dims from its inputs)
    "broadcast_to_symbolic": Case(
        lambda x: op.broadcast_to(x, (x.struct_info.shape[0], 3, 4)), [("n", 1, 4)]
    ),
    "tile": Case(lambda x: op.tile(x, (2, 1, 3)), [("n", 2)]),
    "repeat": Case(lambda x: op.repeat(x, 2, axis=1), [("n", 3)]),
    "repeat_flat": Case(lambda x: op.repeat(x, 3), [("n", 2)]),
    "flip": Case(lambda x: op.flip(x, -1), [("n", 5)]),
    "flip_batch": Case(lambda x: op.flip(x, 0), [("n", 5)]),
    "cumsum": Case(lambda x: op.cumsum(x, axis=1), [("n", 6)]),
    "cumsum_exclusive_flat": Case(lambda x: op.cumsum(x, exclusive=True), [("n", 3)]),
    "cumsum_int": Case(lambda x: op.cumsum(x, axis=0, dtype="int64"), [("int32", ("n", 3))]),
    "nn.pad": Case(lambda x: op.nn.pad(x, [(0, 0), (1, 2), (2, 0)], 1.5), [("n", 3, 4)]),
    "nn.pad_edge": Case(lambda x: op.nn.pad(x, (0, 0, 2, 1, 0, 3), pad_mode="edge"), [("n", 3, 4)]),
    "nn.pad_reflect": Case(
        lambda x: op.nn.pad(x, (0, 0, 2, 1, 3, 3), pad_mode="reflect"), [("n", 3, 4)]
    ),
    "image.resize2d_nearest": Case(
        lambda x: op.image.resize2d(
            x,
            (6, 9),
            method="nearest_neighbor",
            coordinate_transformation_mode="asymmetric",
            rounding_method="floor",
        ),
        [("n", 2, 3, 4)],
    ),
    "image.resize2d_nearest_half": Case(
        lambda x: op.image.resize2d(
            x, (2, 7), method="nearest_neighbor", rounding_method="round_prefer_floor"
        ),
        [("n", 2, 5, 4)],
    ),
    "image.resize2d_linear": Case(lambda x: op.image.resize2d(x, (7, 3)), [("n", 2, 3, 5)]),
    "image.resize3d_linear": Case(lambda x: op.image.resize3d(x, (3, 5, 4)), [("n", 2, 3, 4, 5)]),
    "image.resize2d_align": Case(
        lambda x: op.image.resize2d(x, 8, coordinate_transformation_mode="align_corners"),
        [("n", 2, 3, 5)],
    ),
    "image.resize2d_pytorch_nhwc": Case(
        lambda x: op.image.resize2d(
            x, (1, 4), layout="NHWC", coordinate_transformation_mode="pytorch_half_pixel"
        ),
        [("n", 3, 5, 2)],
    ),
    "argmax": Case(lambda x: op.argmax(x, axis=1), [("n", 5)]),
    "argmax_keep_flat": Case(lambda x: op.argmax(x, keepdims=True), [("n", 5)]),
    "argmin": Case(lambda x: op.argmin(x, axis=0, keepdims=True), [("n", 5)]),
    "argmin_int": Case(lambda x: op.argmin(x, axis=-1), [("int32", ("n", 6))]),
    "variance": Case(lambda x: op.variance(x, axis=[1, 2]), [("n", 4, 3)], rtol=1e-4, atol=1e-6),
    "std": Case(lambda x: op.std(x, axis=-1, keepdims=True), [("n", 5)], rtol=1e-4, atol=1e-6),
    "max_keepdims": Case(lambda x: op.max(x, axis=1, keepdims=True), [("n", 4, 3)]),
    "nn.conv1d": Case(
        lambda x, w: op.nn.conv1d(x, w, strides=2, padding=(1, 2), dilation=2),
        [("n", 4, 11), (6, 4, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv1d_groups": Case(
        lambda x, w: op.nn.conv1d(x, w, padding=1, groups=2),
        [("n", 4, 7), (6, 2, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv2d_transpose": Case(
        lambda x, w: op.nn.conv2d_transpose(
            x, w, strides=2, padding=(1, 0, 0, 1), output_padding=(1, 0)
        ),
        [("n", 4, 3, 5), (4, 3, 3, 2)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv2d_transpose_groups_dilation": Case(
        lambda x, w: op.nn.conv2d_transpose(
            x, w, strides=(1, 2), padding=1, dilation=(2, 1), groups=2
        ),
        [("n", 4, 4, 3), (4, 3, 3, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv2d_transpose_pad_past_kernel": Case(
        lambda x, w: op.nn.conv2d_transpose(x, w, strides=2, padding=(2, 0, 1, 2)),
        [("n", 2, 5, 4), (2, 3, 2, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv2d_transpose_oihw": Case(
        lambda x, w: op.nn.conv2d_transpose(x, w, strides=2, groups=2, kernel_layout="OIHW"),
        [("n", 4, 3, 2), (3, 4, 2, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv1d_transpose": Case(
        lambda x, w: op.nn.conv1d_transpose(
            x, w, strides=2, padding=(1, 0), output_padding=1, dilation=2, groups=2
        ),
        [("n", 4, 5), (4, 3, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv1d_transpose_nwc_oiw": Case(
        lambda x, w: op.nn.conv1d_transpose(x, w, 3, 1, data_layout="NWC", kernel_layout="OIW"),
        [("n", 4, 2), (3, 2, 2)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv3d": Case(
        lambda x, w: op.nn.conv3d(x, w, (1, 2, 1), (1, 0, 2, 0, 1, 1), (2, 1, 1), groups=2),
        [("n", 4, 6, 5, 4), (6, 2, 2, 2, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv3d_ndhwc_out_blocked": Case(
        lambda x, w: op.nn.conv3d(
            x, w, padding=1, data_layout="NDHWC", kernel_layout="DHWIO", out_layout="NCDHW2c"
        ),
        [("n", 3, 4, 3, 2), (2, 3, 2, 2, 4)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "tril": Case(lambda x: op.tril(x, 1), [(2, "n", 5)]),
    "triu_negative_k": Case(lambda x: op.triu(x, k=-1), [("n", 4)]),
    "triu_int": Case(lambda x: op.triu(x), [("int32", (4, "n"))]),
    "nn.max_pool2d_out_nhwc": Case(
        lambda x: op.nn.max_pool2d(x, 3, 2, 1, out_layout="NHWC"), [("n", 2, 7, 8)]
    ),
    "nn.avg_pool2d_out_nchwc": Case(
        lambda x: op.nn.avg_pool2d(x, 2, 1, layout="NHWC", out_layout="NCHW2c"), [("n", 5, 6, 4)]
    ),
    "nn.adaptive_avg_pool2d_out_nhwc": Case(
        lambda x: op.nn.adaptive_avg_pool2d(x, (3, 2), out_layout="NHWC"), [("n", 2, 7, 5)]
    ),
    "strided_slice_assume_inbound": Case(
        lambda x: op.strided_slice(x, [1], [1], [3], assume_inbound=True), [("n", 4)]
    ),
    "nn.max_pool1d": Case(lambda x: op.nn.max_pool1d(x, 3, 2, 1), [("n", 3, 9)]),
    "nn.max_pool1d_ceil": Case(lambda x: op.nn.max_pool1d(x, 2, 2, ceil_mode=True), [("n", 3, 7)]),
    "nn.avg_pool1d": Case(
        lambda x: op.nn.avg_pool1d(x, 3, 1, (1, 2), count_include_pad=True), [("n", 2, 6)]
    ),
    "nn.adaptive_avg_pool1d": Case(lambda x: op.nn.adaptive_avg_pool1d(x, 3), [("n", 2, 7)]),
    "einsum_matmul": Case(
        lambda x, y: op.einsum([x, y], "ij,jk->ik"), [("n", 4), (4, 3)], rtol=1e-4
    ),
    "einsum_batched": Case(
        lambda x, y: op.einsum((x, y), "bhqd,bhkd->bhqk"),
        [("n", 2, 3, 4), ("n", 2, 5, 4)],
        rtol=1e-4,
    ),
    "einsum_implicit_ellipsis": Case(
        lambda x, y: op.einsum([x, y], "...ij,...jk"), [("n", 2, 3), (1, 3, 4)], rtol=1e-4
    ),
    "einsum_three": Case(
        lambda x, y, z: op.einsum([x, y, z], "i,ij,j->"), [(3,), (3, "n"), ("n",)], rtol=1e-4
    ),
    "einsum_transpose_diag": Case(lambda x: op.einsum([x], "iij->ji"), [(3, 3, "n")]),
    # backward ops added with the gradient rules (relax/op/grad.py)
    "broadcast_like": Case(lambda x, y: op.grad.broadcast_like(x, y), [(1, 4), ("n", 4)]),
    "erf": Case(lambda x: op.grad.erf(x), [("n", 4)]),
    "nn.relu_grad": Case(lambda x, g: op.grad.relu_grad(x, g), [("n", 4), ("n", 4)]),
    "nn.conv2d_backward_data": Case(
        lambda g, w, x: op.grad.conv2d_backward_data(
            g, w, x.struct_info.shape, strides=(2, 2), padding=(1, 0, 2, 1), dilation=(1, 2)
        ),
        [("n", 6, 5, 4), (6, 4, 3, 2), ("n", 4, 9, 8)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv2d_backward_weight": Case(
        lambda g, x, w: op.grad.conv2d_backward_weight(
            g, x, w.struct_info.shape, strides=(2, 2), padding=(1, 0, 2, 1), dilation=(1, 2)
        ),
        [("n", 6, 5, 4), ("n", 4, 9, 8), (6, 4, 3, 2)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.max_pool2d_grad": Case(
        lambda g, x: op.grad.max_pool2d_grad(g, x, **dict(op.nn.max_pool2d(x, 3, 2, 1).attrs)),
        [("n", 2, 4, 4), ("n", 2, 7, 8)],
    ),
    "nn.avg_pool2d_grad": Case(
        lambda g, x: op.grad.avg_pool2d_grad(
            g, x, **dict(op.nn.avg_pool2d(x, (2, 3), 1, (1, 1), count_include_pad=True).attrs)
        ),
        [("n", 2, 6, 6), ("n", 2, 5, 6)],
    ),
    # targets in [-1, 7): class indices of 7 classes, -1 the ignore_index
    "nn.nll_loss": Case(
        lambda x, t, w: op.nn.nll_loss(x, t, w, "mean", -1),
        [("n", 7), ("int32", ("n",)), (7,)],
        positive=True,
    ),
    "nn.nll_loss_none": Case(
        lambda x, t: op.nn.nll_loss(x, t, None, "none", -1), [("n", 7, 2), ("int32", ("n", 2))]
    ),
    "grad.nll_loss_backward": Case(
        lambda g, x, t: op.grad.nll_loss_backward(g, x, t, None, "none", -1),
        [("n",), ("n", 7), ("int32", ("n",))],
    ),
    "nn.cross_entropy_with_logits": Case(
        lambda x, y: op.nn.cross_entropy_with_logits(x, y), [("n", 4), ("n", 4)]
    ),
    "take_backward": Case(
        lambda g, i, x: op.grad.take_backward(g, i, x.struct_info.shape, 0),
        [(4, "n"), ("int32", (4,)), (5, "n")],
    ),
    "nn.sparse_dense_bsr": Case(  # W: 3 block rows of 2x2 blocks over 8 columns, one row empty
        lambda x: op.nn.sparse_dense(
            x,
            relax.const(np.arange(16, dtype="float32").reshape(4, 2, 2) / 8 - 1),
            relax.const(np.array([0, 3, 1, 2], "int32")),
            relax.const(np.array([0, 2, 2, 4], "int32")),
            max_row_nnz=2,
        ),
        [(5, 8)],
        symbolic=False,
        rtol=1e-5,
    ),
    "nn.sparse_dense_csr_lhs": Case(
        lambda x: op.nn.sparse_dense(
            x,
            relax.const(np.array([0.5, -1.0, 2.0], "float32")),
            relax.const(np.array([1, 0, 3], "int32")),
            relax.const(np.array([0, 2, 2, 3], "int32")),
            sparse_lhs=True,
        ),
        [(5, 4)],
        symbolic=False,
        rtol=1e-5,
    ),
    "nn.conv3d_transpose": Case(
        lambda x, w: op.nn.conv3d_transpose(
            x, w, (2, 1, 2), (1, 0, 0, 0, 1, 1), (1, 0, 0), (1, 2, 1), groups=2
        ),
        [("n", 4, 3, 4, 3), (4, 3, 2, 2, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "nn.conv3d_transpose_ndhwc": Case(
        lambda x, w: op.nn.conv3d_transpose(x, w, 2, 1, data_layout="NDHWC"),
        [("n", 3, 2, 4, 2), (2, 3, 2, 2, 3)],
        rtol=1e-4,
        atol=1e-4,
    ),
    "collapse_sum_to": Case(lambda x: op.collapse_sum_to(x, (3, 1)), [("n", 3, 4)]),
    "collapse_sum_like": Case(lambda x, y: op.collapse_sum_like(x, y), [("n", 3, 4), (1, 4)]),
    "nn.prelu": Case(lambda x, a: op.nn.prelu(x, a), [("n", 3, 4), (3,)]),
    "nn.prelu_last_axis": Case(lambda x, a: op.nn.prelu(x, a, axis=-1), [("n", 4), (4,)]),
    "nn.rms_norm": Case(
        lambda x, w: op.nn.rms_norm(x, w, axes=[-2, -1]), [("n", 3, 4), (3, 4)], rtol=1e-4
    ),
    "multinomial_from_uniform": Case(
        lambda p, u, i: op.multinomial_from_uniform(p, u, i),
        [("n", 5), (4, 1), ("int64", (4, 1))],
    ),
}


def _arg_specs(case: Case, n_var: Any) -> list[tuple[str, tuple]]:
    specs = []
    for s in case.shapes:
        dtype, shape = (
            (s[0], s[1]) if s and isinstance(s[0], str) and s[0] != "n" else (case.dtype, s)
        )
        specs.append((dtype, tuple(n_var if d == "n" else d for d in shape)))
    return specs


def _build(case: Case, symbolic: bool) -> tuple[relax.Function, relax.Var]:
    n = tir.Var("n", "int64") if symbolic else N
    params = [
        relax.Var(f"a{k}", relax.TensorStructInfo(shape, dtype))
        for k, (dtype, shape) in enumerate(_arg_specs(case, n))
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(case.build(*params))
        bb.emit_func_output(out)
    return bb.get(), out


def _inputs(case: Case, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for dtype, shape in _arg_specs(case, N):
        if dtype.startswith("int"):
            arrays.append(rng.integers(-1, 7, shape).astype(dtype))  # some out of range: clipped
        elif case.positive:
            arrays.append(rng.uniform(0.5, 2.0, shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def _concrete_shapes(sinfo: Any) -> list[tuple]:
    n_vars = {}
    fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else (sinfo,)
    out = []
    for s in fields:
        assert isinstance(s, TensorStructInfo) and s.shape is not None, f"shape not inferred: {s}"
        env = {}
        for d in s.shape:
            from minitvm.relax.struct_info import shape_vars

            for v in shape_vars(TensorStructInfo((d,), "float32")):
                env[v] = N
        n_vars.update(env)
        out.append(tuple(eval_dim(d, env) for d in s.shape))
    return out


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, tuple) else [x]


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_shape_rule_and_legalization_match_numpy(name: str, symbolic: bool) -> None:
    case = CASES[name]
    if symbolic and not case.symbolic:
        pytest.skip("static-only case")
    mod, out_var = _build(case, symbolic)
    inputs = _inputs(case)
    expected = _as_list(evaluate(mod, *inputs))  # numpy references from the op table
    # the shape rule (possibly symbolic) agrees with what numpy produced
    assert _concrete_shapes(out_var.struct_info) == [e.shape for e in expected]
    # the TE definition, compiled, agrees with the numpy reference
    legal = relax.transform.LegalizeOps()(mod)
    got = _as_list(evaluate(legal, *inputs))
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)


def test_every_table_op_has_a_case_or_is_structural() -> None:
    from minitvm.relax.op import OP_TABLE

    covered = set()
    for case in CASES.values():
        mod, _ = _build(case, False)
        for b in mod["main"].body.blocks[0].bindings:
            if hasattr(b.value, "op") and hasattr(b.value.op, "name"):
                covered.add(b.value.op.name)
    structural = set(STRUCTURAL_OPS)
    missing = set(OP_TABLE) - covered - structural
    assert not missing, f"ops without a numpy test case: {sorted(missing)}"


def test_every_table_op_has_te_numpy_and_grad_slot() -> None:
    from minitvm.relax.op import OP_TABLE

    for name, row in OP_TABLE.items():
        assert row.name == name
        assert row.grad is None or callable(row.grad)  # gradient rules: relax/op/grad.py
        if name not in STRUCTURAL_OPS:
            assert callable(row.te) and callable(row.numpy), name
