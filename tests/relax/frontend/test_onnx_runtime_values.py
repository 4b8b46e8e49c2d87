"""ONNX inputs that decide axes, bounds or extents but are graph inputs (known only at run
time): Reduce* axes, Slice bounds, Squeeze/Unsqueeze/Split, Pad, Tile, TopK, OneHot, Range and
Dropout's training_mode. Each model is imported and built once, then run on several values and
compared with onnxruntime: the same executable must follow the values it is given."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper

from minitvm.relax.frontend.onnx import from_onnx

_TYPES = {
    "float32": TensorProto.FLOAT,
    "int64": TensorProto.INT64,
    "int32": TensorProto.INT32,
    "bool": TensorProto.BOOL,
}
INT64_MAX = np.iinfo(np.int64).max
X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype("float32")


def _model(op, inputs, outputs=("y",), opset=18, **attrs):
    """One node of `op`; inputs are (name, dtype, shape), every output float32 unless named
    in `outputs` as (name, dtype)."""
    node = helper.make_node(
        op, [n for n, _, _ in inputs], [o if isinstance(o, str) else o[0] for o in outputs], **attrs
    )
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, _TYPES[d], s) for n, d, s in inputs],
        [
            helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
            if isinstance(o, str)
            else helper.make_tensor_value_info(o[0], _TYPES[o[1]], None)
            for o in outputs
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


class _Both:
    """One model built once by minitvm and loaded once by onnxruntime."""

    def __init__(self, model):
        self.names = [i.name for i in model.graph.input]
        self.vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
        self.sess = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )

    def ours(self, *values):
        out = self.vm["main"](*[tvm.nd.array(np.asarray(v)) for v in values])
        return [o.numpy() for o in (out if isinstance(out, list | tuple) else [out])]

    def check(self, *values, rtol=1e-5):
        want = self.sess.run(None, dict(zip(self.names, values)))
        got = self.ours(*values)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape, (values, g.shape, w.shape)
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)

    def refuses(self, *values):
        with pytest.raises(Exception):  # noqa: B017 - onnxruntime refuses them too (its own types)
            self.sess.run(None, dict(zip(self.names, values)))
        with pytest.raises(MiniTVMError):
            self.ours(*values)


def _i64(*v):
    return np.array(v, "int64")


# ----------------------------------------------------------------------------- Reduce*

REDUCE_OPS = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSumExp",
    "ReduceSumSquare",
]


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_with_runtime_axes_follows_each_value(op, keepdims):
    both = _Both(
        _model(op, [("x", "float32", [2, 3, 4]), ("axes", "int64", [2])], keepdims=keepdims)
    )
    for axes in ([0, 1], [2, 0], [-1, -3], [1, -1]):
        both.check(X, _i64(*axes))


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_runtime_axes_of_every_axis_and_one_axis(keepdims):
    every = _Both(
        _model(
            "ReduceSum", [("x", "float32", [2, 3, 4]), ("axes", "int64", [3])], keepdims=keepdims
        )
    )
    every.check(X, _i64(0, 1, 2))
    every.check(X, _i64(-1, 0, 1))
    one = _Both(
        _model(
            "ReduceMax", [("x", "float32", [2, 3, 4]), ("axes", "int64", [1])], keepdims=keepdims
        )
    )
    for axis in (0, 1, 2, -1, -2, -3):
        one.check(X, _i64(axis))


def test_reduce_runtime_axes_on_an_empty_axis_gives_the_identity():
    empty = np.zeros((2, 0, 4), "float32")
    for op in ("ReduceSum", "ReduceProd", "ReduceMax"):
        both = _Both(_model(op, [("x", "float32", [2, 0, 4]), ("axes", "int64", [1])]))
        both.check(empty, _i64(1))
        both.check(empty, _i64(2))


def test_reduce_empty_runtime_axes_follow_noop_with_empty_axes():
    for noop in (0, 1):
        model = _model(
            "ReduceSum",
            [("x", "float32", [2, 3, 4]), ("axes", "int64", [0])],
            noop_with_empty_axes=noop,
        )
        _Both(model).check(X, np.zeros(0, "int64"))


def test_reduce_runtime_axes_repeated_or_out_of_range_are_refused():
    both = _Both(_model("ReduceSum", [("x", "float32", [2, 3, 4]), ("axes", "int64", [2])]))
    for axes in ([3, 0], [0, -4]):
        both.refuses(X, _i64(*axes))
    # the spec names each axis once; onnxruntime reduces a repeated one once, minitvm refuses
    for axes in ([0, 0], [1, -2]):
        with pytest.raises(MiniTVMError, match="dims must be >= 0"):
            both.ours(X, _i64(*axes))


# ----------------------------------------------------------------------------- Slice


def _slice_model(k, with_axes=True, with_steps=True):
    inputs = [("x", "float32", [2, 3, 4]), ("starts", "int64", [k]), ("ends", "int64", [k])]
    inputs += [("axes", "int64", [k])] if with_axes else []
    inputs += [("steps", "int64", [k])] if with_steps else []
    return _Both(_model("Slice", inputs, opset=13))


def test_slice_with_runtime_bounds_clamps_as_onnx_does():
    both = _slice_model(2)
    cases = [
        ([0, 1], [2, 3], [0, 2], [1, 1]),
        ([-1, 0], [-100, INT64_MAX], [1, 2], [-1, 2]),  # negative step through index 0
        ([10, -10], [INT64_MAX, 10], [2, 0], [1, 1]),  # start past the end: empty
        ([3, 1], [0, 100], [-1, -2], [-2, 1]),  # negative axes and steps
        ([-INT64_MAX, 0], [INT64_MAX, 1], [0, 1], [1, 1]),
        ([100, 2], [-100, 0], [2, 1], [-1, -1]),  # start clamped to dim-1 for a negative step
    ]
    for starts, ends, axes, steps in cases:
        both.check(X, _i64(*starts), _i64(*ends), _i64(*axes), _i64(*steps))


def test_slice_runtime_bounds_without_axes_or_steps():
    both = _slice_model(3, with_axes=False, with_steps=False)
    both.check(X, _i64(0, 1, 1), _i64(2, 3, -1))
    both.check(X, _i64(-1, -2, 0), _i64(INT64_MAX, INT64_MAX, 2))


def test_slice_runtime_axes_repeated_or_zero_step_are_refused():
    both = _slice_model(2)
    both.refuses(X, _i64(0, 0), _i64(1, 1), _i64(1, -2), _i64(1, 1))
    both.refuses(X, _i64(0, 0), _i64(1, 1), _i64(0, 1), _i64(1, 0))


# ----------------------------------------------------------------------------- Squeeze, Split


def test_unsqueeze_with_runtime_axes():
    both = _Both(_model("Unsqueeze", [("x", "float32", [2, 3, 4]), ("axes", "int64", [2])]))
    for axes in ([0, 1], [4, 0], [-1, 2], [1, -5], [3, 2]):
        both.check(X, _i64(*axes))
    both.refuses(X, _i64(5, 0))


def test_squeeze_with_runtime_axes():
    x = np.random.default_rng(1).standard_normal((1, 3, 1, 1)).astype("float32")
    both = _Both(_model("Squeeze", [("x", "float32", [1, 3, 1, 1]), ("axes", "int64", [2])]))
    for axes in ([0, 2], [-1, 0], [2, 3], [-2, -4]):
        both.check(x, _i64(*axes))
    both.refuses(x, _i64(0, 1))  # axis 1 has 3 elements


def test_split_with_runtime_sizes():
    both = _Both(
        _model(
            "Split",
            [("x", "float32", [2, 6, 4]), ("split", "int64", [3])],
            outputs=("a", "b", "c"),
            axis=1,
        )
    )
    x = np.random.default_rng(2).standard_normal((2, 6, 4)).astype("float32")
    for sizes in ([1, 2, 3], [6, 0, 0], [0, 3, 3], [2, 2, 2]):
        both.check(x, _i64(*sizes))
    both.refuses(x, _i64(1, 1, 1))  # does not add up to 6


# ----------------------------------------------------------------------------- Pad, Tile


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_with_runtime_pads(mode):
    both = _Both(_model("Pad", [("x", "float32", [2, 3, 4]), ("pads", "int64", [6])], mode=mode))
    for pads in ([0, 1, 2, 1, 0, 3], [1, 0, 0, 0, 2, 1], [0, 0, 0, 0, 0, 0], [0, -1, 1, 1, 1, -2]):
        both.check(X, _i64(*pads))


def test_pad_with_runtime_pads_axes_and_fill():
    both = _Both(
        _model(
            "Pad",
            [
                ("x", "float32", [2, 3, 4]),
                ("pads", "int64", [4]),
                ("value", "float32", []),
                ("axes", "int64", [2]),
            ],
        )
    )
    for pads, axes, value in (
        ([1, 2, 0, 1], [0, 2], 7.5),
        ([0, 1, 3, 0], [-1, 1], -1.0),
        ([2, 0, 0, 2], [1, -3], 0.0),
    ):
        both.check(X, _i64(*pads), np.array(value, "float32"), _i64(*axes))


def test_tile_with_runtime_repeats():
    both = _Both(_model("Tile", [("x", "float32", [2, 3, 4]), ("repeats", "int64", [3])]))
    for repeats in ([1, 1, 1], [2, 1, 3], [1, 0, 2], [3, 2, 1]):
        both.check(X, _i64(*repeats))


# ----------------------------------------------------------------------------- TopK, OneHot, Range


@pytest.mark.parametrize("largest", [0, 1])
def test_topk_with_runtime_k(largest):
    x = np.array([[3, 1, 3, 2, 5, 1], [0, 0, 4, 4, 1, 2]], "float32")  # ties pick lower index
    both = _Both(
        _model(
            "TopK",
            [("x", "float32", [2, 6]), ("k", "int64", [1])],
            outputs=("values", ("indices", "int64")),
            largest=largest,
        )
    )
    for k in (1, 3, 6, 0):
        both.check(x, _i64(k))
    both.refuses(x, _i64(7))


def test_one_hot_with_runtime_depth():
    indices = np.array([[0, 2, -1], [5, -4, 1]], "int64")
    both = _Both(
        _model(
            "OneHot",
            [("i", "int64", [2, 3]), ("depth", "int64", []), ("values", "float32", [2])],
            axis=1,
        )
    )
    for depth in (3, 4, 6):
        both.check(indices, np.array(depth, "int64"), np.array([-1, 2], "float32"))


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
def test_range_with_runtime_bounds(dtype):
    both = _Both(
        _model(
            "Range",
            [("start", dtype, []), ("limit", dtype, []), ("delta", dtype, [])],
            outputs=(("y", dtype),),
            opset=11,
        )
    )
    for start, limit, delta in ((0, 5, 1), (10, 1, -3), (2, 2, 1), (5, 0, 1), (-3, 7, 4)):
        both.check(*(np.array(v, dtype) for v in (start, limit, delta)))
    if dtype == "float32":
        both.check(*(np.array(v, dtype) for v in (0.5, 2.25, 0.5)))


# ----------------------------------------------------------------------------- Dropout


def test_dropout_with_runtime_training_mode():
    both = _Both(
        _model(
            "Dropout",
            [("x", "float32", [2, 3, 4]), ("r", "float32", []), ("t", "bool", [])],
            outputs=("y", ("mask", "bool")),
            opset=13,
        )
    )
    ratio, training = np.array(0.5, "float32"), np.array(True)
    both.check(X, ratio, np.array(False))
    both.check(X, np.array(0.0, "float32"), training)  # ratio 0: nothing is dropped
    with pytest.raises(MiniTVMError, match="dims must be >= 0"):
        both.ours(X, ratio, training)  # random numbers onnxruntime's would not match


# ----------------------------------------------------------------------------- symbolic input dims


def test_runtime_values_on_an_input_with_symbolic_dims():
    """The input's dims are named (not fixed): dims and values are both read at run time."""
    x = np.random.default_rng(3).standard_normal((3, 5, 2)).astype("float32")
    dims = ["n", 5, "m"]
    reduce = _Both(
        _model("ReduceSum", [("x", "float32", dims), ("axes", "int64", [2])], keepdims=0)
    )
    for axes in ([0, 2], [1, -1], [-3, 1]):
        reduce.check(x, _i64(*axes))
        reduce.check(x[:2, :, :1], _i64(*axes))
    pad = _Both(_model("Pad", [("x", "float32", dims), ("pads", "int64", [6])], mode="edge"))
    pad.check(x, _i64(1, 0, 2, 0, 1, 1))
    pad.check(x[:2], _i64(0, -1, 0, 2, 0, 1))
    sliced = _slice_model_of(dims)
    sliced.check(x, _i64(1, -2), _i64(INT64_MAX, 0), _i64(0, 1), _i64(1, -1))
    sliced.check(x[:1, :, :1], _i64(-5, 4), _i64(5, -INT64_MAX), _i64(0, -2), _i64(2, -2))


def _slice_model_of(dims):
    inputs = [("x", "float32", dims)] + [(n, "int64", [2]) for n in ("s", "e", "a", "p")]
    return _Both(_model("Slice", inputs, opset=13))


def test_runtime_axes_of_unknown_length_are_refused_at_import():
    from minitvm.error import OpAttributeUnImplemented

    model = _model("ReduceSum", [("x", "float32", [2, 3, 4]), ("axes", "int64", ["k"])])
    with pytest.raises(OpAttributeUnImplemented, match="input 'axes' is computed at run time"):
        from_onnx(model)
    with pytest.raises(OpAttributeUnImplemented, match="input 'split' is computed at run time"):
        from_onnx(
            _model(
                "Split",
                [("x", "float32", [6]), ("split", "int64", ["k"])],
                outputs=("a", "b"),
            )
        )
