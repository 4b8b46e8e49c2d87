"""from_onnx on inputs fed at run time that used to be refused: RNN/GRU/LSTM sequence_lens
(against onnxruntime), training Dropout with a seed (against ONNX's reference evaluator, whose
draw it reproduces) and MaxUnpool's output_shape (checked by the VM)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError
from minitvm.relax.frontend.onnx import from_onnx

F32 = TensorProto.FLOAT


def _model(nodes, inputs, outputs, opset=17):
    """outputs: names of float outputs, or {name: onnx type}."""
    types = outputs if isinstance(outputs, dict) else dict.fromkeys(outputs, F32)
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in types.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model, feeds, n_out):
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(v) for v in feeds.values()])
    return [out.numpy()] if n_out == 1 else [out[i].numpy() for i in range(n_out)]


# ----------------------------------------------------------------------------- sequence_lens


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_sequence_lens_matches_onnxruntime(kind, direction):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(0)
    gates, hidden, size, steps, dirs = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind], 3, 4, 4, 1
    dirs = 2 if direction == "bidirectional" else 1
    lens = np.array([4, 2, 0], np.int32)  # full, short and empty sequences
    batch = len(lens)
    feeds = {
        "X": rng.standard_normal((steps, batch, size)).astype(np.float32),
        "W": rng.standard_normal((dirs, gates * hidden, size)).astype(np.float32),
        "R": rng.standard_normal((dirs, gates * hidden, hidden)).astype(np.float32),
        "B": rng.standard_normal((dirs, 2 * gates * hidden)).astype(np.float32),
        "L": lens,
        "H0": rng.standard_normal((dirs, batch, hidden)).astype(np.float32),
    }
    outputs = ["Y", "Y_h"]
    if kind == "LSTM":
        feeds["C0"] = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
        outputs.append("Y_c")
    node = helper.make_node(kind, list(feeds), outputs, hidden_size=hidden, direction=direction)
    types = {n: (TensorProto.INT32 if n == "L" else F32, v.shape) for n, v in feeds.items()}
    model = _model([node], types, outputs, opset=14)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    for got, expected in zip(_run(model, feeds, len(outputs)), want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- Dropout


def _dropout_model(seed):
    attrs = {} if seed is None else {"seed": seed}
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], **attrs)
    inputs = {"x": (F32, [3, 4, 5]), "r": (F32, []), "t": (TensorProto.BOOL, [])}
    return _model([node], inputs, {"y": F32, "mask": TensorProto.BOOL}, opset=13)


@pytest.mark.parametrize(("ratio", "training"), [(0.75, True), (0.5, True), (0.3, False)])
def test_training_dropout_with_a_seed_matches_onnx_reference(ratio, training):
    from onnx.reference import ReferenceEvaluator

    model = _dropout_model(seed=7)
    feeds = {
        "x": np.random.default_rng(1).standard_normal((3, 4, 5)).astype(np.float32),
        "r": np.array(ratio, np.float32),
        "t": np.array(training),
    }
    want = ReferenceEvaluator(model).run(None, feeds)
    got = _run(model, feeds, 2)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


def test_training_dropout_without_a_seed_is_refused_at_run_time():
    """No draw can be reproduced: the VM refuses the call (its message is the shape check's)."""
    model = _dropout_model(seed=None)
    feeds = {
        "x": np.ones((3, 4, 5), np.float32),
        "r": np.array(0.5, np.float32),
        "t": np.array(True),
    }
    with pytest.raises(MiniTVMError, match="dims must be >= 0"):
        _run(model, feeds, 2)
    feeds["t"] = np.array(False)  # inference: the identity, every element kept
    y, mask = _run(model, feeds, 2)
    np.testing.assert_array_equal(y, feeds["x"])
    assert mask.all()


# ----------------------------------------------------------------------------- MaxUnpool


def _unpool_model():
    node = helper.make_node(
        "MaxUnpool", ["x", "i", "shape"], ["y"], kernel_shape=[2, 2], strides=[2, 2]
    )
    inputs = {
        "x": (F32, [1, 1, 2, 2]),
        "i": (TensorProto.INT64, [1, 1, 2, 2]),
        "shape": (TensorProto.INT64, [4]),
    }
    return _model([node], inputs, ["y"], opset=11)


def test_max_unpool_output_shape_at_run_time_equal_to_default_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    model = _unpool_model()
    feeds = {
        "x": np.array([[[[5, 6], [7, 8]]]], np.float32),
        "i": np.array([[[[5, 7], [13, 15]]]], np.int64),
        "shape": np.array([1, 1, 4, 4], np.int64),
    }
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(_run(model, feeds, 1)[0], sess.run(None, feeds)[0])


def test_max_unpool_output_shape_at_run_time_other_than_default_is_refused():
    """onnxruntime and ONNX's reference disagree on what I indexes then: the VM refuses."""
    model = _unpool_model()
    feeds = {
        "x": np.array([[[[5, 6], [7, 8]]]], np.float32),
        "i": np.array([[[[5, 7], [13, 15]]]], np.int64),
        "shape": np.array([1, 1, 5, 5], np.int64),
    }
    with pytest.raises(MiniTVMError, match="25 elements"):
        _run(model, feeds, 1)


# ----------------------------------------------------------------------------- AffineGrid


@pytest.mark.parametrize("size", [(2, 3, 5, 4), (2, 1, 1, 3), (2, 1, 3, 4, 2)])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size_at_run_time", [False, True])
def test_affine_grid_matches_onnx_reference(size, align, size_at_run_time):
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    nd = len(size) - 2
    theta = np.random.default_rng(2).standard_normal((2, nd, nd + 1)).astype(np.float32)
    size = np.array(size, np.int64)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)
    inputs = {"theta": (F32, list(theta.shape))}
    feeds = {"theta": theta}
    if size_at_run_time:
        inputs["size"] = (TensorProto.INT64, [len(size)])
        feeds["size"] = size
    model = _model([node], inputs, ["grid"], opset=20)
    if not size_at_run_time:
        model.graph.initializer.append(numpy_helper.from_array(size, "size"))
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    got = _run(model, feeds, 1)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------- STFT


