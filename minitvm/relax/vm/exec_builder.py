"""TVM's `relax.ExecBuilder`: write a VM program by hand, instruction by instruction.

    ib = relax.ExecBuilder()
    with ib.function("add", num_inputs=2):
        ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    vm = relax.VirtualMachine(ib.get(), tvm.cpu())

TVM's instructions are translated into this VM's program format (codegen.py's docstring):
a non-register argument (immediate, constant, shape, string, dtype) is loaded into a fresh
register first, a register written more than once is written through `Move`, and jump offsets
are mapped to the translated program. `get()` checks the result with the same verifier
(verify.py) that checks every program the VM runs, so a hand-written program is held to the
rules of a compiled or loaded one: jumps only forward, no read before a write, no recursion.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Any

import numpy as np

from ...error import ArgumentError, BuildError
from ...ir.dtype import DataType
from ...runtime import NDArray
from .executable import Executable
from .verify import verify_program

__all__ = ["ExecBuilder", "SpecialReg", "VMFuncKind", "VMFuncScope"]


class SpecialReg(IntEnum):
    """TVM's special registers (arguments that are not a register of the frame)."""

    VOID_ARG = 0x00EC866EF0000000
    VM_STATE = 0x008D14FA4379015C


class VMFuncKind(IntEnum):
    """What a declared function name refers to: a registered packed function or a VM one."""

    PACKED_FUNC = 0
    VM_FUNC = 1


class _Kind(Enum):
    REG = "register"
    IMM = "immediate"
    CONST = "constant"
    FUNC = "function"
    VOID = "void"
    VM_STATE = "vm_state"


@dataclass(frozen=True)
class _Arg:
    """An instruction argument: equal arguments compare equal (`convert_constant` caches)."""

    kind: _Kind
    value: Any

    def __repr__(self) -> str:
        return f"{self.kind.value}({self.value!r})"


class VMFuncScope:
    """The `with ib.function(...)` scope: leaving it ends the function."""

    def __init__(self, exit_callback: Any) -> None:
        self._exit = exit_callback

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._exit()


@dataclass
class _Func:
    name: str
    num_inputs: int
    params: list[str]
    code: list[
        tuple
    ]  # TVM-level: ("call", func, args, dst) | ("ret", r) | ("goto", off) | ("if", r, off)


