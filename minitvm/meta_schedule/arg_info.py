"""Argument descriptions of a tuned function (what the runner allocates), as plain data."""

from __future__ import annotations

from typing import Any

from ..error import TuningError
from ..ir import IRModule
from ..tir import IntImm, PrimFunc
from .utils import main_func


class ArgInfo:
    """Base of argument descriptions; `from_prim_func` lists a function's buffer params."""

    def as_json(self) -> list:
        raise NotImplementedError

    @staticmethod
    def from_json(obj: Any) -> ArgInfo:
        """A TensorInfo from `["TENSOR", dtype, shape]`; anything else is refused."""
        ok = (
            isinstance(obj, list)
            and len(obj) == 3
            and obj[0] == "TENSOR"
            and isinstance(obj[1], str)
            and isinstance(obj[2], list)
            and all(type(d) is int and d >= 0 for d in obj[2])
        )
        if not ok:
            raise TuningError(f"arg info JSON must be ['TENSOR', dtype, [dims]], got {obj!r:.80}")
        return TensorInfo(obj[1], obj[2])

    @staticmethod
    def from_prim_func(func: PrimFunc) -> list[ArgInfo]:
        """One TensorInfo per buffer param; symbolic dims cannot be measured and are refused."""
        infos = []
        for param in func.params:
            buf = func.buffer_map.get(param)
            if buf is None:
                raise TuningError(
                    f"cannot tune a function with scalar param '{param.name}': the runner "
                    "only allocates buffers; bind the scalar first"
                )
            dims = []
            for d in buf.shape:
                if not isinstance(d, IntImm):
                    raise TuningError(
                        f"cannot tune buffer '{buf.name}' with symbolic dim {d}: bind the "
                        "shape to numbers before tuning"
                    )
                dims.append(int(d.value))
            infos.append(TensorInfo(str(buf.dtype), dims))
        return infos

    @staticmethod
    def from_entry_func(mod: IRModule, remove_preproc: bool = True) -> list[ArgInfo]:
        return ArgInfo.from_prim_func(main_func(mod))


class TensorInfo(ArgInfo):
    """A tensor argument: dtype and static shape."""

    def __init__(self, dtype: str, shape: Any) -> None:
        self.dtype = str(dtype)
        self.shape = tuple(int(d) for d in shape)

    def as_json(self) -> list:
        return ["TENSOR", self.dtype, list(self.shape)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorInfo) and (self.dtype, self.shape) == (
            other.dtype,
            other.shape,
        )

    def __hash__(self) -> int:
        return hash((self.dtype, self.shape))

    def __repr__(self) -> str:
        return f'TensorInfo("{self.dtype}", {list(self.shape)})'
