"""Converters from ONNX nodes to relax.op calls: one function per op_type, in `CONVERTERS`.

A converter takes the import context (`ctx`: emit, constants, known inputs, `ctx.opset`),
the node's inputs in ONNX order (None for an omitted optional input; numpy arrays for known
values, relax expressions otherwise) and its attributes as a dict, and returns the node's
output value (or a list of them). Where an op's meaning changed between opsets the converter
branches on `ctx.opset` in one place, with the opset named.
"""

from __future__ import annotations

from collections.abc import Callable

from ... import op as R
from ._affine_grid import AFFINE_GRID_CONVERTERS
from ._control import convert_if
from ._data_dependent import DATA_DEPENDENT_CONVERTERS
from ._elementwise import (
    _binary,
    _bit_cast,
    _bit_shift,
    _cast,
    _cast_like,
    _celu,
    _clip,
    _constant,
    _div,
    _dropout,
    _elu,
    _eye_like,
    _gelu,
    _hard_sigmoid,
    _hard_swish,
    _hardmax,
    _hyperbolic,
    _identity,
    _inverse_hyperbolic,
    _is_inf,
    _leaky_relu,
    _lp_normalization,
    _mean,
    _mean_variance_norm,
    _mish,
    _mod,
    _pow,
    _prelu,
    _reciprocal,
    _selu,
    _shrink,
    _softplus,
    _softsign,
    _tan,
    _thresholded_relu,
    _trilu,
    _unary,
    _variadic,
    _where,
)
from ._grid_sample import _grid_sample
from ._indexing import INDEXING_CONVERTERS
from ._manipulate import (
    _arg_reduce,
    _concat,
    _constant_of_shape,
    _cumulative,
    _depth_to_space,
    _einsum,
    _expand,
    _flatten,
    _gather,
    _gather_elements,
    _pad,
    _range,
    _reduce,
    _reduce_l1,
    _reduce_l2,
    _reduce_log_sum,
    _reduce_log_sum_exp,
    _reduce_sum_square,
    _reshape,
    _shape,
    _simple_reduce,
    _size,
    _slice,
    _space_to_depth,
    _split,
    _squeeze,
    _tile,
    _transpose,
    _unsqueeze,
)
from ._misc_ops import MISC_CONVERTERS
from ._nn import (
    _batch_norm,
    _conv,
    _conv_transpose,
    _gemm,
    _global_pool,
    _instance_norm,
    _layer_norm,
    _matmul,
    _pool,
    _softmax,
)
from ._nn_more import NN_MORE_CONVERTERS
from ._quantize import (
    _dequantize_linear,
    _dynamic_quantize_linear,
    _integer,
    _qlinear_conv,
    _qlinear_matmul,
    _quantize_linear,
)
from ._recurrent import _recurrent
from ._resize import _resize
from ._sequence import SEQUENCE_CONVERTERS
from ._signal import SIGNAL_CONVERTERS
from ._unroll import convert_loop, convert_scan

# ----------------------------------------------------------------------------- the table


def _unary_table() -> dict[str, Callable]:
    ops = {
        "Relu": R.nn.relu,
        "Sigmoid": R.sigmoid,
        "Tanh": R.tanh,
        "Exp": R.exp,
        "Log": R.log,
        "Sqrt": R.sqrt,
        "Neg": R.negative,
        "Abs": R.abs,
        "Erf": R.erf,
        "Floor": R.floor,
        "Ceil": R.ceil,
        "Round": R.round,
        "Sign": R.sign,
        "Sin": R.sin,
        "Cos": R.cos,
        "Not": R.logical_not,
        "Asin": R.asin,
        "Acos": R.acos,
        "Atan": R.atan,
        "IsNaN": R.isnan,
        "BitwiseNot": R.bitwise_not,
    }
    return {name: _unary(op) for name, op in ops.items()}


def _binary_table() -> dict[str, Callable]:
    ops = {
        "Add": R.add,
        "Sub": R.subtract,
        "Mul": R.multiply,
        "Equal": R.equal,
        "Less": R.less,
        "LessOrEqual": R.less_equal,
        "Greater": R.greater,
        "GreaterOrEqual": R.greater_equal,
        "And": R.logical_and,
        "Or": R.logical_or,
        "Xor": R.logical_xor,
        "BitwiseAnd": R.bitwise_and,
        "BitwiseOr": R.bitwise_or,
        "BitwiseXor": R.bitwise_xor,
    }
    return {name: _binary(op) for name, op in ops.items()}