class ExecBuilder:
    """Builds an Executable from VM instructions written one by one (TVM's ExecBuilder)."""

    def __init__(self) -> None:
        self._funcs: dict[str, _Func] = {}
        self._declared: dict[str, VMFuncKind] = {}
        self._current: _Func | None = None
        self._constants: list[np.ndarray] = []
        self._const_keys: dict[Any, _Arg] = {}

    # ------------------------------------------------------------------ operands
    def r(self, idx: int) -> _Arg:
        """Register `idx` of the current function (its inputs are registers 0..num_inputs-1)."""
        if type(idx) is not int or idx < 0:
            raise ArgumentError(f"ExecBuilder.r({idx!r}): a register is an int >= 0")
        return _Arg(_Kind.REG, idx)

    def imm(self, value: int) -> _Arg:
        """An integer immediate."""
        if not isinstance(value, int | np.integer) or isinstance(value, bool):
            raise ArgumentError(f"ExecBuilder.imm({value!r}): an immediate is an int")
        return _Arg(_Kind.IMM, int(value))

    def c(self, idx: int) -> _Arg:
        """Constant `idx` of the pool (as returned by `convert_constant`)."""
        return _Arg(_Kind.CONST, idx)

    def f(self, name: str) -> _Arg:
        """A function of this executable as a value (refused by `get`: the VM has no closures)."""
        return _Arg(_Kind.FUNC, name)

    def void_arg(self) -> _Arg:
        """An argument left out (the callee sees None)."""
        return _Arg(_Kind.VOID, None)

    def vm_state(self) -> _Arg:
        """TVM's VM-state argument of its builtins (refused by `get`: ours take none)."""
        return _Arg(_Kind.VM_STATE, None)

    def convert_constant(self, const: Any) -> _Arg:
        """An argument for a constant value, the same one for equal values: an int, float,
        str, dtype, shape (tuple of ints / ShapeTuple), None, or a tensor (NDArray, numpy)."""
        if isinstance(const, NDArray | np.ndarray):
            data = np.ascontiguousarray(const.numpy() if isinstance(const, NDArray) else const)
            key = ("tensor", data.dtype.str, data.shape, data.tobytes())
            if key not in self._const_keys:
                self._constants.append(data)
                self._const_keys[key] = _Arg(_Kind.CONST, len(self._constants) - 1)
            return self._const_keys[key]
        value = self._literal(const)
        key = (type(value).__name__, value)
        return self._const_keys.setdefault(key, _Arg(_Kind.IMM, value))

    @staticmethod
    def _literal(value: Any) -> Any:
        if value is None or isinstance(value, str | float | int) and not isinstance(value, bool):
            return value
        if isinstance(value, DataType):
            return str(value)
        if isinstance(value, tuple | list) and all(isinstance(v, int | np.integer) for v in value):
            return tuple(int(v) for v in value)  # a shape (ShapeTuple is a tuple)
        raise ArgumentError(
            f"ExecBuilder: cannot make a constant of {value!r:.60} ({type(value).__name__}); "
            "use an int, float, str, dtype, shape tuple, None or a tensor"
        )

    # ------------------------------------------------------------------ functions
    def declare_function(self, func_name: str, kind: VMFuncKind = VMFuncKind.PACKED_FUNC) -> None:
        """Declare `func_name` (a VM function defined later, or a packed function)."""
        self._declared[func_name] = VMFuncKind(kind)

    def function(
        self, func_name: str, num_inputs: int = 0, param_names: list[str] | None = None
    ) -> VMFuncScope:
        """`with ib.function(name, num_inputs):` writes the instructions of one function."""
        if self._current is not None:
            raise ArgumentError(
                f"ExecBuilder.function({func_name!r}): function {self._current.name!r} is still "
                "open; end it (leave its `with` block) first"
            )
        if func_name in self._funcs:
            raise ArgumentError(f"ExecBuilder.function: {func_name!r} is defined twice")
        params = list(param_names) if param_names else [f"arg{i}" for i in range(num_inputs)]
        if len(params) != num_inputs:
            raise ArgumentError(
                f"ExecBuilder.function({func_name!r}): {len(params)} param_names for "
                f"{num_inputs} inputs"
            )
        self._current = _Func(func_name, num_inputs, params, [])
        self._declared[func_name] = VMFuncKind.VM_FUNC

        def end() -> None:
            self._funcs[func_name] = self._current
            self._current = None

        return VMFuncScope(end)

    def _check_scope(self) -> _Func:
        if self._current is None:
            raise ArgumentError("ExecBuilder: emit_* is called outside `with ib.function(...)`")
        return self._current

    # ------------------------------------------------------------------ instructions
    def emit_call(self, name: str, args: list | None = None, dst: _Arg | None = None) -> None:
        """Call the VM function or registered packed function `name`; the result goes to
        register `dst` (None: the result is dropped)."""
        func = self._check_scope()
        if dst is not None and (not isinstance(dst, _Arg) or dst.kind is not _Kind.REG):
            raise ArgumentError(f"ExecBuilder.emit_call({name!r}): dst {dst!r} is not ib.r(i)")
        args = [a if isinstance(a, _Arg) else self.convert_constant(a) for a in args or ()]
        func.code.append(("call", name, args, dst))

    def emit_ret(self, result: _Arg) -> None:
        """Return register `result`."""
        self._check_scope().code.append(("ret", self._reg(result, "emit_ret")))

    def emit_goto(self, pc_offset: int) -> None:
        """Jump `pc_offset` instructions ahead."""
        self._check_scope().code.append(("goto", pc_offset))

    def emit_if(self, cond: _Arg, false_offset: int) -> None:
        """Go on when register `cond` is true, else jump `false_offset` instructions ahead."""
        self._check_scope().code.append(("if", self._reg(cond, "emit_if"), false_offset))

    @staticmethod
    def _reg(arg: Any, where: str) -> int:
        if not isinstance(arg, _Arg) or arg.kind is not _Kind.REG:
            raise ArgumentError(f"ExecBuilder.{where}: {arg!r} is not a register (ib.r(i))")
        return arg.value

    def get(self) -> Executable:
        """The Executable, checked by the VM's program verifier (a ProgramError if malformed)."""
        if self._current is not None:
            raise ArgumentError(
                f"ExecBuilder.get: function {self._current.name!r} is still open; leave its "
                "`with` block first"
            )
        functions = {name: _Translation(self, func).run() for name, func in self._funcs.items()}
        program = {"format": "minitvm-vm", "version": 1, "functions": functions}
        verify_program(program, {}, len(self._constants), "ExecBuilder.get")
        return Executable(None, program, list(self._constants))


