"""TVM's paged KV cache on the nn side: `PagedKVCache` (an nn.Object whose methods emit calls of
the runtime builtins in runtime/vm_builtin_kv.py) and `TIRPagedKVCache`, which creates one.

    class Model(nn.Module):
        def create_paged_kv_cache(self, max_batch_size, max_total_seq_len, prefill_chunk_size,
                                  page_size, support_sliding_window):
            return TIRPagedKVCache(attn_kind="mha", max_batch_size=max_batch_size, ...)
        def batch_decode(self, ids, paged_kv_cache: PagedKVCache):
            ...
            o = paged_kv_cache.attention_with_fused_qkv(layer_id, qkv, num_heads, head_dim**-0.5)

The caller manages sequences with `vm.builtin.kv_state_*` around each forward (see
docs/nn.md). Attention runs inside the builtin (numpy), so no kernels are added to the module.
"""

from __future__ import annotations

import enum
from typing import Any

from .....error import ArgumentError, ShapeError, TargetError
from .....tir.expr import IntImm, PrimExpr
from ....block_builder import BlockBuilder
from ....expr import Call, Constant, ExternFunc, PrimValue, ShapeExpr, Tuple, const
from ....op import call_dps_packed, zeros
from ....struct_info import ObjectStructInfo, TensorStructInfo
from ..core import Object, Tensor, current_builder

_CREATE = "vm.builtin.paged_attention_kv_cache_create"
_ATTN = "vm.builtin.attention_kv_cache_attention_with_fused_qkv"
_POSITIONS = "vm.builtin.attention_kv_cache_get_query_positions"


class AttnKind(enum.IntEnum):
    """TVM's attention kinds (only MHA is supported here)."""

    MHA = 0
    MLA = 1
    MHA_SLIDING = 3


class RopeMode(enum.IntEnum):
    """Where RoPE is applied. NONE: never. NORMAL: to q and k before k is cached. INLINE: to q
    and to the cached (unrotated) k when attention reads them."""

    NONE = 0
    NORMAL = 1
    INLINE = 2


def _float_arg(value: float) -> Constant:
    """A float argument of a builtin: a 0-d float64 constant (the VM's scalars are ints), which
    also keeps sm_scale and rope_theta exact."""
    return const(float(value), "float64")


def _int_arg(value: int) -> PrimValue:
    """An int argument of a builtin (PrimValue's default dtype, so the script round-trips)."""
    return PrimValue(int(value))


class PagedKVCache(Object):
    """The paged KV cache of an exported model: an opaque runtime object (an input of each
    forward method, `nn.spec.Object(object_type=PagedKVCache)`)."""

    def attention_with_fused_qkv(
        self, layer_id: int, qkv: Tensor, num_qo_heads: int, sm_scale: float
    ) -> Tensor:
        """Attention of the forward's tokens on layer `layer_id`, appending their k/v first.

        `qkv` is (b, s, num_qo_heads + 2 * num_kv_heads, head_dim): (1, total_len) for a
        prefill of one or several sequences, (batch, 1) for a decode; the result is
        (b, s, num_qo_heads, head_dim). RoPE is applied as the cache's rope_mode says.
        """
        if not isinstance(qkv, Tensor) or qkv.ndim != 4:
            raise ShapeError(
                "PagedKVCache.attention_with_fused_qkv: qkv must be an nn.Tensor "
                f"(b, s, heads, head_dim), got {getattr(qkv, 'shape', type(qkv).__name__)}"
            )
        if isinstance(layer_id, bool) or not isinstance(layer_id, int) or layer_id < 0:
            raise ArgumentError(
                f"PagedKVCache.attention_with_fused_qkv: layer_id must be an int >= 0, got "
                f"{layer_id!r}"
            )
        b, s, heads, d = qkv.shape
        if isinstance(heads, int) and heads <= num_qo_heads:
            raise ShapeError(
                f"PagedKVCache.attention_with_fused_qkv: qkv has {heads} heads, which cannot "
                f"hold {num_qo_heads} query heads plus keys and values"
            )
        flat = qkv.reshape(b * s, heads, d)
        out = TensorStructInfo(ShapeExpr((b * s, num_qo_heads, d)), qkv.dtype)
        args = [self._expr, _int_arg(layer_id), _float_arg(sm_scale), flat._expr]
        call = call_dps_packed(_ATTN, args, out)
        o = Tensor(_expr=current_builder("PagedKVCache.attention_with_fused_qkv").emit(call))
        return o.reshape(b, s, num_qo_heads, d)

    def get_query_positions(self, total_length: Any) -> Tensor:
        """The in-sequence position of each token of the forward, (total_length,) int32."""
        sinfo = TensorStructInfo(ShapeExpr((total_length,)), "int32")
        call = Call(ExternFunc(_POSITIONS), (self._expr,), sinfo_args=(sinfo,))
        return Tensor(_expr=current_builder("PagedKVCache.get_query_positions").emit(call))


def _layer_partition(value: Any, num_layers: int) -> ShapeExpr:
    if value is None:
        return ShapeExpr((0, num_layers))
    if isinstance(value, ShapeExpr):
        return value
    return ShapeExpr(tuple(value))


