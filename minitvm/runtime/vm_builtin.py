"""Runtime builtins of the relax VM under TVM's names (`vm.builtin.*`), registered as global
functions at import: what `nn.KVCache` and TVM material call through packed calls.

    cache = get_global_func("vm.builtin.attention_kv_cache_create")(zeros, (16, 2, 4), 0)
    cache = get_global_func("vm.builtin.attention_kv_cache_append")(cache, k)  # k: (n, 2, 4)
    past = get_global_func("vm.builtin.attention_kv_cache_view")(cache, (n_total, 2, 4))

An `AttentionKVCache` is TVM's legacy (non-paged) cache: one growable host buffer of elements
of a fixed unit shape and dtype. Append copies elements in after the stored ones (doubling the
buffer when full); a view is an NDArray over the stored elements without a copy, as in TVM, so
it stays valid after later appends (they write past it, or into a new buffer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..error import ArgumentError, DTypeError, ShapeError
from .ndarray import NDArray, _aligned_empty, _dtype_str
from .registry import register_func

_CREATE = "vm.builtin.attention_kv_cache_create"
_APPEND = "vm.builtin.attention_kv_cache_append"
_VIEW = "vm.builtin.attention_kv_cache_view"


def _host_array(value: Any, what: str) -> np.ndarray:
    """The host data of a CPU tensor argument (an NDArray or a numpy array), not copied."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, NDArray):
        if value._data is None:  # a DeviceNDArray: its memory is not on the host
            raise ArgumentError(
                f"{what}: the tensor is on {value.device}; the attention KV cache keeps its "
                "buffer in host memory, so pass CPU tensors (copy with .copyto(tvm.cpu()))"
            )
        return value._data
    raise ArgumentError(f"{what}: expected a tensor (an NDArray), got {type(value).__name__}")


