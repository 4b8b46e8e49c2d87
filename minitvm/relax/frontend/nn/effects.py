"""TVM's effects of `relax.frontend.nn`: state threaded through the exported functions.

An effect is an opaque runtime object (R.Object). `export_tvm` makes a function
`_initialize_effect` that creates every effect of the module; each exported method takes the
effects as extra inputs (after the spec's arguments, before the parameters) and returns
`(outputs, (new effects...))`. The caller keeps the effects between calls:

    effects = vm["_initialize_effect"]()
    out, effects = vm["forward"](x, *effects, *weights)

`KVCache` is TVM's legacy attention cache (`vm.builtin.attention_kv_cache_*`, see
runtime/vm_builtin.py); `IOEffect` is the null object `export_tvm(debug=True)` threads through
every method as `_io`, as TVM does. The calls are packed calls of registered builtins (relax
Calls of an ExternFunc), made in one place here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....error import ArgumentError, DTypeError, MiniTVMError, ShapeError
from ....tir.expr import IntImm, PrimExpr
from ...block_builder import BlockBuilder
from ...expr import Call, ExternFunc, PrimValue, ShapeExpr, Var
from ...op import null_value, zeros
from ...struct_info import ObjectStructInfo, StructInfo, TensorStructInfo
from .core import Effect, Tensor, current_builder, get_default_dtype


def _builtin_call(name: str, args: Sequence[Any], sinfo: StructInfo) -> Call:
    """A call of the runtime builtin `name` (a registered global function) returning `sinfo`."""
    return Call(ExternFunc(name), tuple(args), sinfo_args=(sinfo,))


class IOEffect(Effect):
    """The IO effect of `export_tvm(debug=True)`: a null object named `_io` that orders
    debug side effects; every method takes it and returns it."""

    def __init__(self) -> None:
        self.effect: Var | None = None

    def emit_init(self, name_hint: str, builder: BlockBuilder) -> list[Var]:
        return [builder.emit(null_value(), "_io")]

    def create(self, name_hint: str) -> list[Var]:
        return [Var("_io", ObjectStructInfo())]

    def set_state(self, state_vars: list[Var]) -> None:
        (self.effect,) = state_vars

    def finalize(self) -> list[Var]:
        result, self.effect = self.effect, None
        return [result]


def _check_dims(values: Sequence[Any], what: str) -> list[int]:
    dims = list(values)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise ArgumentError(f"{what}: dims must be non-negative ints, got {dims}")
    return dims


class KVCache(Effect):
    """A growable cache of elements of shape `unit_shape` (usually `[num_heads, head_dim]`),
    created with room for `init_seq_len` of them (it grows past that).

    >>> self.k_cache = nn.KVCache(16, [2, 4])      # in __init__
    >>> self.k_cache.append(k)                      # in forward: k is (n, 2, 4) or (2, 4)
    >>> past_k = self.k_cache.view(total_seq_len)   # (total_seq_len, 2, 4)
    """

    def __init__(
        self, init_seq_len: int, unit_shape: Sequence[int], dtype: str | None = None
    ) -> None:
        (self.init_seq_len,) = _check_dims([init_seq_len], "nn.KVCache: init_seq_len")
        self.unit_shape = _check_dims(unit_shape, "nn.KVCache: unit_shape")
        self.dtype = get_default_dtype() if dtype is None else str(dtype)
        self.cache: Var | None = None

    def __repr__(self) -> str:
        return f"KVCache({self.init_seq_len}, {self.unit_shape}, {self.dtype!r})"

    def emit_init(self, name_hint: str, bb: BlockBuilder) -> list[Var]:
        shape = ShapeExpr((self.init_seq_len, *self.unit_shape))
        init = bb.emit(zeros(shape, self.dtype))
        fill = PrimValue(IntImm("int64", 0))  # zeros reserve the room; none of them is stored
        call = _builtin_call(
            "vm.builtin.attention_kv_cache_create", (init, shape, fill), ObjectStructInfo()
        )
        return [bb.emit(call, name_hint)]

    def create(self, name_hint: str) -> list[Var]:
        return [Var(name_hint, ObjectStructInfo())]

    def set_state(self, state_vars: list[Var]) -> None:
        (self.cache,) = state_vars

    def finalize(self) -> list[Var]:
        result, self.cache = self.cache, None
        return [result]

    def to(self, dtype: str | None = None) -> None:
        if dtype is not None:
            self.dtype = str(dtype)

    def _current(self, what: str) -> Var:
        if self.cache is None:
            raise MiniTVMError(
                f"nn.KVCache.{what}: the cache exists only while a method of its module is "
                "exported; call it inside forward (or another exported method)"
            )
        return self.cache

    def view(self, seq_len: Any) -> Tensor:
        """The stored elements as a `(seq_len, *unit_shape)` tensor; at run time `seq_len` must
        equal the number of elements stored so far (TVM's runtime checks the same)."""
        cache = self._current("view")
        if isinstance(seq_len, bool) or not isinstance(seq_len, int | PrimExpr):
            raise ArgumentError(
                f"nn.KVCache.view: seq_len must be an int or a symbolic size (a tir "
                f"expression, e.g. a spec.Int input), got {type(seq_len).__name__}"
            )
        if isinstance(seq_len, int) and seq_len < 0:
            raise ShapeError(f"nn.KVCache.view: seq_len {seq_len} is negative")
        shape = ShapeExpr((seq_len, *self.unit_shape))
        sinfo = TensorStructInfo(shape, self.dtype)
        call = _builtin_call("vm.builtin.attention_kv_cache_view", (cache, shape), sinfo)
        return Tensor(_expr=current_builder("KVCache.view").emit(call))

    def append(self, new_element: Tensor) -> None:
        """Append `new_element`: one element (`unit_shape`) or `n` of them
        (`(n, *unit_shape)`)."""
        cache = self._current("append")
        if not isinstance(new_element, Tensor):
            raise ArgumentError(
                f"nn.KVCache.append: expected an nn.Tensor, got {type(new_element).__name__}"
            )
        if new_element.dtype != self.dtype:
            raise DTypeError(
                f"nn.KVCache.append: the cache holds {self.dtype}, the new element is "
                f"{new_element.dtype}; convert it with nn.op.astype(x, '{self.dtype}')"
            )
        shape, unit = new_element.shape, self.unit_shape
        tail = shape[1:] if len(shape) == len(unit) + 1 else shape
        if len(tail) != len(unit) or any(isinstance(d, int) and d != u for d, u in zip(tail, unit)):
            raise ShapeError(
                f"nn.KVCache.append: the new element has shape {shape}, but the cache holds "
                f"elements of shape {unit}; append {unit} or (n, {', '.join(map(str, unit))})"
            )
        call = _builtin_call(
            "vm.builtin.attention_kv_cache_append", (cache, new_element._expr), ObjectStructInfo()
        )
        self.cache = current_builder("KVCache.append").emit(call)


__all__ = ["IOEffect", "KVCache"]