CONVERTERS: dict[str, Callable] = {
    **_unary_table(),
    **_binary_table(),
    "Div": _div,
    "Pow": _pow,
    "Mod": _mod,
    "Reciprocal": _reciprocal,
    "Sum": _variadic(R.add),
    "Max": _variadic(R.maximum),
    "Min": _variadic(R.minimum),
    "Mean": _mean,
    "LeakyRelu": _leaky_relu,
    "Elu": _elu,
    "Selu": _selu,
    "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish,
    "Softplus": _softplus,
    "Softsign": _softsign,
    "Gelu": _gelu,
    "PRelu": _prelu,
    "Clip": _clip,
    "Cast": _cast,
    "CastLike": _cast_like,
    "Where": _where,
    "Identity": _identity,
    "Dropout": _dropout,
    "Constant": _constant,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "BatchNormalization": _batch_norm,
    "InstanceNormalization": _instance_norm,
    "LayerNormalization": _layer_norm,
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "LpPool": _pool("lp"),
    "QuantizeLinear": _quantize_linear,
    "DequantizeLinear": _dequantize_linear,
    "DynamicQuantizeLinear": _dynamic_quantize_linear,
    "QLinearMatMul": _qlinear_matmul,
    "QLinearConv": _qlinear_conv,
    "MatMulInteger": _integer("matmul"),
    "RNN": _recurrent("RNN"),
    "GRU": _recurrent("GRU"),
    "LSTM": _recurrent("LSTM"),
    "ConvInteger": _integer("conv"),
    "GlobalAveragePool": _global_pool(R.mean),
    "GlobalMaxPool": _global_pool(R.max),
    "Softmax": _softmax(R.nn.softmax),
    "LogSoftmax": _softmax(R.nn.log_softmax),
    "Shape": _shape,
    "Size": _size,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Split": _split,
    "Gather": _gather,
    "GatherElements": _gather_elements,
    "Slice": _slice,
    "Expand": _expand,
    "ConstantOfShape": _constant_of_shape,
    "Tile": _tile,
    "Pad": _pad,
    "Range": _range,
    "ReduceSum": _reduce(_simple_reduce(R.sum), 13),
    "ReduceMean": _reduce(_simple_reduce(R.mean), 18),
    "ReduceMax": _reduce(_simple_reduce(R.max), 18),
    "ReduceMin": _reduce(_simple_reduce(R.min), 18),
    "ReduceProd": _reduce(_simple_reduce(R.prod), 18),
    "ReduceL2": _reduce(_reduce_l2, 18),
    "ReduceSumSquare": _reduce(_reduce_sum_square, 18),
    "ReduceLogSumExp": _reduce(_reduce_log_sum_exp, 18),
    "ReduceL1": _reduce(_reduce_l1, 18),
    "ReduceLogSum": _reduce(_reduce_log_sum, 18),
    "ThresholdedRelu": _thresholded_relu,
    "Shrink": _shrink,
    "Celu": _celu,
    "Mish": _mish,
    "Tan": _tan,
    "Sinh": _hyperbolic(-1.0),
    "Cosh": _hyperbolic(1.0),
    "Trilu": _trilu,
    "Asinh": _inverse_hyperbolic("asinh"),
    "Acosh": _inverse_hyperbolic("acosh"),
    "Atanh": _inverse_hyperbolic("atanh"),
    "IsInf": _is_inf,
    "BitShift": _bit_shift,
    "Hardmax": _hardmax,
    "BitCast": _bit_cast,
    "GridSample": _grid_sample,
    "LpNormalization": _lp_normalization,
    "EyeLike": _eye_like,
    "MeanVarianceNormalization": _mean_variance_norm,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth,
    "ArgMax": _arg_reduce(R.argmax),
    "ArgMin": _arg_reduce(R.argmin),
    "CumSum": _cumulative(R.cumsum),
    "CumProd": _cumulative(R.cumprod),
    "Einsum": _einsum,
    "Resize": _resize,
    "If": convert_if,
    "Loop": convert_loop,
    "Scan": convert_scan,
    **INDEXING_CONVERTERS,
    **NN_MORE_CONVERTERS,
    **MISC_CONVERTERS,
    **SIGNAL_CONVERTERS,
    **DATA_DEPENDENT_CONVERTERS,
    **SEQUENCE_CONVERTERS,
    **AFFINE_GRID_CONVERTERS,
}

# ops whose value at import time is not a function of their inputs' values alone (control flow
# also reads the enclosing graph's values; its converters fold what is known themselves)
NEVER_FOLD = frozenset(
    {"Shape", "Size", "Constant", "Dropout", "RandomNormal", "RandomUniform", "If", "Loop", "Scan"}
)
# onnx's reference evaluator returns Unique's Y sorted even for sorted=0 (when Y is the only
# output): R.unique, which follows the spec, computes it instead
NEVER_FOLD = NEVER_FOLD | {"Unique"}
# sequences and optionals are not arrays: their converters keep known items known themselves
NEVER_FOLD = NEVER_FOLD | set(SEQUENCE_CONVERTERS)

# ops that sum many terms: float16 inputs are computed in float32 and the result rounded once,
# as ONNX Runtime and numpy do (a float16 running sum loses digits after a few hundred terms)
WIDEN_FLOAT16 = frozenset(
    {
        "MatMul",
        "Gemm",
        "Einsum",
        "Conv",
        "ConvTranspose",
        "Softmax",
        "LogSoftmax",
        "ReduceSum",
        "ReduceMean",
        "ReduceProd",
        "ReduceL1",
        "ReduceL2",
        "ReduceSumSquare",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "LayerNormalization",
        "InstanceNormalization",
        "MeanVarianceNormalization",
        "GlobalAveragePool",
        "AveragePool",
        "CumSum",
    }
)