def _shape(value: Any, what: str) -> tuple[int, ...]:
    """A shape argument (the VM passes shapes as tuples of ints) as a tuple of ints."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        value = (value,)
    try:
        dims = tuple(value)
    except TypeError:
        dims = None
    if dims is None or not all(
        isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        raise ShapeError(f"{what}: expected a shape (a tuple of non-negative ints), got {value!r}")
    return tuple(int(d) for d in dims)


def _int(value: Any, what: str) -> int:
    """An int argument: a Python or numpy int, or a 0-d / one-element int tensor."""
    if isinstance(value, NDArray | np.ndarray):
        data = _host_array(value, what)
        if data.size == 1 and data.dtype.kind in "iu":
            return int(data.reshape(()))
    elif isinstance(value, int | np.integer) and not isinstance(value, bool):
        return int(value)
    raise ArgumentError(f"{what}: expected an int, got {value!r}")


class VMObject:
    """Base of the state objects builtins make and the relax VM carries in its registers (an
    R.Object value): a VM function may take one back as an argument."""

    __slots__ = ()


class AttentionKVCache(VMObject):
    """TVM's legacy attention KV cache (`relax.vm.AttentionKVCacheLegacy`): stored elements of
    `unit_shape` in one host buffer that grows by doubling. Built by
    `vm.builtin.attention_kv_cache_create`; `fill_count` is the number of stored elements."""

    __slots__ = ("_data", "fill_count")

    def __init__(self, data: np.ndarray, fill_count: int = 0) -> None:
        self._data, self.fill_count = data, fill_count

    @property
    def unit_shape(self) -> tuple[int, ...]:
        return self._data.shape[1:]

    @property
    def dtype(self) -> str:
        return _dtype_str(self._data.dtype)

    @property
    def capacity(self) -> int:
        """Elements the buffer holds before it must grow."""
        return self._data.shape[0]

    def __repr__(self) -> str:
        return (
            f"AttentionKVCache({self.fill_count} of {self.capacity} elements of shape "
            f"{self.unit_shape}, {self.dtype})"
        )

    def append(self, value: Any) -> None:
        """Copy `value` in after the stored elements: one element (shape `unit_shape`) or `n`
        of them (shape `(n, *unit_shape)`)."""
        rows = self._rows(value, _APPEND)
        need = self.fill_count + rows.shape[0]
        if need > self.capacity:
            grown = _aligned_empty((max(need, 2 * self.capacity), *self.unit_shape), rows.dtype)
            grown[: self.fill_count] = self._data[: self.fill_count]
            self._data = grown  # earlier views keep the old buffer alive and unchanged
        self._data[self.fill_count : need] = rows
        self.fill_count = need

    def view(self, shape: Any = None) -> NDArray:
        """The stored elements as an NDArray of shape `(fill_count, *unit_shape)`, sharing the
        cache's memory; `shape` (when given) must be exactly that, as in TVM."""
        want = (self.fill_count, *self.unit_shape)
        if shape is not None:
            got = _shape(shape, f"{_VIEW}: shape")
            if len(got) == len(want) and got[0] != self.fill_count:
                raise ShapeError(
                    f"{_VIEW}: asked for a view of {got[0]} elements, but the cache holds "
                    f"{self.fill_count} (appended so far); the view's first dim must equal the "
                    "number of stored elements (pass the total sequence length)"
                )
            if got != want:
                raise ShapeError(
                    f"{_VIEW}: asked for shape {got}, but the cache stores elements of shape "
                    f"{self.unit_shape}; the view's shape must be {want}"
                )
        return NDArray(self._data[: self.fill_count])

    def pop(self, n: int) -> None:
        """Forget the last `n` stored elements."""
        if not 0 <= n <= self.fill_count:
            raise ArgumentError(
                f"vm.builtin.attention_kv_cache_array_popn: cannot pop {n} elements from a "
                f"cache holding {self.fill_count}"
            )
        self.fill_count -= n

    def clear(self) -> None:
        """Forget every stored element (the buffer is kept)."""
        self.fill_count = 0

    def _rows(self, value: Any, what: str) -> np.ndarray:
        """`value` as an (n, *unit_shape) array of the cache's dtype, or an error naming it."""
        data = _host_array(value, f"{what}: value")
        if data.dtype != self._data.dtype:
            raise DTypeError(
                f"{what}: the value has dtype {_dtype_str(data.dtype)}, but the cache stores "
                f"{self.dtype}; convert it first (e.g. .astype('{self.dtype}'))"
            )
        if data.shape == self.unit_shape:
            return data.reshape((1, *data.shape))
        if data.ndim != len(self.unit_shape) + 1 or data.shape[1:] != self.unit_shape:
            raise ShapeError(
                f"{what}: the value has shape {data.shape}, but the cache stores elements of "
                f"shape {self.unit_shape}; append one element of that shape or n of them as "
                f"(n, {', '.join(map(str, self.unit_shape))})"
            )
        return data


def _cache(value: Any, what: str) -> AttentionKVCache:
    if not isinstance(value, AttentionKVCache):
        raise ArgumentError(
            f"{what}: the first argument must be an attention KV cache (made by {_CREATE}), "
            f"got {type(value).__name__}"
        )
    return value


def attention_kv_cache_create(
    init_data: Any, reserve_shape: Any, init_fill_count: Any
) -> AttentionKVCache:
    """A cache with room for `reserve_shape[0]` elements of shape `reserve_shape[1:]`, holding
    `init_data` (n elements); `init_fill_count` >= 0 then says how many of them count as stored
    (nn.KVCache passes zeros and 0: an empty cache), -1 keeps all n."""
    data = _host_array(init_data, f"{_CREATE}: init_data")
    reserve = _shape(reserve_shape, f"{_CREATE}: reserve_shape")
    fill = _int(init_fill_count, f"{_CREATE}: init_fill_count")
    if not reserve or data.ndim != len(reserve) or data.shape[1:] != reserve[1:]:
        raise ShapeError(
            f"{_CREATE}: init_data has shape {data.shape} and reserve_shape is {reserve}; both "
            "must be (elements, *unit_shape) with the same unit shape"
        )
    if not -1 <= fill <= data.shape[0]:
        raise ArgumentError(
            f"{_CREATE}: init_fill_count is {fill}, but init_data holds {data.shape[0]} "
            "elements; pass -1 (all of them) or a count from 0 to that number"
        )
    _dtype_str(data.dtype)  # refuses a dtype that tensors cannot have
    cache = AttentionKVCache(_aligned_empty(reserve, data.dtype))
    cache.append(data)
    if fill >= 0:
        cache.fill_count = fill
    return cache


