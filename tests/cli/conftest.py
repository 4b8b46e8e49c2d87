"""Fixtures of the command-line tests: a small artifact built without any importer."""

from __future__ import annotations

import pytest
from cli_testing import B, W


@pytest.fixture(scope="session")
def hand_artifact(tmp_path_factory) -> str:
    """An artifact of relu(x @ W + B), x: (2, 8) float32 named 'x' ('x.in' in its 'source')."""
    from minitvm import relax
    from minitvm.cli import artifact

    x = relax.Var("x", relax.TensorStructInfo((2, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.add(relax.op.matmul(x, relax.const(W)), relax.const(B)))
            out = bb.emit_output(relax.op.nn.relu(h))
        bb.emit_func_output(out)
    exe = relax.build(bb.get(), target="llvm")
    path = str(tmp_path_factory.mktemp("artifact") / "hand.tar")
    meta = {
        "minitvm_version": "test",
        "target": "llvm",
        "entry": "main",
        "inputs": [{"name": "x", "source_name": "x.in", "shape": [2, 8], "dtype": "float32"}],
        "source": {"path": "/nonexistent/hand.onnx", "format": "onnx", "sha256": "0" * 64},
    }
    artifact.save(path, exe, meta)
    return path
