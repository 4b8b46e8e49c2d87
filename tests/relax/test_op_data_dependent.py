"""relax.op.nonzero, relax.op.unique and relax.op.vision.all_class_non_max_suppression: result
shapes read from the data by checked VM builtins, named with match_cast, then used by compiled
kernels. Oracles: numpy, a first-occurrence loop written here, onnx's reference evaluator."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import ArgumentError, DTypeError, ShapeError
from minitvm.relax import op as R

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings
from hypothesis import strategies as st


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(np.asarray(a)) for a in args])
    return [o.numpy() for o in out] if isinstance(out, list | tuple) else out.numpy()


# ------------------------------------------------------------------------------------ nonzero


def _nonzero_then_transpose_and_gather(shape, dtype):
    """nonzero -> match_cast (rank, n) -> permute_dims -> take of the flat x at the flat
    positions: the last two are TE kernels compiled over the symbolic n."""
    x = relax.Var("x", relax.TensorStructInfo(shape, dtype))
    strides = np.asarray([int(np.prod(shape[i + 1 :])) for i in range(len(shape))], "int64")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            n = tir.Var("n", "int64")
            idx = bb.match_cast(
                bb.emit(R.nonzero(x)), relax.TensorStructInfo((len(shape), n), "int64")
            )
            rows = bb.emit(R.permute_dims(idx, [1, 0]))
            flat = bb.emit(R.sum(R.multiply(rows, relax.const(strides)), axis=[1]))
            values = bb.emit(R.take(R.reshape(x, (-1,)), flat, axis=0))
            out = bb.emit_output(relax.Tuple([rows, values]))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize(
    "shape, dtype",
    [((7,), "float32"), ((3, 4), "int32"), ((2, 3, 4), "bool"), ((4, 5), "float64")],
)
def test_nonzero_feeds_symbolic_kernels_and_matches_numpy(shape, dtype):
    rng = np.random.default_rng(len(shape))
    x = (rng.integers(0, 3, shape) * rng.integers(0, 2, shape)).astype(dtype)
    mod = _nonzero_then_transpose_and_gather(shape, dtype)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for data in (x, np.zeros(shape, dtype), np.ones(shape, dtype)):  # one build, any count
        rows, values = (o.numpy() for o in vm["main"](tvm.nd.array(data)))
        np.testing.assert_array_equal(rows, np.argwhere(data))
        np.testing.assert_array_equal(values, data[data != 0])


def test_nonzero_of_a_scalar_counts_it_as_one_dim():
    x = relax.Var("x", relax.TensorStructInfo((), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(R.nonzero(x)))
    assert _run(bb.get(), np.float32(2.0)).shape == (1, 1)
    assert _run(bb.get(), np.float32(0.0)).shape == (1, 0)


# ------------------------------------------------------------------------------------- unique


def _first_occurrence_oracle(x, axis):
    """Unique by a plain loop: items (elements, or slices along axis) in order of first
    occurrence, with first index, inverse and counts."""
    items = list(x.reshape(-1)) if axis is None else list(np.moveaxis(x, axis, 0))
    keys = [np.asarray(v).tobytes() for v in items]
    seen: dict = {}
    inverse = []
    for i, key in enumerate(keys):
        if key not in seen:
            seen[key] = (len(seen), i)
        inverse.append(seen[key][0])
    order = sorted(seen.values())
    first = np.asarray([i for _, i in order], "int64")
    counts = np.bincount(np.asarray(inverse), minlength=len(order)).astype("int64")
    picked = np.stack([items[i] for i in first])
    values = picked if axis is None else np.moveaxis(picked, 0, axis)
    return values, first, np.asarray(inverse, "int64"), counts


def _unique_mod(shape, dtype, sorted_, axis):
    x = relax.Var("x", relax.TensorStructInfo(shape, dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            u = bb.emit(R.unique(x, sorted_, True, True, True, axis))
            k = tir.Var("k", "int64")
            dims = (
                (k,) if axis is None else tuple(k if i == axis else d for i, d in enumerate(shape))
            )
            values = bb.match_cast(relax.TupleGetItem(u, 0), relax.TensorStructInfo(dims, dtype))
            doubled = bb.emit(R.add(values, values))  # a kernel over the symbolic k
            out = bb.emit_output(
                relax.Tuple([doubled, *(relax.TupleGetItem(u, i) for i in (1, 2, 3))])
            )
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_unique_matches_numpy_and_first_occurrence_order(sorted_, axis):
    x = np.asarray([[2, 1, 2], [0, 3, 0], [2, 1, 2], [5, 1, 5]], "float32")
    got = _run(_unique_mod(x.shape, "float32", sorted_, axis), x)
    if sorted_:
        want = list(np.unique(x, True, True, True, axis=axis))
        want[2] = want[2].reshape(-1)
    else:
        want = list(_first_occurrence_oracle(x, axis))
    want[0] = 2 * want[0]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    # the inverse rebuilds x from the values either way
    rebuilt = np.take(got[0] / 2, got[2], axis=0 if axis is None else axis)
    np.testing.assert_array_equal(rebuilt, x.reshape(-1) if axis is None else x)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=12), st.booleans())
def test_unique_random_int_vectors_match_the_loop_oracle(values, sorted_):
    x = np.asarray(values, "int32")
    got = _run(_unique_mod(x.shape, "int32", sorted_, None), x)
    values_, first, inverse, counts = _first_occurrence_oracle(x, None)
    if sorted_:
        values_, first, inverse, counts = np.unique(x, True, True, True)
    for g, w in zip(got, (2 * values_, first, inverse, counts)):
        np.testing.assert_array_equal(g, w)


def test_unique_struct_info_follows_the_flags():
    x = relax.Var("x", relax.TensorStructInfo((4, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        only = bb.emit(R.unique(x))
        assert isinstance(only.struct_info, relax.TensorStructInfo)
        assert only.struct_info.ndim == 1 and only.struct_info.shape is None
        two = bb.emit(R.unique(x, return_counts=True, axis=1))
        fields = two.struct_info.fields
        assert len(fields) == 2 and fields[0].ndim == 2 and str(fields[1].dtype) == "int64"
        with pytest.raises(ShapeError, match="axis 2 is out of range"):
            bb.emit(R.unique(x, axis=2))
        with pytest.raises(ArgumentError, match="axis must be an int or None"):
            R.unique(x, axis="0")
        bb.emit_func_output(x)


def test_nonzero_and_unique_print_and_parse_back():
    x = relax.Var("x", relax.TensorStructInfo((4, 5), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit(R.nonzero(x))
        b = bb.emit(R.unique(x, sorted=False, return_inverse=True, axis=1))
        bb.emit_func_output(relax.Tuple([a, b]))
    mod = bb.get()
    text = mod.script()
    assert "R.nonzero(x)" in text and "R.unique(x, sorted=False" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)


def test_nms_prints_as_r_vision_and_parses_back():
    b = relax.Var("b", relax.TensorStructInfo((1, 4, 4), "float32"))
    s = relax.Var("s", relax.TensorStructInfo((1, 2, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [b, s]):
        args = [relax.const(3, "int64"), relax.const(0.5, "float32"), relax.const(0.0, "float32")]
        bb.emit_func_output(bb.emit(R.vision.all_class_non_max_suppression(b, s, *args)))
    mod = bb.get()
    text = mod.script()
    assert "R.vision.all_class_non_max_suppression(b, s" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)


# -------------------------------------------------------------------------------------- NMS


def _nms_mod(batch, boxes_n, classes, center=0):
    b = relax.Var("boxes", relax.TensorStructInfo((batch, boxes_n, 4), "float32"))
    s = relax.Var("scores", relax.TensorStructInfo((batch, classes, boxes_n), "float32"))
    lim = relax.Var("limit", relax.TensorStructInfo((1,), "int64"))
    iou = relax.Var("iou", relax.TensorStructInfo((1,), "float32"))
    floor = relax.Var("floor", relax.TensorStructInfo(None, "float32", 1))
    bb = relax.BlockBuilder()
    with bb.function("main", [b, s, lim, iou, floor]):
        both = bb.emit(
            R.vision.all_class_non_max_suppression(b, s, lim, iou, floor, center_point_box=center)
        )
        n = tir.Var("n", "int64")
        rows = bb.match_cast(relax.TupleGetItem(both, 0), relax.TensorStructInfo((n, 3), "int64"))
        bb.emit_func_output(relax.Tuple([rows, relax.TupleGetItem(both, 1)]))
    return bb.get()


def _onnx_nms(boxes, scores, limit, iou, floor, center):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    names = ["boxes", "scores", "limit", "iou"] + (["floor"] if floor.size else [])
    node = helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=center)
    types = [TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.INT64, TensorProto.FLOAT] + [
        TensorProto.FLOAT
    ]
    feeds = dict(zip(names, (boxes, scores, limit, iou, floor)))
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, t, None) for n, t in zip(names, types)],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    assert onnx is not None
    return ReferenceEvaluator(model).run(None, feeds)[0]


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_all_class_nms_matches_onnx_reference_evaluator(center, seed):
    rng = np.random.default_rng(seed)
    batch, boxes_n, classes = 2, 12, 3
    corner = rng.uniform(0, 4, (batch, boxes_n, 4)).astype("float32")  # some flipped
    scores = rng.choice([0.1, 0.5, 0.5, 0.7, 0.9], (batch, classes, boxes_n)).astype("float32")
    vm = relax.VirtualMachine(relax.build(_nms_mod(batch, boxes_n, classes, center), "llvm"))
    for limit, iou, floor in (
        (3, 0.3, np.asarray([0.4], "float32")),
        (10, 0.0, np.zeros(0, "float32")),  # an omitted score_threshold: no filtering
        (0, 0.5, np.zeros(0, "float32")),
    ):
        args = (corner, scores, np.asarray([limit]), np.asarray([iou], "float32"), floor)
        rows, count = (o.numpy() for o in vm["main"](*[tvm.nd.array(a) for a in args]))
        want = _onnx_nms(*args, center)
        np.testing.assert_array_equal(rows, want.reshape(-1, 3))
        assert count.tolist() == [want.shape[0]]


def test_all_class_nms_checks_its_arguments():
    b = relax.Var("b", relax.TensorStructInfo((1, 3, 4), "float32"))
    s = relax.Var("s", relax.TensorStructInfo((1, 2, 3), "float32"))
    lim = relax.const(np.asarray([2], "int64"))
    th = relax.const(np.asarray([0.5], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [b, s]):
        with pytest.raises(ShapeError, match="boxes has rank 2"):
            bb.emit(R.vision.all_class_non_max_suppression(R.reshape(b, (3, 4)), s, lim, th, th))
        with pytest.raises(DTypeError, match="max_output_boxes_per_class has dtype float32"):
            bb.emit(R.vision.all_class_non_max_suppression(b, s, th, th, th))
        with pytest.raises(ArgumentError, match="output_format 'tensorflow' is not supported"):
            R.vision.all_class_non_max_suppression(b, s, lim, th, th, "tensorflow")
        bb.emit_func_output(b)
    with pytest.raises(ShapeError, match="expected \\(batch, boxes, 4\\)"):
        nms = tvm.get_global_func("vm.builtin.minitvm.all_class_non_max_suppression")
        nms(np.zeros((1, 3, 4), "float32"), np.zeros((1, 2, 5), "float32"), *[np.zeros(1)] * 3)


def test_data_dependent_ops_refuse_bad_arguments_by_name():
    b = relax.Var("b", relax.TensorStructInfo((1, 3, 5), "float32"))
    s = relax.Var("s", relax.TensorStructInfo((1, 2, 3), "int32"))
    lim = relax.const(np.asarray([2], "int64"))
    th = relax.const(np.asarray([0.5], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [b, s]):
        with pytest.raises(ShapeError, match="boxes has 5 coordinates per box; ONNX uses 4"):
            bb.emit(R.vision.all_class_non_max_suppression(b, s, lim, th, th))
        with pytest.raises(DTypeError, match="scores has dtype int32; it must be float"):
            good = relax.Var("g", relax.TensorStructInfo((1, 3, 4), "float32"))
            bb.emit(R.vision.all_class_non_max_suppression(good, s, lim, th, th))
        with pytest.raises(ArgumentError, match="center_point_box is 2; use 0 or 1"):
            R.vision.all_class_non_max_suppression(b, s, lim, th, th, center_point_box=2)
        with pytest.raises(ArgumentError, match="relax.unique: sorted must be a bool"):
            R.unique(b, sorted="yes")
        bb.emit_func_output(b)
    nms = tvm.get_global_func("vm.builtin.minitvm.all_class_non_max_suppression")
    boxes, scores = np.zeros((1, 3, 4), "float32"), np.zeros((1, 2, 3), "float32")
    with pytest.raises(ShapeError, match="iou_threshold holds 2 values; it must hold one"):
        nms(boxes, scores, np.asarray([1]), np.zeros(2, "float32"), np.zeros(0, "float32"))
    unique = tvm.get_global_func("vm.builtin.minitvm.unique")
    with pytest.raises(ShapeError, match="R.unique: axis 2 is out of range for x of rank 2"):
        unique(np.zeros((2, 2)), 1, 0, 0, 0, 2)