def attention_kv_cache_append(cache: Any, value: Any) -> AttentionKVCache:
    """Append `value` (one element or `(n, *unit_shape)`) to `cache` in place; returns it."""
    _cache(cache, _APPEND).append(value)
    return cache


def attention_kv_cache_view(cache: Any, shape: Any = None) -> NDArray:
    """The stored elements of `cache`, `(fill_count, *unit_shape)`, without a copy."""
    return _cache(cache, _VIEW).view(shape)


def attention_kv_cache_array_popn(caches: Any, n: Any) -> None:
    """Forget the last `n` elements of every cache in the sequence `caches`."""
    what = "vm.builtin.attention_kv_cache_array_popn"
    count = _int(n, f"{what}: n")
    checked = [_cache(c, what) for c in caches]
    for c in checked:
        c.pop(count)


def attention_kv_cache_array_clear(caches: Any) -> None:
    """Empty every cache in the sequence `caches`."""
    for c in [_cache(c, "vm.builtin.attention_kv_cache_array_clear") for c in caches]:
        c.clear()


def reshape(tensor: Any, shape: Any) -> NDArray:
    """`tensor` seen with another shape of the same number of elements (memory shared)."""
    data = _host_array(tensor, "vm.builtin.reshape: tensor")
    new = _shape(shape, "vm.builtin.reshape: shape")
    if int(np.prod(new, dtype=np.int64)) != data.size:
        raise ShapeError(
            f"vm.builtin.reshape: cannot view a tensor of shape {data.shape} ({data.size} "
            f"elements) as shape {new}; the number of elements must stay the same"
        )
    return NDArray(data.reshape(new))


def copy_into(src: Any, dst: Any) -> None:
    """Copy tensor `src` into `dst` (same shape and dtype, any device): how the VM gives an
    R.call_tir_inplace kernel its own copy of an input to overwrite."""
    if not isinstance(dst, NDArray):
        raise ArgumentError(f"vm.builtin.copy_into: dst must be an NDArray, got {type(dst)}")
    if tuple(src.shape) != tuple(dst.shape):
        raise ShapeError(
            f"vm.builtin.copy_into: src has shape {tuple(src.shape)}, dst {tuple(dst.shape)}"
        )
    dst.copyfrom(src)


def null_value() -> None:
    """The null object (what TVM's `R.null_value()` evaluates to; the IO effect's value)."""


def shape_of(tensor: Any) -> tuple[int, ...]:
    """The shape of a tensor, as the VM represents shapes (a tuple of ints)."""
    if isinstance(tensor, NDArray):
        return tuple(tensor.shape)
    return tuple(_host_array(tensor, "vm.builtin.shape_of: tensor").shape)


BUILTINS: dict[str, Callable] = {
    _CREATE: attention_kv_cache_create,
    _APPEND: attention_kv_cache_append,
    _VIEW: attention_kv_cache_view,
    "vm.builtin.attention_kv_cache_array_popn": attention_kv_cache_array_popn,
    "vm.builtin.attention_kv_cache_array_clear": attention_kv_cache_array_clear,
    "vm.builtin.reshape": reshape,
    "vm.builtin.copy_into": copy_into,
    "vm.builtin.null_value": null_value,
    "vm.builtin.shape_of": shape_of,
}

for _name, _fn in BUILTINS.items():
    register_func(_name, _fn, override=True)

# the paged KV cache's builtins (vm.builtin.kv_state_*, paged_attention_kv_cache_*) register
# themselves on import; it builds on the helpers above, so it is imported last
from . import vm_builtin_kv  # noqa: F401
