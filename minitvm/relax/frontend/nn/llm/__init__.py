"""nn.llm: pieces for decoder-only language models written with `relax.frontend.nn`.

`rope` (HF Llama's rotary position embedding at a symbolic position offset) and a functional
key/value cache (`kv_cache_spec`, `bind_kv_cache`, `append_kv`,
`past_length`): past keys/values go in as tensors
of symbolic length and come out extended. TVM's paged cache: `PagedKVCache` (an object input of
the forward methods; `attention_with_fused_qkv`) and `TIRPagedKVCache` (creates one), run by the
`vm.builtin.kv_state_*` builtins. See docs/nn.md and examples/llama_generate.py.
"""

from . import kv_cache, position_embedding
from .kv_cache import append_kv, bind_kv_cache, kv_cache_spec, past_length
from .paged_kv_cache import (
    AttnKind,
    FlashInferPagedKVCache,
    PagedKVCache,
    RopeMode,
    TIRPagedKVCache,
)
from .position_embedding import rope

__all__ = [
    "AttnKind", "FlashInferPagedKVCache", "PagedKVCache", "RopeMode", "TIRPagedKVCache",
    "append_kv", "bind_kv_cache", "kv_cache", "kv_cache_spec", "past_length",
    "position_embedding", "rope",
]  # fmt: skip