@pytest.mark.parametrize(
    ("parts", "onesided", "step", "length"), [(1, 1, 8, 16), (1, 0, 3, 7), (2, 0, 5, 40)]
)
def test_stft_with_frame_length_at_run_time_matches_onnx_reference(parts, onesided, step, length):
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("STFT", ["x", "step", "", "length"], ["y"], onesided=onesided)
    inputs = {
        "x": (F32, [2, 40, parts]),
        "step": (TensorProto.INT64, []),
        "length": (TensorProto.INT64, []),
    }
    model = _model([node], inputs, ["y"], opset=17)
    feeds = {
        "x": np.random.default_rng(3).standard_normal((2, 40, parts)).astype(np.float32),
        "step": np.array(step, np.int64),
        "length": np.array(length, np.int64),
    }
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    got = _run(model, feeds, 1)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_stft_frame_length_at_run_time_past_the_signal_is_refused():
    node = helper.make_node("STFT", ["x", "step", "", "length"], ["y"])
    inputs = {
        "x": (F32, [1, 16, 1]),
        "step": (TensorProto.INT64, []),
        "length": (TensorProto.INT64, []),
    }
    feeds = {
        "x": np.ones((1, 16, 1), np.float32),
        "step": np.array(4, np.int64),
        "length": np.array(17, np.int64),
    }
    with pytest.raises(MiniTVMError, match="dims must be >= 0"):  # the shape check's words
        _run(_model([node], inputs, ["y"], opset=17), feeds, 1)


# ----------------------------------------------------------------------------- MelWeightMatrix


@pytest.mark.parametrize(
    "values", [(8, 16, 8192, 0.0, 4096.0), (10, 64, 16000, 20.0, 7600.0), (3, 9, 100, 5.0, 50.0)]
)
def test_mel_weight_matrix_of_run_time_inputs_matches_onnx_reference(values):
    from onnx.reference import ReferenceEvaluator

    names = ["mels", "length", "rate", "low", "high"]
    node = helper.make_node("MelWeightMatrix", names, ["y"])
    types = [TensorProto.INT32] * 3 + [F32] * 2
    model = _model([node], {n: (t, []) for n, t in zip(names, types)}, ["y"], opset=17)
    feeds = {
        n: np.array(v, np.int32 if k < 3 else np.float32)
        for k, (n, v) in enumerate(zip(names, values))
    }
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    got = _run(model, feeds, 1)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
