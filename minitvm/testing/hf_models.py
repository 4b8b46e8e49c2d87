"""HuggingFace transformers models built offline from their configs (random weights, no downloads).

Each builder returns a `HFCase`: the torch module (wrapped to return one tensor: the logits, or
the encoder's last hidden state for Whisper) and a seeded input maker. Two size presets:
"tiny" (hidden 32, the import tests) and "bench" (what `benchmarks/models.py --hf` times):
hidden 256, 4 heads (Llama/Mistral: 2 KV heads), 2 layers, FFN 1024 (SwiGLU 704, about
8/3 x hidden), vocab 1000, 128 tokens; ViT 224 x 224 in 16 x 16 patches (197 tokens); the
Whisper encoder 80 mel bins x 128 frames (64 positions after its stride-2 conv). That is the
BERT-base block at a quarter of its width. transformers and torch are imported lazily.

    case = hf_models.build("hf_bert", "bench")
    ep = torch.export.export(case.model, (case.make_input(1, seed=0),))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..error import ArgumentError

__all__ = ["SIZES", "HFCase", "build", "list_models"]

# Shared sizes per preset; each builder maps them onto its config's field names.
SIZES: dict[str, dict[str, int]] = {
    "tiny": {"vocab": 97, "seq": 7, "hidden": 32, "layers": 2, "heads": 4, "kv_heads": 2,
             "ffn": 37, "gated_ffn": 44, "image": 16, "patch": 4, "mel": 8, "frames": 16},
    "bench": {"vocab": 1000, "seq": 128, "hidden": 256, "layers": 2, "heads": 4, "kv_heads": 2,
              "ffn": 1024, "gated_ffn": 704, "image": 224, "patch": 16, "mel": 80, "frames": 128},
}  # fmt: skip


@dataclass(frozen=True)
class HFCase:
    """A torch module returning one float tensor, and `make_input(batch, seed)` for it."""

    model: Any
    make_input: Callable[[int, int], Any]
    config: Any


def _ids(vocab: int, seq: int) -> Callable:
    def make(batch: int, seed: int):
        import torch

        g = torch.Generator().manual_seed(seed)
        return torch.randint(0, vocab, (batch, seq), generator=g)

    return make


def _floats(*shape: int) -> Callable:
    def make(batch: int, seed: int):
        import torch

        return torch.randn(batch, *shape, generator=torch.Generator().manual_seed(seed))

    return make


def _bert(tf, s):
    config = tf.BertConfig(vocab_size=s["vocab"], hidden_size=s["hidden"],
                           num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                           intermediate_size=s["ffn"], max_position_embeddings=2 * s["seq"],
                           num_labels=3)  # fmt: skip
    return tf.BertForSequenceClassification(config), _ids(s["vocab"], s["seq"]), config


def _gpt2(tf, s):
    config = tf.GPT2Config(vocab_size=s["vocab"], n_embd=s["hidden"], n_layer=s["layers"],
                           n_head=s["heads"], n_inner=s["ffn"], n_positions=2 * s["seq"],
                           bos_token_id=0, eos_token_id=0)  # fmt: skip
    return tf.GPT2LMHeadModel(config), _ids(s["vocab"], s["seq"]), config


def _llama(tf, s):
    config = tf.LlamaConfig(vocab_size=s["vocab"], hidden_size=s["hidden"],
                            intermediate_size=s["gated_ffn"],
                            num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                            num_key_value_heads=s["kv_heads"],
                            max_position_embeddings=2 * s["seq"])  # fmt: skip
    return tf.LlamaForCausalLM(config), _ids(s["vocab"], s["seq"]), config


def _mistral(tf, s):
    config = tf.MistralConfig(vocab_size=s["vocab"], hidden_size=s["hidden"],
                              intermediate_size=s["gated_ffn"],
                              num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                              num_key_value_heads=s["kv_heads"], sliding_window=None,
                              max_position_embeddings=2 * s["seq"])  # fmt: skip
    return tf.MistralForCausalLM(config), _ids(s["vocab"], s["seq"]), config


def _vit(tf, s):
    config = tf.ViTConfig(image_size=s["image"], patch_size=s["patch"], num_channels=3,
                          hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                          num_attention_heads=s["heads"], intermediate_size=s["ffn"],
                          num_labels=5)  # fmt: skip
    return tf.ViTForImageClassification(config), _floats(3, s["image"], s["image"]), config


def _whisper_encoder(tf, s):
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    # The encoder's conv1d stem (strides 1 and 2) halves the frames to its positions.
    config = tf.WhisperConfig(num_mel_bins=s["mel"], d_model=s["hidden"],
                              encoder_layers=s["layers"], encoder_attention_heads=s["heads"],
                              encoder_ffn_dim=s["ffn"], max_source_positions=s["frames"] // 2,
                              vocab_size=s["vocab"], pad_token_id=0, bos_token_id=0,
                              eos_token_id=0, decoder_start_token_id=0)  # fmt: skip
    return WhisperEncoder(config), _floats(s["mel"], s["frames"]), config


_BUILDERS = {
    "hf_bert": _bert,
    "hf_gpt2": _gpt2,
    "hf_llama": _llama,
    "hf_mistral": _mistral,
    "hf_vit": _vit,
    "hf_whisper_encoder": _whisper_encoder,
}


def list_models() -> list[str]:
    return list(_BUILDERS)


def _output_module(model):
    import torch

    class Output(torch.nn.Module):
        """The model's logits (or last hidden state): one tensor for export and comparison."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            out = self.inner(x)
            logits = getattr(out, "logits", None)
            return out.last_hidden_state if logits is None else logits

    return Output(model)


def build(name: str, size: str = "tiny", seed: int = 0) -> HFCase:
    """The named model with seeded random weights, in eval mode with eager attention."""
    if name not in _BUILDERS:
        raise ArgumentError(f"hf_models.build: unknown model {name!r}; choose from {list_models()}")
    if size not in SIZES:
        raise ArgumentError(f"hf_models.build: unknown size {size!r}; choose from {list(SIZES)}")
    import torch
    import transformers as tf

    torch.manual_seed(seed)
    model, make_input, config = _BUILDERS[name](tf, SIZES[size])
    # Eager attention is plain matmul/softmax that torch.export and ONNX both trace.
    config._attn_implementation = "eager"
    return HFCase(_output_module(model.eval()), make_input, config)
