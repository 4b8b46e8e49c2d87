"""The diffusion-model layers TVM's nn offers under diffusers' names: Timesteps,
TimestepEmbedding and (self or cross) Attention."""

from __future__ import annotations

from ....error import ArgumentError
from . import op
from .core import Module, ModuleList, Tensor
from .modules import GroupNorm, Linear, SiLU


def _only_silu(what: str, act: str) -> None:
    if act != "silu":
        raise ArgumentError(f"nn.{what}: activation {act!r} is not supported; use 'silu'")


class Timesteps(Module):
    """Sinusoidal embeddings (num_channels wide) of a batch of timesteps."""

    def __init__(
        self, num_channels: int, flip_sin_to_cos: bool = False, downscale_freq_shift: float = 1
    ) -> None:
        self.num_channels = num_channels
        self.flip_sin_to_cos = flip_sin_to_cos
        self.downscale_freq_shift = downscale_freq_shift

    def forward(self, x: Tensor) -> Tensor:
        return op.get_timestep_embedding(
            x,
            embedding_dim=self.num_channels,
            flip_sin_to_cos=self.flip_sin_to_cos,
            downscale_freq_shift=self.downscale_freq_shift,
        )


class TimestepEmbedding(Module):
    """linear_1 -> SiLU -> linear_2 (-> SiLU if post_act_fn) on a timestep embedding; with
    cond_proj_dim, a projected condition is added to the input first."""

    def __init__(
        self,
        in_channels: int,
        time_embed_dim: int,
        act_fn: str = "silu",
        out_dim: int | None = None,
        post_act_fn: str | None = None,
        cond_proj_dim: int | None = None,
    ) -> None:
        _only_silu("TimestepEmbedding", act_fn)
        self.linear_1 = Linear(in_channels, time_embed_dim)
        self.cond_proj = (
            Linear(cond_proj_dim, in_channels, bias=False) if cond_proj_dim is not None else None
        )
        self.act = SiLU()
        self.linear_2 = Linear(time_embed_dim, time_embed_dim if out_dim is None else out_dim)
        if post_act_fn is not None:
            _only_silu("TimestepEmbedding (post_act_fn)", post_act_fn)
        self.post_act = SiLU() if post_act_fn is not None else None

    def forward(self, sample: Tensor, condition: Tensor | None = None) -> Tensor:
        if condition is not None:
            if self.cond_proj is None:
                raise ArgumentError(
                    "nn.TimestepEmbedding: a condition was given but the layer has no "
                    "cond_proj; construct it with cond_proj_dim"
                )
            sample = sample + self.cond_proj(condition)
        sample = self.linear_2(self.act(self.linear_1(sample)))
        return sample if self.post_act is None else self.post_act(sample)


class Attention(Module):
    """Multi-head attention over (batch, seq, query_dim) inputs: to_q/to_k/to_v projections,
    scaled dot-product attention, and the output projection `to_out[0]`."""

    def __init__(
        self,
        query_dim: int,
        cross_attention_dim: int | None = None,
        heads: int = 8,
        dim_head: int = 64,
        bias: bool = False,
        norm_num_groups: int | None = None,
        out_bias: bool = True,
        scale_qk: bool = True,
    ) -> None:
        self.query_dim, self.heads, self.dim_head = query_dim, heads, dim_head
        self.cross_attention_dim = cross_attention_dim if cross_attention_dim else query_dim
        self.bias, self.out_bias, self.scale_qk = bias, out_bias, scale_qk
        self.norm_num_groups = norm_num_groups
        self.scale = dim_head**-0.5 if scale_qk else 1.0
        self.inner_dim = dim_head * heads
        self.to_q = Linear(query_dim, self.inner_dim, bias=bias)
        self.to_k = Linear(self.cross_attention_dim, self.inner_dim, bias=bias)
        self.to_v = Linear(self.cross_attention_dim, self.inner_dim, bias=bias)
        self.group_norm = (
            GroupNorm(num_groups=norm_num_groups, num_channels=query_dim, affine=True)
            if norm_num_groups is not None
            else None
        )
        self.to_out = ModuleList([Linear(self.inner_dim, query_dim, bias=out_bias)])

    def forward(
        self,
        hidden_states: Tensor,
        encoder_hidden_states: Tensor | None = None,
        attention_mask: Tensor | None = None,
        **cross_attention_kwargs: object,
    ) -> Tensor:
        if attention_mask is not None:
            raise ArgumentError("nn.Attention: attention_mask is not supported; pass None")
        if self.group_norm is not None:
            hidden_states = self.group_norm(hidden_states, channel_axis=2, axes=[1])
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        batch = hidden_states.shape[0]

        def heads(x: Tensor) -> Tensor:
            return op.reshape(x, [batch, -1, self.heads, self.dim_head])

        projected = [self.to_q(hidden_states), self.to_k(context), self.to_v(context)]
        query, key, value = (heads(x) for x in projected)
        # None is attention's default scale, 1/sqrt(dim_head), which scale_qk asks for
        scale = None if self.scale_qk else 1.0
        out = op.scaled_dot_product_attention(query, key, value, is_causal=False, scale=scale)
        out = op.reshape(out, [batch, -1, self.inner_dim])
        return self.to_out[0](out)
