"""nn.llm: pieces for decoder-only language models written with `relax.frontend.nn`.

`rope` (HF Llama's rotary position embedding at a symbolic position offset) and a functional
key/value cache (`kv_cache_spec`, `bind_kv_cache`, `append_kv`,
`past_length`): past keys/values go in as tensors
of symbolic length and come out extended. See docs/nn.md and examples/llama_generate.py.
"""

from .kv_cache import append_kv, bind_kv_cache, kv_cache_spec, past_length
from .position_embedding import rope

__all__ = ["append_kv", "bind_kv_cache", "kv_cache_spec", "past_length", "rope"]
