"""load_model reads untrusted files: damaged bytes end in a FrontendError (never a signal), and
external data is read only from inside the model's folder."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

from minitvm.error import FrontendError
from minitvm.relax.frontend.onnx import from_onnx, load_model


def _small_cnn() -> "onnx.ModelProto":
    """Conv -> Relu -> MaxPool -> Flatten -> Gemm with weights, dynamic batch."""
    rng = np.random.default_rng(0)
    inits = {
        "w": rng.standard_normal((4, 1, 3, 3)).astype("float32"),
        "b": rng.standard_normal(4).astype("float32"),
        "fc": rng.standard_normal((4 * 3 * 3, 5)).astype("float32"),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _lenet_export(path) -> bool:
    """The zoo's LeNet through torch.onnx.export (a real exporter's file); False without torch."""
    try:
        import torch

        from minitvm.testing import zoo
    except ImportError:
        return False
    _, params = zoo.get_model("lenet", batch_size=1, image_shape=(1, 28, 28))
    model = zoo.torch_model("lenet", params).eval()
    torch.onnx.export(model, (torch.zeros(1, 1, 28, 28),), str(path), dynamo=False)
    return True


_FUZZ_CHILD = textwrap.dedent(
    """
    import json, random, sys
    from minitvm.error import MiniTVMError
    from minitvm.relax.frontend.onnx import from_onnx, load_model

    src, work, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = open(src, "rb").read()
    rng = random.Random(0)
    seen = {"imported": 0, "refused": 0, "foreign": []}
    for k in range(count):
        mutated = bytearray(data)
        if k % 4 == 3:
            mutated = mutated[: rng.randrange(len(mutated))]  # truncated
        else:
            for _ in range(1 + k % 3):  # one to three flipped bits
                pos = rng.randrange(len(mutated))
                mutated[pos] ^= 1 << rng.randrange(8)
        with open(work, "wb") as f:
            f.write(mutated)
        print(k, flush=True)  # the last line names the mutation a signal would have ended
        try:
            from_onnx(load_model(work))
            seen["imported"] += 1
        except MiniTVMError:
            seen["refused"] += 1
        except Exception as err:
            seen["foreign"].append(f"{k}: {type(err).__name__}: {err}"[:200])
    print(json.dumps(seen))
    """
)


def test_bit_flipped_and_truncated_models_end_cleanly(tmp_path):
    sources = [tmp_path / "cnn.onnx"]
    onnx.save(_small_cnn(), str(sources[0]))
    if _lenet_export(tmp_path / "lenet.onnx"):
        sources.append(tmp_path / "lenet.onnx")
    child = tmp_path / "fuzz.py"
    child.write_text(_FUZZ_CHILD)
    for src in sources:
        p = subprocess.run(
            [sys.executable, str(child), str(src), str(tmp_path / "mutated.onnx"), "120"],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        assert p.returncode == 0, (
            f"{src.name}: exit {p.returncode} after mutation {last}\n{p.stderr[-2000:]}"
        )
        seen = json.loads(last)
        assert not seen["foreign"], seen["foreign"]
        assert seen["refused"] > 0 and seen["imported"] + seen["refused"] == 120


def test_load_model_round_trips_a_valid_model(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_small_cnn(), str(path))
    model = load_model(path, check=True)
    assert [n.name for n in model.graph.node][:2] == ["conv", "relu"]
    from_onnx(model)


def test_load_model_refuses_garbage_and_a_model_the_checker_refuses(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff" * 64)
    with pytest.raises(FrontendError, match=r"garbage.onnx'\): the file is not an ONNX model"):
        load_model(garbage)
    model = _small_cnn()
    model.graph.node[1].input[0] = "nowhere"  # parses, but the checker refuses it
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(model.SerializeToString())
    with pytest.raises(FrontendError, match=r"onnx's checker refused it"):
        load_model(bad, check=True)
    with pytest.raises(FrontendError, match=r"input 'nowhere' is neither a graph input"):
        from_onnx(load_model(bad))


def _with_external(tmp_path, location, offset=None, length=None):
    model = _small_cnn()
    tensor = model.graph.initializer[0]
    tensor.data_location = TensorProto.EXTERNAL
    raw = tensor.raw_data
    tensor.ClearField("raw_data")
    tensor.external_data.add(key="location", value=location)
    if offset is not None:
        tensor.external_data.add(key="offset", value=str(offset))
    if length is not None:
        tensor.external_data.add(key="length", value=str(length))
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path, raw


def test_load_model_reads_external_data_from_the_models_folder(tmp_path):
    path, raw = _with_external(tmp_path, "weights.bin", offset=8, length=None)
    (path.parent / "weights.bin").write_bytes(b"\0" * 8 + raw)
    model = load_model(path)
    np.testing.assert_array_equal(
        numpy_helper.to_array(model.graph.initializer[0]),
        numpy_helper.to_array(_small_cnn().graph.initializer[0]),
    )


@pytest.mark.parametrize(
    "location, match",
    [
        ("/etc/passwd", r"location '/etc/passwd' is not a file name inside the model's folder"),
        ("../secret.bin", r"location '../secret.bin' is not a file name inside"),
        ("a/../../secret.bin", r"is not a file name inside"),
        ("link.bin", r"location 'link.bin' leads outside the model's folder"),
    ],
)
def test_load_model_refuses_external_data_outside_the_folder(tmp_path, location, match):
    path, raw = _with_external(tmp_path, location)
    secret = tmp_path / "secret.bin"
    secret.write_bytes(raw)
    os.symlink(secret, path.parent / "link.bin")
    with pytest.raises(FrontendError, match=match):
        load_model(path)


def test_load_model_refuses_external_data_past_the_files_end(tmp_path):
    path, raw = _with_external(tmp_path, "weights.bin", offset=4, length=4 * 9 * 4)
    (path.parent / "weights.bin").write_bytes(raw)
    with pytest.raises(FrontendError, match=r"lies outside the file's"):
        load_model(path)
