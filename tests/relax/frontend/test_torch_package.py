"""The frontend package: importing minitvm loads neither PyTorch nor onnx; names resolve lazily."""

import subprocess
import sys

import pytest

import minitvm as tvm


def test_importing_minitvm_loads_no_framework():
    code = (
        "import sys, minitvm\n"
        "assert minitvm.relax.frontend.detach_params\n"
        "print(sorted(m for m in ('torch', 'onnx') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_torch_importers_resolve_through_the_package():
    pytest.importorskip("torch")
    from minitvm.relax.frontend.torch import from_exported_program, from_fx

    assert tvm.relax.frontend.torch.from_fx is from_fx
    assert tvm.relax.frontend.torch.from_exported_program is from_exported_program


def test_unknown_frontend_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'tensorflow'"):
        tvm.relax.frontend.tensorflow  # noqa: B018
