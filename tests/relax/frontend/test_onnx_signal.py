"""ONNX's DFT, STFT and MelWeightMatrix against numpy.fft and ONNX's reference evaluator."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError
from minitvm.relax.frontend.onnx import from_onnx

_TYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64}


def _model(node, inputs, opset, initializers=()):
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, _TYPES[str(v.dtype)], v.shape)
            for n, v in inputs.items()
        ],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output],
        [numpy_helper.from_array(v, n) for n, v in dict(initializers).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _run(model, feeds, **kwargs):
    mod = from_onnx(model, **kwargs)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(v) for v in feeds.values()])
    return out.numpy()


def _numpy_dft(x, axis, length, inverse, onesided):
    """The expected DFT straight from numpy.fft (the trailing dim holds real, imaginary)."""
    z = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    if inverse and onesided:
        n = length or 2 * (x.shape[axis] - 1)
        return np.fft.irfft(z, n=n, axis=axis)[..., None]
    y = (np.fft.ifft if inverse else np.fft.fft)(z, n=length, axis=axis)
    if onesided:
        y = np.take(y, np.arange(y.shape[axis] // 2 + 1), axis=axis)
    return np.stack([y.real, y.imag], -1)


CASES = [  # (input shape, axis, dft_length, inverse, onesided)
    ((2, 8, 1), 1, None, 0, 0),  # real input
    ((2, 8, 2), 1, None, 0, 0),  # complex input
    ((2, 8, 1), 1, None, 0, 1),  # rfft
    ((2, 5, 2), 1, None, 1, 1),  # irfft: 2 * (5 - 1) samples
    ((2, 7, 2), 1, None, 1, 0),  # inverse
    ((3, 4, 6, 1), 2, None, 0, 0),  # another axis
    ((3, 4, 6, 2), 0, None, 1, 0),  # the first axis
    ((2, 6, 1), 1, 10, 0, 0),  # dft_length pads with zeros
    ((2, 9, 2), 1, 4, 0, 0),  # dft_length truncates
    ((2, 5, 2), 1, 9, 1, 1),  # irfft to an odd length
    ((2, 6, 1), -2, 7, 0, 1),  # negative axis, onesided of an odd length
]


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("shape, axis, length, inverse, onesided", CASES)
def test_dft_matches_numpy_fft(opset, shape, axis, length, inverse, onesided):
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    inits = {} if length is None else {"n": np.asarray(length, "int64")}
    names = ["x", "n" if length is not None else ""]
    attrs = {"inverse": inverse, "onesided": onesided}
    if opset >= 20:
        names.append("axis")
        inits["axis"] = np.asarray(axis, "int64")
    else:
        attrs["axis"] = axis
    node = helper.make_node("DFT", names, ["y"], **attrs)
    model = _model(node, {"x": x}, opset, inits)
    got = _run(model, {"x": x})
    want = _numpy_dft(x.astype("float64"), axis % len(shape), length, inverse, onesided)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("inverse, onesided", [(0, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("axis", [0, 1, 2, -3, -2])
def test_dft_axis_computed_at_run_time(axis, inverse, onesided):
    """opset 20's axis is an input; when it is a graph input every axis is computed and the
    asked one picked, cut to its own shape."""
    shape = (3, 4, 6, 2 if inverse else 1)
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    a = np.asarray(axis, "int64")
    node = helper.make_node("DFT", ["x", "", "axis"], ["y"], inverse=inverse, onesided=onesided)
    model = _model(node, {"x": x, "axis": a}, 20)
    got = _run(model, {"x": x, "axis": a})
    want = _numpy_dft(x.astype("float64"), axis % 4, None, inverse, onesided)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("axis", [3, -1, 4, -5])
def test_dft_run_time_axis_out_of_range_is_refused_by_the_vm(axis):
    x = np.ones((2, 4, 6, 1), "float32")
    a = np.asarray(axis, "int64")
    model = _model(helper.make_node("DFT", ["x", "", "axis"], ["y"]), {"x": x, "axis": a}, 20)
    with pytest.raises(MiniTVMError):
        _run(model, {"x": x, "axis": a})


def test_dft_run_time_length_is_refused_clearly():
    x = np.ones((2, 8, 1), "float32")
    n = np.asarray(8, "int64")
    model = _model(helper.make_node("DFT", ["x", "n"], ["y"], axis=1), {"x": x, "n": n}, 17)
    with pytest.raises(MiniTVMError, match="dft_length.*run time"):
        from_onnx(model)


@pytest.mark.parametrize("axis", [2, -1])
def test_dft_along_the_parts_dim_is_refused(axis):
    x = np.ones((2, 8, 1), "float32")
    model = _model(helper.make_node("DFT", ["x"], ["y"], axis=axis), {"x": x}, 17)
    with pytest.raises(MiniTVMError, match="signal dim"):
        from_onnx(model)


def _numpy_stft(x, step, window, size, onesided):
    frames = (x.shape[1] - size) // step + 1
    idx = np.arange(frames)[:, None] * step + np.arange(size)
    z = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    framed = z[:, idx] * (1 if window is None else window)
    y = np.fft.fft(framed, axis=-1)
    if onesided:
        y = y[..., : size // 2 + 1]
    return np.stack([y.real, y.imag], -1)


@pytest.mark.parametrize(
    "length, step, size, with_window, onesided, parts",
    [
        (64, 8, 16, True, 1, 1),
        (64, 8, 16, False, 1, 1),
        (50, 7, 12, True, 0, 2),
        (40, 5, 9, 0, 1, 1),
    ],
)
def test_stft_matches_numpy(length, step, size, with_window, onesided, parts):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, length, parts)).astype("float32")
    window = np.hanning(size).astype("float32") if with_window else None
    inits = {"step": np.asarray(step, "int64"), "size": np.asarray(size, "int64")}
    if with_window:
        inits["w"] = window
    names = ["x", "step", "w" if with_window else "", "size"]
    node = helper.make_node("STFT", names, ["y"], onesided=onesided)
    model = _model(node, {"x": x}, 17, inits)
    got = _run(model, {"x": x})
    want = _numpy_stft(x.astype("float64"), step, window, size, onesided)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("step", [1, 3, 8, 40])
def test_stft_frame_step_computed_at_run_time(step):
    """The frame count is known only at run time: the output is cut to it."""
    x = np.random.default_rng(3).standard_normal((2, 40, 1)).astype("float32")
    window = np.hanning(8).astype("float32")
    s = np.asarray(step, "int64")
    node = helper.make_node("STFT", ["x", "step", "w"], ["y"])
    model = _model(node, {"x": x, "step": s}, 17, {"w": window})
    got = _run(model, {"x": x, "step": s})
    want = _numpy_stft(x.astype("float64"), step, window, 8, True)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_stft_run_time_frame_step_below_one_is_refused_by_the_vm():
    x = np.ones((1, 32, 1), "float32")
    s = np.asarray(0, "int64")
    node = helper.make_node("STFT", ["x", "step", "w"], ["y"])
    model = _model(node, {"x": x, "step": s}, 17, {"w": np.ones(8, "float32")})
    with pytest.raises(MiniTVMError):
        _run(model, {"x": x, "step": s})


@pytest.mark.parametrize(
    "mels, length, rate, low, high", [(8, 16, 8192, 0.0, 4096.0), (5, 32, 16000, 100.0, 7000.0)]
)
def test_mel_weight_matrix_kept_as_parameters_matches_the_reference(mels, length, rate, low, high):
    """Known inputs are folded by the evaluator; float initializers kept as parameters reach
    the converter, which builds the matrix itself."""
    inits = {
        "m": np.asarray(mels, "int64"),
        "n": np.asarray(length, "int64"),
        "r": np.asarray(rate, "int64"),
        "lo": np.asarray(low, "float32"),
        "hi": np.asarray(high, "float32"),
    }
    node = helper.make_node("MelWeightMatrix", ["m", "n", "r", "lo", "hi"], ["y"])
    model = _model(node, {}, 17, inits)
    mod = from_onnx(model, keep_params_in_input=True)
    assert mod["main"].attrs["num_input"] == 0  # the params reached the converter as vars
    want = ReferenceEvaluator(model).run(None, {})[0]
    got = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())["main"]()
    np.testing.assert_allclose(got.numpy(), want)
    from minitvm.relax.frontend.onnx import _signal

    class _Ctx:  # the converter alone, on the values it would read from parameters
        def known(self, value, what):
            return value

        def expr(self, value):
            return relax.const(value)

    out = _signal.SIGNAL_CONVERTERS["MelWeightMatrix"](_Ctx(), list(inits.values()), {})
    np.testing.assert_allclose(out.data.numpy(), want)


def _declared(node, shapes, opset=20):
    """A model whose inputs are only declared (no arrays): hostile dims cost nothing here."""
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in shapes.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_a_dft_matrix_over_the_import_limit_is_refused_before_it_is_built():
    model = _declared(helper.make_node("DFT", ["x"], ["y"], axis=1), {"x": [1, 200_000, 1]}, 17)
    with pytest.raises(MiniTVMError, match=r"DFT matrix \(200000 x 200000\).*limit"):
        from_onnx(model)


def test_a_mel_filter_bank_over_the_import_limit_is_refused_before_it_is_built():
    names = ["bins", "length", "rate", "low", "high"]
    values = [np.int64(50_000), np.int64(50_000), np.int64(16_000), np.float32(0), np.float32(8e3)]
    graph = helper.make_graph(
        [helper.make_node("MelWeightMatrix", names, ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in zip(names, values)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(MiniTVMError, match=r"mel filter bank.*limit"):
        from_onnx(model, keep_params_in_input=True)  # not folded: the converter builds it
