"""ONNX ops whose output shape depends on input values (NonZero, Unique, Compress with a
run-time condition, NonMaxSuppression): each model is built once and run on several inputs,
compared with onnxruntime; the results feed later ops compiled over symbolic dims."""

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


def _model(nodes, inputs, outputs, opset=13):
    """A graph of `nodes`; inputs and outputs are (name, dtype, shape or None)."""
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, _TYPES[d], s) for n, d, s in inputs],
        [helper.make_tensor_value_info(n, _TYPES[d], s) for n, d, s in outputs],
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

    def check(self, *values):
        want = self.sess.run(None, dict(zip(self.names, values)))
        out = self.vm["main"](*[tvm.nd.array(np.asarray(v)) for v in values])
        got = [o.numpy() for o in (out if isinstance(out, list | tuple) else [out])]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape)
            np.testing.assert_array_equal(g, w)


RNG = np.random.default_rng(0)


def _sparse(shape, dtype="float32"):
    return (RNG.integers(-2, 3, shape) * RNG.integers(0, 2, shape)).astype(dtype)


@pytest.mark.parametrize("shape", [(6,), (3, 4), ("N", 5), (2, 3, 4)])
def test_nonzero_transpose_gather_nd_matches_onnxruntime(shape):
    """NonZero -> Transpose -> GatherND: the common way to pick the nonzero values."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["idx"]),
        helper.make_node("Transpose", ["idx"], ["rows"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "rows"], ["y"]),
    ]
    rank = len(shape)
    model = _model(
        nodes,
        [("x", "float32", list(shape))],
        [("idx", "int64", [rank, None]), ("y", "float32", [None])],
    )
    both = _Both(model)
    concrete = tuple(4 if d == "N" else d for d in shape)
    for x in (_sparse(concrete), np.zeros(concrete, "float32"), np.ones(concrete, "float32")):
        both.check(x)
    if "N" in shape:
        both.check(_sparse((7, *concrete[1:])))  # the same executable, another N


@pytest.mark.parametrize("dtype", ["bool", "int32"])
def test_nonzero_of_other_dtypes(dtype):
    model = _model(
        [helper.make_node("NonZero", ["x"], ["y"])],
        [("x", dtype, [3, 5])],
        [("y", "int64", None)],
    )
    _Both(model).check(_sparse((3, 5), dtype))


@pytest.mark.parametrize("sorted_", [0, 1])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_unique_all_outputs_match_onnxruntime(sorted_, axis):
    attrs = {"sorted": sorted_} if axis is None else {"sorted": sorted_, "axis": axis}
    node = helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], **attrs)
    outs = [("y", "float32", None)] + [(n, "int64", None) for n in ("indices", "inverse", "counts")]
    both = _Both(_model([node], [("x", "float32", [4, 3])], outs))
    x = np.asarray([[2, 1, 2], [0, 3, 0], [2, 1, 2], [5, 1, 5]], "float32")
    both.check(x)
    both.check(RNG.integers(0, 2, (4, 3)).astype("float32"))


def test_unique_values_feed_a_later_kernel():
    """Y alone with sorted=0 (first-occurrence order), then doubled by a compiled Add."""
    nodes = [
        helper.make_node("Unique", ["x"], ["u"], sorted=0),
        helper.make_node("Add", ["u", "u"], ["y"]),
    ]
    both = _Both(_model(nodes, [("x", "int64", ["N"])], [("y", "int64", None)]))
    both.check(np.asarray([5, 3, 5, 1, 3, 9], "int64"))
    both.check(np.asarray([7], "int64"))


@pytest.mark.parametrize(
    "shape, cond_len, axis",
    [
        ((3, 4), 3, 0),
        ((3, 4), 4, 1),
        ((3, 4), 2, -1),  # shorter: the rest of the axis is dropped
        ((3, 4), 5, 0),  # longer: the extra entries are ignored (onnxruntime)
        ((3, 4), 7, None),  # flattened
        (("N", 4), "M", 0),  # symbolic lengths on both sides
    ],
)
def test_compress_with_run_time_condition_matches_onnxruntime(shape, cond_len, axis):
    attrs = {} if axis is None else {"axis": axis}
    nodes = [
        helper.make_node("Compress", ["x", "c"], ["t"], **attrs),
        helper.make_node("Neg", ["t"], ["y"]),
    ]
    model = _model(
        nodes,
        [("x", "float32", list(shape)), ("c", "bool", [cond_len])],
        [("y", "float32", None)],
        opset=11,
    )
    both = _Both(model)
    x_shape = tuple(3 if d == "N" else d for d in shape)
    n = 3 if cond_len == "M" else cond_len
    x = RNG.standard_normal(x_shape).astype("float32")
    for c in (RNG.integers(0, 2, n).astype(bool), np.ones(n, bool), np.zeros(n, bool)):
        both.check(x, c)
    if cond_len == "M":
        both.check(RNG.standard_normal((5, 4)).astype("float32"), np.asarray([1, 0, 1, 1], bool))
        both.check(RNG.standard_normal((2, 4)).astype("float32"), np.asarray([0, 1, 0, 1], bool))


def _nms_model(center, with_floor=True, limit_input=True):
    names = ["boxes", "scores", "limit" if limit_input else "", "iou"]
    names += ["floor"] if with_floor else []
    nodes = [
        helper.make_node("NonMaxSuppression", names, ["sel"], center_point_box=center),
        helper.make_node("Gather", ["sel", "two"], ["box"], axis=1),  # the box column
    ]
    inputs = [("boxes", "float32", [2, 10, 4]), ("scores", "float32", [2, 3, 10])]
    inputs += [("limit", "int64", [1])] if limit_input else []
    inputs += [("iou", "float32", [1])] + ([("floor", "float32", [1])] if with_floor else [])
    model = _model(nodes, inputs, [("sel", "int64", None), ("box", "int64", None)], opset=11)
    model.graph.initializer.append(helper.make_tensor("two", TensorProto.INT64, [], [2]))
    return model


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("with_floor", [True, False])
def test_non_max_suppression_matches_onnxruntime(center, with_floor):
    both = _Both(_nms_model(center, with_floor))
    for seed in range(3):
        rng = np.random.default_rng(seed)
        boxes = rng.uniform(0, 4, (2, 10, 4)).astype("float32")
        scores = rng.choice([0.2, 0.5, 0.5, 0.8], (2, 3, 10)).astype("float32")  # ties
        for limit, iou, floor in ((3, 0.3, 0.4), (20, 0.0, 0.0), (0, 0.5, 0.1)):
            args = [boxes, scores, np.asarray([limit]), np.asarray([iou], "float32")]
            both.check(*args, *([np.asarray([floor], "float32")] if with_floor else []))


def test_non_max_suppression_without_a_limit_selects_nothing():
    """An omitted max_output_boxes_per_class means 0 boxes per class (ONNX)."""
    both = _Both(_nms_model(0, with_floor=False, limit_input=False))
    boxes = RNG.uniform(0, 4, (2, 10, 4)).astype("float32")
    both.check(boxes, RNG.uniform(0, 1, (2, 3, 10)).astype("float32"), np.asarray([0.5], "float32"))


def test_unique_with_bad_sorted_attribute_is_refused():
    node = helper.make_node("Unique", ["x"], ["y"], sorted=2)
    model = _model([node], [("x", "float32", [4])], [("y", "float32", None)])
    with pytest.raises(MiniTVMError, match="Unique.*sorted.*2.*0 or 1"):
        from_onnx(model)


def test_compress_with_a_2d_run_time_condition_is_refused():
    node = helper.make_node("Compress", ["x", "c"], ["y"], axis=0)
    model = _model(
        [node], [("x", "float32", [3, 4]), ("c", "bool", [3, 1])], [("y", "float32", None)]
    )
    with pytest.raises(MiniTVMError, match="Compress.*'condition' has rank 2; it must be 1-d"):
        from_onnx(model)
