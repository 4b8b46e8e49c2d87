"""minitvm.testing.hf_models: HF models built offline from configs; each returns one float
tensor of the expected shape, deterministic for a seed; the Whisper encoder and Mistral (new
here) import through torch.export and match torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers", reason="transformers is not installed")

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError
from minitvm.testing import hf_models

OUT_WIDTH = {"hf_bert": 3, "hf_vit": 5}  # classifier heads; LMs give vocab, Whisper hidden


@pytest.mark.parametrize("name", hf_models.list_models())
def test_tiny_model_is_deterministic_and_returns_one_tensor(name):
    sizes = hf_models.SIZES["tiny"]
    a, b = hf_models.build(name, "tiny", seed=3), hf_models.build(name, "tiny", seed=3)
    x = a.make_input(2, 0)
    with torch.no_grad():
        ya, yb = a.model(x), b.model(x)
    assert isinstance(ya, torch.Tensor) and ya.shape[0] == 2
    width = OUT_WIDTH.get(name, sizes["hidden"] if "whisper" in name else sizes["vocab"])
    assert ya.shape[-1] == width
    torch.testing.assert_close(ya, yb, rtol=0, atol=0)


def test_unknown_model_or_size_is_refused_with_the_choices():
    with pytest.raises(ArgumentError, match="hf_bert"):
        hf_models.build("bert")
    with pytest.raises(ArgumentError, match="bench"):
        hf_models.build("hf_bert", "huge")


@pytest.mark.slow  # 30-45 s each on the loaded 2-core machine
@pytest.mark.parametrize("name", ["hf_whisper_encoder", "hf_mistral"])
def test_import_matches_torch(name):
    from minitvm.relax.frontend.torch import from_exported_program

    case = hf_models.build(name, "tiny")
    x = case.make_input(2, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(case.model, (x,))
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    with torch.no_grad():
        want = case.model(x).numpy()
    got = vm["main"](tvm.nd.array(x.numpy())).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
