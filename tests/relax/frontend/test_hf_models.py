"""HuggingFace transformers models (tiny configs, random weights, no downloads) through
torch.export with a symbolic batch (torch.export.Dim), from_exported_program and relax.build:
logits match torch at two batch sizes. ViT runs by default; BERT, GPT-2 and Llama (RoPE,
RMSNorm, GQA, SwiGLU) take 30-45 s each on a loaded 2-core machine and are marked slow.
The sequence length stays static (a symbolic one is not imported yet)."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
tf = pytest.importorskip("transformers", reason="transformers is not installed")

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program

VOCAB, SEQ = 97, 7


def _bert():
    config = tf.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=37,
                           max_position_embeddings=64, num_labels=3)  # fmt: skip
    return tf.BertForSequenceClassification(config), "ids"


def _gpt2():
    config = tf.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                           bos_token_id=0, eos_token_id=0)  # fmt: skip
    return tf.GPT2LMHeadModel(config), "ids"


def _llama():
    config = tf.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=44,
                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                            max_position_embeddings=64)  # fmt: skip
    return tf.LlamaForCausalLM(config), "ids"


def _vit():
    config = tf.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32,
                          num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                          num_labels=5)  # fmt: skip
    return tf.ViTForImageClassification(config), "pixels"


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).logits


def _input(kind, batch, seed):
    g = torch.Generator().manual_seed(seed)
    if kind == "ids":
        return torch.randint(0, VOCAB, (batch, SEQ), generator=g)
    return torch.randn(batch, 3, 16, 16, generator=g)


@pytest.mark.parametrize(
    "factory",
    [
        pytest.param(_vit, id="vit"),
        pytest.param(_bert, id="bert", marks=pytest.mark.slow),
        pytest.param(_gpt2, id="gpt2", marks=pytest.mark.slow),
        pytest.param(_llama, id="llama", marks=pytest.mark.slow),
    ],
)
def test_hf_model_with_symbolic_batch_matches_torch(factory):
    torch.manual_seed(0)
    model, kind = factory()
    model.config._attn_implementation = "eager"
    wrapped = Logits(model.eval())
    batch = torch.export.Dim("batch", max=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(wrapped, (_input(kind, 2, 0),), dynamic_shapes={"x": {0: batch}})
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for n, seed in ((2, 1), (3, 2)):  # one build serves every batch size
        x = _input(kind, n, seed)
        with torch.no_grad():
            expected = wrapped(x).numpy()
        got = vm["main"](tvm.nd.array(x.numpy())).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
