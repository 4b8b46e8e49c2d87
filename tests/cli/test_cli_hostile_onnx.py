"""`minitvm show/compile` of damaged ONNX files: protobuf parses the bytes and onnx's C++ checker
runs in a child process, so a bit-flipped or truncated model is an `error:` line (exit 1 or 2),
never a signal or a traceback; a FIFO is refused instead of blocking."""

import os

import numpy as np
import pytest
from cli_testing import cli  # tests/cli is on sys.path (pytest's rootdir-relative import)


def _model_bytes(tmp_path) -> bytes:
    onnx = pytest.importorskip("onnx", reason="the onnx package builds the model")
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((16, 8)).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
         helper.make_node("Relu", ["h"], ["y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [numpy_helper.from_array(w, "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


def test_damaged_models_end_in_an_error_line_never_a_signal(tmp_path):
    data = _model_bytes(tmp_path)
    rng = np.random.default_rng(7)
    cases = [data[: len(data) // 2], data[:7], b"\x08" * 64]
    for _ in range(9):
        flipped = bytearray(data)
        for pos in rng.integers(0, len(data), 3):
            flipped[pos] ^= 1 << int(rng.integers(0, 8))
        cases.append(bytes(flipped))
    for k, case in enumerate(cases):
        path = tmp_path / f"damaged_{k}.onnx"
        path.write_bytes(case)
        proc = cli("show", path, timeout=120)
        assert proc.returncode in (0, 1, 2), (k, proc.returncode, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, (k, proc.stderr[-2000:])
        if proc.returncode:
            assert proc.stderr.strip().startswith("error:") and path.name in proc.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")
def test_a_fifo_named_as_the_model_is_refused_not_waited_on(tmp_path):
    pytest.importorskip("onnx", reason="reading a model needs the onnx package")
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    proc = cli("show", fifo, timeout=60)
    assert proc.returncode in (1, 2) and "error:" in proc.stderr, proc.stderr