def _check_supported(
    attn_kind: Any, rope_scaling: Any, rope_ext_factors: Any, enable_disaggregation: bool, target
) -> None:
    """TVM's arguments this cache cannot honour, refused by name."""
    kinds = attn_kind if isinstance(attn_kind, list | tuple) else [attn_kind]
    if any(str(k).lower() != "mha" for k in kinds):
        raise ArgumentError(
            f"TIRPagedKVCache: attn_kind {attn_kind!r}: only 'mha' is supported (MLA and "
            "sliding-window layers are not)"
        )
    rope_type = (rope_scaling or {}).get("rope_type", "default")
    if rope_type not in ("default", None):
        raise ArgumentError(
            f"TIRPagedKVCache: rope_scaling type {rope_type!r} is not supported; only the "
            "default RoPE (with a constant rope_scale) is"
        )
    if rope_ext_factors is not None and not (
        isinstance(rope_ext_factors, PrimValue) and isinstance(rope_ext_factors.value, IntImm)
    ):
        raise ArgumentError("TIRPagedKVCache: rope_ext_factors (longrope) are not supported")
    if enable_disaggregation:
        raise ArgumentError("TIRPagedKVCache: enable_disaggregation is not supported")
    kind = getattr(getattr(target, "kind", None), "name", None) or str(target or "llvm").split()[0]
    if kind != "llvm":
        raise TargetError(
            f"TIRPagedKVCache: target {kind!r}: the paged KV cache runs on the host CPU only; "
            "use target 'llvm'"
        )


class TIRPagedKVCache(PagedKVCache):
    """A paged KV cache made by `vm.builtin.paged_attention_kv_cache_create` (TVM's arguments,
    in TVM's order). The size arguments may be symbolic (the inputs of a
    `create_paged_kv_cache` method); the others are Python values."""

    def __init__(
        self,
        attn_kind: Any,
        max_batch_size: Any,
        max_total_seq_len: Any,
        prefill_chunk_size: Any,
        page_size: Any,
        support_sliding_window: Any,
        layer_partition: Any,
        num_hidden_layers: int,
        num_attention_heads: int,
        num_key_value_heads: int,
        qk_head_dim: int,
        v_head_dim: int,
        mla_original_qk_head_dim: int,
        mla_original_v_head_dim: int,
        rope_mode: RopeMode | int,
        rope_scale: float,
        rope_theta: float,
        rope_scaling: dict | None,
        rope_ext_factors: Any,
        rotary_dim: int | None,
        enable_disaggregation: bool,
        dtype: str,
        target: Any,
        name: str = "paged_kv_cache",
    ) -> None:
        _check_supported(attn_kind, rope_scaling, rope_ext_factors, enable_disaggregation, target)
        if num_attention_heads % num_key_value_heads:
            raise ArgumentError(
                f"TIRPagedKVCache: num_attention_heads {num_attention_heads} is not a multiple "
                f"of num_key_value_heads {num_key_value_heads}"
            )
        bb: BlockBuilder = current_builder("TIRPagedKVCache")
        sizes = [max_batch_size, max_total_seq_len, prefill_chunk_size, page_size]
        sizes.append(support_sliding_window)
        for v in sizes:
            if not isinstance(v, int | PrimExpr) or isinstance(v, bool):
                raise ArgumentError(
                    f"TIRPagedKVCache: the size arguments must be ints or symbolic sizes, got {v!r}"
                )
        init = bb.emit(zeros(ShapeExpr(()), dtype), "kv_dtype")
        null = bb.emit(
            Call(ExternFunc("vm.builtin.null_value"), (), sinfo_args=(ObjectStructInfo(),))
        )
        args: list = [
            ShapeExpr(tuple(sizes)),
            _layer_partition(layer_partition, num_hidden_layers),
            *(_int_arg(v) for v in (num_attention_heads, num_key_value_heads)),
            *(_int_arg(v) for v in (qk_head_dim, v_head_dim)),
            ShapeExpr(tuple(int(AttnKind.MHA) for _ in range(num_hidden_layers))),
            _int_arg(0),  # enable_kv_transfer
            _int_arg(int(rope_mode)),
            _float_arg(rope_scale),
            _float_arg(rope_theta),
            null,  # rope_ext_factors
            init,
            *(Tuple(()) for _ in range(13, 28)),  # kernels: the builtin computes attention
        ]
        if rotary_dim is not None and rotary_dim != qk_head_dim:
            args.append(_int_arg(rotary_dim))  # minitvm's 29th argument
        call = Call(ExternFunc(_CREATE), tuple(args), sinfo_args=(ObjectStructInfo(),))
        super().__init__(_expr=call, _name=name)


class FlashInferPagedKVCache(PagedKVCache):
    """TVM's FlashInfer cache needs CUDA kernels; minitvm refuses it by name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TargetError(
            "FlashInferPagedKVCache: FlashInfer kernels are CUDA-only and not part of minitvm; "
            "use TIRPagedKVCache with target 'llvm'"
        )


__all__ = [
    "AttnKind",
    "FlashInferPagedKVCache",
    "PagedKVCache",
    "RopeMode",
    "TIRPagedKVCache",
]