class _Translation:
    """One function from TVM's instruction form into this VM's program format."""

    def __init__(self, builder: ExecBuilder, func: _Func) -> None:
        self.builder, self.func = builder, func
        self.where = f"ExecBuilder function {func.name!r}"
        self.regs: dict[int, int] = {i: i for i in range(func.num_inputs)}
        self.num_regs = func.num_inputs
        self.code: list[list] = []
        writes: dict[int, int] = {}
        for ins in func.code:
            if ins[0] == "call" and ins[3] is not None:
                writes[ins[3].value] = writes.get(ins[3].value, 0) + 1
        self.multi = {r for r, n in writes.items() if n > 1}

    def fresh(self) -> int:
        self.num_regs += 1
        return self.num_regs - 1

    def reg(self, r: int) -> int:
        """Our register for TVM's register `r` (numbered in order of first use)."""
        if r not in self.regs:
            self.regs[r] = self.fresh()
        return self.regs[r]

    def fail(self, what: str) -> BuildError:
        return BuildError(f"{self.where}: {what}")

    def run(self) -> dict:
        func = self.func
        if not func.code:
            raise self.fail("has no instructions; end it with ib.emit_ret(...)")
        rets = [i for i, ins in enumerate(func.code) if ins[0] == "ret"]
        if not rets:
            raise self.fail("never returns; end it with ib.emit_ret(...)")
        single_ret = rets == [len(func.code) - 1]
        result = None if single_ret else self.fresh()
        start: list[int] = []  # TVM pc -> our pc
        jumps: list[tuple[int, int, int]] = []  # (our pc, TVM pc, TVM target pc)
        ends: list[int] = []  # our pcs of Gotos to the final Ret
        for pc, ins in enumerate(func.code):
            start.append(len(self.code))
            op = ins[0]
            if op == "call":
                self.call(*ins[1:])
            elif op == "ret":
                if single_ret:
                    self.code.append(["Ret", self.reg(ins[1])])
                else:
                    self.code.append(["Move", result, self.reg(ins[1])])
                    ends.append(len(self.code))
                    self.code.append(["Goto", -1])
            else:
                jumps.append((len(self.code), pc, pc + ins[-1]))
                if op == "goto":
                    self.code.append(["Goto", -1])
                else:
                    self.code.append(["If", self.reg(ins[1]), -1])
        if not single_ret:
            self.code.append(["Ret", result])
        start.append(len(self.code) - (0 if single_ret else 1))
        for ours, pc, target in jumps:
            if not 0 <= target < len(func.code):
                raise self.fail(
                    f"instruction {pc} jumps to {target}, outside the function's "
                    f"{len(func.code)} instructions"
                )
            self.code[ours][-1] = start[target]
        for ours in ends:
            self.code[ours][-1] = len(self.code) - 1
        return self.function_dict()

    def call(self, name: str, args: list, dst: Any) -> None:
        regs = [self.operand(a, name) for a in args]
        callee = self.builder._declared.get(name)
        if dst is None:
            if callee is VMFuncKind.VM_FUNC:
                self.code.append(["Call", self.fresh(), name, regs])
            else:
                self.code.append(["CallPacked", name, regs])
            return
        target = self.fresh() if dst.value in self.multi else self.reg(dst.value)
        op = "Call" if callee is VMFuncKind.VM_FUNC else "CallBuiltin"
        self.code.append([op, target, name, regs])
        if dst.value in self.multi:
            self.code.append(["Move", self.reg(dst.value), target])

    def operand(self, arg: _Arg, callee: str) -> int:
        """The register holding `arg`: loads an immediate or a constant first."""
        kind, value = arg.kind, arg.value
        if kind is _Kind.REG:
            return self.reg(value)
        if kind in (_Kind.FUNC, _Kind.VM_STATE):
            raise self.fail(
                f"a call of {callee!r} takes {arg!r}: this VM has no closures and its builtins "
                "take no VM state; call the function by name with emit_call instead"
            )
        dst = self.fresh()
        if kind is _Kind.CONST:
            if type(value) is not int or not 0 <= value < len(self.builder._constants):
                raise self.fail(f"a call of {callee!r} takes constant {value!r}, which is not one")
            self.code.append(["LoadConst", dst, value])
        elif kind is _Kind.VOID or value is None or isinstance(value, str | float):
            self.code.append(["LoadImm", dst, value])
        elif isinstance(value, int):
            self.code.append(["MakeScalar", dst, str(value)])
        else:  # a shape
            self.code.append(["MakeShape", dst, [str(v) for v in value]])
        return dst

    def function_dict(self) -> dict:
        return {
            "name": self.func.name,
            "params": list(self.func.params),
            "num_regs": self.num_regs,
            "dims": [],
            "storages": [],
            "stats": {
                "num_intermediates": 0,
                "num_outputs": 0,
                "num_storages": 0,
                "planned": False,
                "intermediate_bytes": "0",
                "allocated_bytes": "0",
            },
            "code": self.code,
        }
