"""TVM's `nn.ExternModule` family: functions implemented outside the model, called by name.

`ext = nn.ExternModule({"my_add": infer})` and `ext["my_add"](a, b)` emit a `call_dps_packed`
of "my_add" whose outputs `infer(a, b)` describes (nn.Tensor placeholders), as in TVM. minitvm's
VM finds the function in the global registry at run time, so an extern function is one
registered with `tvm.register_func("my_add")`.

TVM's ObjectModule and SourceModule link native object code (SourceModule first runs a C++/CUDA
compiler). minitvm never loads foreign object code nor runs a compiler, so their `load()` refuses
and says what to do instead; building the calls into IR still works.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ....error import ArgumentError, BuildError
from ....tir.expr import FloatImm, IntImm
from ...expr import Expr, PrimValue, StringImm
from ...expr import Tuple as RxTuple
from .core import Tensor, wrap_nested
from .op import _out_sinfo


def _convert(arg: Any, name: str) -> Expr:
    """An extern call's argument as a relax expression (TVM's conversions)."""
    if isinstance(arg, Tensor):
        return arg._expr
    if isinstance(arg, bool | int):
        return PrimValue(IntImm("int64", int(arg)))
    if isinstance(arg, float):
        return PrimValue(FloatImm("float64", arg))
    if isinstance(arg, str):
        return StringImm(arg)
    if isinstance(arg, list | tuple):
        return RxTuple(tuple(_convert(e, f"{name}_{i}") for i, e in enumerate(arg)))
    raise ArgumentError(
        f"nn.ExternModule: argument {name!r} is a {type(arg).__name__}; pass nn.Tensor, int, "
        "float, str or a list/tuple of them"
    )


class ExternModule:
    """Functions defined outside the model: `symbols` maps each name to a function that takes
    the call's arguments and returns its output placeholders (nn.Tensor or a list of them)."""

    def __init__(self, symbols: Mapping[str, Callable]) -> None:
        for name, fn in symbols.items():
            if not callable(fn):
                raise ArgumentError(
                    f"nn.ExternModule: symbol {name!r} maps to a {type(fn).__name__}; map it to "
                    "a function returning the output nn.Tensor placeholder(s)"
                )
        self._symbols = dict(symbols)

    def __getitem__(self, func_name: str) -> Callable:
        if func_name not in self._symbols:
            raise ArgumentError(
                f"nn.ExternModule: no symbol {func_name!r}; it has {sorted(self._symbols)}"
            )
        infer = self._symbols[func_name]

        def _call(*input_args: Any) -> Any:
            from ...op.base import call_dps_packed

            out = _out_sinfo(infer(*input_args), f"ExternModule[{func_name!r}]")
            args = [_convert(a, f"arg{i}") for i, a in enumerate(input_args)]
            return wrap_nested(call_dps_packed(func_name, args, out), func_name)

        return _call

    def load(self) -> Any:
        """The runtime module holding the functions; each subclass says where it comes from."""
        raise NotImplementedError(
            f"{type(self).__name__}.load: ExternModule is abstract; in minitvm register each of "
            f"{sorted(self._symbols)} with tvm.register_func instead"
        )


class ObjectModule(ExternModule):
    """Functions in a prebuilt object file (`filepath`)."""

    def __init__(self, symbols: Mapping[str, Callable], filepath: str | Path) -> None:
        path = Path(filepath)
        if not path.is_file():
            raise ArgumentError(f"nn.ObjectModule: not a file: {str(path)!r}")
        super().__init__(symbols)
        self.filepath = path

    def load(self) -> Any:
        raise BuildError(
            f"nn.ObjectModule({str(self.filepath)!r}).load: minitvm does not load foreign object "
            f"code; register {sorted(self._symbols)} with tvm.register_func (a Python function "
            "writing its outputs in place) or write them as TIR with nn.op.tensor_ir_op"
        )


class SourceModule(ExternModule):
    """Functions in C++/CUDA source that TVM compiles when loading (`source_code` is the text or
    a path to it; `source_format` is "cpp" or "cu")."""

    def __init__(
        self,
        symbols: Mapping[str, Callable],
        source_code: str | Path,
        source_format: str,
        compile_options: list[str] | None = None,
        compiler: str | None = None,
        output_format: str = "obj",
    ) -> None:
        if source_format not in ("cpp", "cu"):
            raise ArgumentError(
                f"nn.SourceModule: source_format {source_format!r}: use 'cpp' or 'cu'"
            )
        super().__init__(symbols)
        path = Path(source_code) if isinstance(source_code, Path) else None
        if path is None and isinstance(source_code, str) and "\n" not in source_code:
            candidate = Path(source_code)
            path = candidate if candidate.is_file() else None
        self.source_code = path.read_text() if path is not None else str(source_code)
        self.source_format, self.compiler = source_format, compiler
        self.compile_options, self.output_format = list(compile_options or []), output_format

    def load(self) -> Any:
        raise BuildError(
            f"nn.SourceModule.load: compiling {self.source_format} source needs a C++/CUDA "
            "compiler, which minitvm never runs; register "
            f"{sorted(self._symbols)} with tvm.register_func or write them as TIR with "
            "nn.op.tensor_ir_op"
        )


__all__ = ["ExternModule", "ObjectModule", "SourceModule"]
