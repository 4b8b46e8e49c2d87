"""The VM program's rules, checked before a VirtualMachine runs it (docs/reliability.md, "VM
programs"): an exported program is untrusted data, and its checksums only catch accidents.

A program that passes cannot make the VM jump outside it, loop, index a register, constant,
storage or heap slot that does not exist, call a function with the wrong number of arguments,
read a register before it is written, return or read uninitialised memory, or let a kernel
write into anything but a tensor the VM allocated (never an input, a constant or a planned
storage that is returned). Every rule states what the code generator (codegen.py) emits:

- jumps (`If`, `Goto`) go forward, to an instruction of the same function; the call graph has
  no cycle, and one call runs at most `MAX_STEPS` instructions, callees included;
- each register is written by one instruction, except the result of an `If`, written by one
  `Move` per branch; parameters are never written; every read is preceded, on every path, by a
  write; `Ret` is the last instruction and only there;
- each heap slot (symbolic dim) is bound by one match instruction;
- a tensor made by `AllocTensor` is read (or returned) only after a kernel wrote it; a kernel's
  written arguments (its FuncInfo's `writes`) are tensors the VM allocated in this call.
"""

from __future__ import annotations

import re
from typing import Any

from ...error import MiniTVMError, RuntimeError_
from ...ir.dtype import DataType

MAX_STEPS = 1 << 22  # instructions one call may run, callees included (no loops: a static bound)
MAX_INSTRUCTIONS = 1 << 20  # per function
MAX_REGS = 1 << 24

_FUNCTION_FIELDS = {
    "name": str,
    "params": list,
    "num_regs": int,
    "dims": list,
    "storages": list,
    "stats": dict,
    "code": list,
}
_STATS_FIELDS = {
    "num_intermediates": int,
    "num_outputs": int,
    "num_storages": int,
    "planned": bool,
    "intermediate_bytes": str,
    "allocated_bytes": str,
}

# opcode -> the kind of each operand (checked by _OPERAND_KINDS); mirrors codegen's docstring
OPERANDS: dict[str, tuple[str, ...]] = {
    "MatchTensor": ("read", "str", "dtype?", "ndim", "dims?", "at"),
    "MatchShape": ("read", "str", "ndim", "dims?", "at"),
    "MatchPrim": ("read", "str", "dim", "at"),
    "MatchTuple": ("read", "str", "offset", "at"),
    "AllocStorage": ("storage", "str"),
    "AllocTensor": ("write", "sid", "offset", "strs", "dtype"),
    "LoadConst": ("write", "const"),
    "LoadImm": ("write", "imm"),
    "CallTIR": ("str", "regs", "strs"),
    "CallPacked": ("str", "regs"),
    "CallBuiltin": ("write", "str", "regs"),
    "Call": ("write", "str", "regs"),
    "MakeTuple": ("write", "regs"),
    "GetItem": ("write", "read", "offset"),
    "Move": ("write", "read"),
    "MakeShape": ("write", "strs"),
    "MakeScalar": ("write", "str"),
    "If": ("read", "pc"),
    "Goto": ("pc",),
    "Ret": ("read",),
}


def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_dtype(v: Any) -> bool:
    if type(v) is not str or len(v) > 32:
        return False
    try:
        DataType(v).numpy_dtype()
    except (MiniTVMError, ValueError, TypeError):
        return False
    return True


def _is_dim(v: Any, f: dict) -> bool:
    if type(v) is int:
        return 0 <= v < 1 << 63
    if not (isinstance(v, list) and len(v) == 2):
        return False
    if v[0] == "bind":
        return _is_int(v[1]) and 0 <= v[1] < len(f["dims"])
    return v[0] == "check" and type(v[1]) is str


# operand kind -> is_valid(value, function)
_OPERAND_KINDS = {
    "read": lambda v, f: _is_int(v) and 0 <= v < f["num_regs"],
    "write": lambda v, f: _is_int(v) and len(f["params"]) <= v < f["num_regs"],
    "regs": lambda v, f: isinstance(v, list) and all(_OPERAND_KINDS["read"](r, f) for r in v),
    "str": lambda v, f: type(v) is str,
    "imm": lambda v, f: v is None or type(v) in (str, float),
    "strs": lambda v, f: isinstance(v, list) and all(type(s) is str for s in v),
    "dtype": lambda v, f: _is_dtype(v),
    "dtype?": lambda v, f: v is None or _is_dtype(v),
    "ndim": lambda v, f: _is_int(v) and -1 <= v < 64,
    "dims?": lambda v, f: v is None or (isinstance(v, list) and all(_is_dim(d, f) for d in v)),
    "dim": _is_dim,
    "at": lambda v, f: v in ("param", "body"),
    "storage": lambda v, f: _is_int(v) and 0 <= v < len(f["storages"]),
    "sid": lambda v, f: _is_int(v) and -1 <= v < len(f["storages"]),
    "offset": lambda v, f: _is_int(v) and 0 <= v < 1 << 62,
    "const": lambda v, f: _is_int(v) and 0 <= v < f["_n_consts"],
    "pc": lambda v, f: _is_int(v) and 0 <= v < len(f["code"]),
}


class ProgramError(RuntimeError_):
    """A VM program that breaks one of the rules of minitvm/relax/vm/verify.py."""


def verify_program(program: Any, kernels: dict | None, n_consts: int, where: str) -> dict:
    """Check `program` (program.json) against the rules above; `kernels` maps each kernel name
    of the native module to its FuncInfo (None: not known yet, kernel calls are checked when the
    VM is made). Returns, per function, the registers written by more than one instruction."""

    def fail(what: str) -> ProgramError:
        return ProgramError(f"{where}: program.json: {what}; export it again")

    if not isinstance(program, dict) or program.get("format") != "minitvm-vm":
        raise fail("unknown VM program format")
    if program.get("version") != 1 or not isinstance(program.get("functions"), dict):
        raise fail("unknown VM program version or no functions")
    functions = program["functions"]
    for name, func in functions.items():
        _check_fields(name, func, n_consts, fail)
    steps: dict = {}
    order: list[str] = []  # callees before their callers
    for name in functions:
        _walk_calls(name, functions, [], steps, order, fail)
    passthrough: dict = {}  # function -> the params it may return
    multi = {}
    for name in order:
        multi[name] = _Flow(name, functions, kernels, passthrough, fail).run()
    return multi


def _check_fields(name: str, func: Any, n_consts: int, fail) -> None:
    """Types of a function's fields and of every operand of every instruction."""
    if not isinstance(func, dict) or set(func) != set(_FUNCTION_FIELDS):
        raise fail(f"function {name!r} does not have the fields {sorted(_FUNCTION_FIELDS)}")
    for key, kind in _FUNCTION_FIELDS.items():
        if type(func[key]) is not kind:
            raise fail(f"function {name!r}: {key} is not a {kind.__name__}")
    texts = [*func["params"], *func["dims"], *func["storages"]]
    if not all(type(t) is str for t in texts) or not 0 <= func["num_regs"] < MAX_REGS:
        raise fail(f"function {name!r}: malformed params, dims, storages or num_regs")
    if func["name"] != name or len(func["params"]) > func["num_regs"]:
        raise fail(f"function {name!r}: its name or its number of registers is inconsistent")
    stats = func["stats"]
    if set(stats) != set(_STATS_FIELDS) or any(
        type(stats[k]) is not t for k, t in _STATS_FIELDS.items()
    ):
        raise fail(f"function {name!r}: stats must have the fields {sorted(_STATS_FIELDS)}")
    code = func["code"]
    if not 0 < len(code) <= MAX_INSTRUCTIONS:
        raise fail(f"function {name!r} has {len(code)} instructions (1 to {MAX_INSTRUCTIONS})")
    view = dict(func, _n_consts=n_consts)
    for pc, ins in enumerate(code):
        if (
            not isinstance(ins, list)
            or not ins
            or type(ins[0]) is not str
            or ins[0] not in OPERANDS
        ):
            raise fail(f"function {name!r}: instruction {pc} is not a known VM opcode")
    if [pc for pc, ins in enumerate(code) if ins[0] == "Ret"] != [len(code) - 1]:
        raise fail(f"function {name!r}: Ret must be the last instruction, and only it")
    for pc, ins in enumerate(code):
        kinds = OPERANDS[ins[0]]
        if len(ins) != len(kinds) + 1:
            raise fail(
                f"function {name!r}: instruction {pc} ({ins[0]}) has {len(ins) - 1} operands, "
                f"expected {len(kinds)}"
            )
        for k, (kind, value) in enumerate(zip(kinds, ins[1:])):
            if not _OPERAND_KINDS[kind](value, view):
                raise fail(
                    f"function {name!r}: instruction {pc} ({ins[0]}): operand {k} "
                    f"{json_short(value)} is not a valid {kind}"
                )
        if ins[0] in ("If", "Goto") and ins[-1] <= pc:
            raise fail(
                f"function {name!r}: instruction {pc} ({ins[0]}) jumps back to {ins[-1]}; the VM "
                "runs programs without loops, whose jumps go forward"
            )
        if ins[0] in ("MatchTensor", "MatchShape") and ins[-2] is not None:
            ndim, dims = ins[-3], ins[-2]
            if len(dims) != ndim:
                raise fail(f"function {name!r}: instruction {pc}: {ndim} dims but {dims}")
        if ins[0].startswith("Match") and ins[-1] == "param" and ins[1] >= len(func["params"]):
            raise fail(f"function {name!r}: instruction {pc} checks register {ins[1]} as a param")


def _walk_calls(name: str, functions: dict, stack: list, memo: dict, order: list, fail) -> int:
    """Instructions one call of `name` may run (callees included); refuses a cycle. Appends
    `name` to `order` after its callees."""
    if name in memo:
        return memo[name]
    if name in stack:
        cycle = " -> ".join([*stack[stack.index(name) :], name])
        raise fail(f"the functions call each other in a cycle ({cycle}); the VM runs no recursion")
    stack.append(name)
    steps = len(functions[name]["code"])
    for pc, ins in enumerate(functions[name]["code"]):
        if ins[0] == "Call":
            if ins[2] not in functions:
                raise fail(f"function {name!r}: instruction {pc} calls unknown function {ins[2]!r}")
            steps += _walk_calls(ins[2], functions, stack, memo, order, fail)
            if steps > MAX_STEPS:
                break
    stack.pop()
    if steps > MAX_STEPS:
        raise fail(
            f"one call of function {name!r} runs more than {MAX_STEPS} instructions (callees "
            "included); no program the compiler writes comes near"
        )
    memo[name] = steps
    order.append(name)
    return steps


_FRESH, _PLANNED, _CONST = "a tensor allocated by the call", "a planned tensor", "a constant"


class _Flow:
    """One forward pass over a function (jumps go forward, so every predecessor of an
    instruction comes before it): which registers are written, and which hold uninitialised
    tensors, on every path; and what each register may hold."""

    def __init__(self, name, functions, kernels, passthrough, fail) -> None:
        self.name, self.func, self.functions = name, functions[name], functions
        self.kernels, self.passthrough, self.fail_ = kernels, passthrough, fail
        self.code = self.func["code"]
        n = len(self.func["params"])
        self.origins: dict[int, set] = {r: {("param", r)} for r in range(n)}
        self.writers: dict[int, list] = {}
        self.bound: set[int] = set()
        self.tuples: dict[int, list] = {}  # register of a MakeTuple -> its field registers

    def fail(self, pc: int, what: str) -> ProgramError:
        return self.fail_(f"function {self.name!r}: instruction {pc} ({self.code[pc][0]}): {what}")

    def run(self) -> set:
        self._bind_slots()
        for text in _shape_texts(self.func):
            for m in re.findall(r"h\[(\d+)\]", text):
                if int(m) not in self.bound:
                    raise self.fail_(
                        f"function {self.name!r}: the shape expression {json_short(text)} uses "
                        f"heap slot {m}, which no match instruction binds"
                    )
        n = len(self.func["params"])
        incoming: dict[int, list] = {}
        state: tuple | None = (set(range(n)), {})  # written regs, uninitialised reg -> its pc
        for pc, ins in enumerate(self.code):
            merged = [s for s in ([state] if state else []) + incoming.pop(pc, [])]
            if not merged:
                state = None  # unreachable (after a Goto)
                continue
            state = merged[0] if len(merged) == 1 else _merge(merged)
            self._step(pc, ins, state)
            if ins[0] in ("If", "Goto"):
                incoming.setdefault(ins[-1], []).append((set(state[0]), dict(state[1])))
                if ins[0] == "Goto":
                    state = None
        multi = {r for r, w in self.writers.items() if len(w) > 1}
        for r in multi:
            ops = {self.code[pc][0] for pc in self.writers[r]}
            if ops != {"Move"}:
                raise self.fail(
                    self.writers[r][1], f"register {r} is also written by instruction "
                    f"{self.writers[r][0]}; each register is written once (an If's result "
                    "once per branch, by Move)"
                )  # fmt: skip
        return multi

    def _bind_slots(self) -> None:
        for pc, ins in enumerate(self.code):
            if not ins[0].startswith("Match") or ins[0] == "MatchTuple":  # binds no dims
                continue
            dims = [ins[3]] if ins[0] == "MatchPrim" else ins[-2] or ()
            for d in dims:
                if type(d) is list and d[0] == "bind":
                    if d[1] in self.bound:
                        raise self.fail(pc, f"heap slot {d[1]} is bound twice; each dim once")
                    self.bound.add(d[1])

    # ------------------------------------------------------------------ per instruction
    def _read(self, pc: int, reg: int, state: tuple) -> None:
        written, uninit = state
        if reg not in written:
            raise self.fail(pc, f"reads register {reg}, which no instruction before it writes")
        if reg in uninit:
            raise self.fail(
                pc, f"reads register {reg}, a tensor allocated by instruction {uninit[reg]} that "
                "no kernel has written yet (uninitialised memory)"
            )  # fmt: skip

    def _write(self, pc: int, reg: int, state: tuple, origin: set) -> None:
        self.writers.setdefault(reg, []).append(pc)
        state[0].add(reg)
        state[1].pop(reg, None)
        self.origins[reg] = self.origins.get(reg, set()) | origin

    def _step(self, pc: int, ins: list, state: tuple) -> None:
        op = ins[0]
        if op == "CallTIR":
            return self._call_tir(pc, ins, state)
        if op == "CallPacked":  # it may be given uninitialised tensors: its outputs
            for r in ins[2]:
                self._read(pc, r, (state[0], {}))
            for r in ins[2]:
                state[1].pop(r, None)
            return None
        for kind, value in zip(OPERANDS[op], ins[1:]):
            if kind == "read" and not (op.startswith("Match") and ins[-1] == "param"):
                self._read(pc, value, state)
            elif kind == "regs":
                for r in value:
                    self._read(pc, r, state)
        if op == "Call":
            callee = self.functions[ins[2]]
            if len(ins[3]) != len(callee["params"]):
                raise self.fail(
                    pc, f"passes {len(ins[3])} arguments to {ins[2]!r}, which has "
                    f"{len(callee['params'])} parameters"
                )  # fmt: skip
        origin = self._origin(op, ins)
        if op == "Ret":
            if any(o == _PLANNED for o in self.origins[ins[1]]):
                raise self.fail(
                    pc, "returns a tensor of a planned storage, which the next call overwrites"
                )
            self.passthrough[self.name] = {o[1] for o in self.origins[ins[1]] if type(o) is tuple}
        elif OPERANDS[op][:1] == ("write",):
            self._write(pc, ins[1], state, origin)
            # a tensor with a static zero dim has no element to leave uninitialised (a kernel
            # that writes it has an empty body, and its metadata lists no write)
            if op == "AllocTensor" and "0" not in [str(d).strip() for d in ins[4]]:
                state[1][ins[1]] = pc
        return None

    def _origin(self, op: str, ins: list) -> set:
        """What the written register may hold: params, fresh or planned tensors, constants."""
        if op == "AllocTensor":
            return {_PLANNED if ins[2] >= 0 else _FRESH}
        if op == "LoadConst":
            return {_CONST}
        if op == "GetItem" and ins[3] < len(self.tuples.get(ins[2], ())):  # a known field
            return set(self.origins[self.tuples[ins[2]][ins[3]]])
        if op in ("Move", "GetItem"):
            return set(self.origins[ins[2]])
        if op == "MakeTuple":
            self.tuples[ins[1]] = ins[2]
            return set().union(*[self.origins[r] for r in ins[2]])
        if op == "CallBuiltin":  # its result may be (a view of) any argument
            return set().union({_FRESH}, *[self.origins[r] for r in ins[3]])
        if op == "Call":
            through = self.passthrough.get(ins[2], set())
            args = [self.origins[ins[3][i]] for i in through if i < len(ins[3])]
            return set().union({_FRESH}, *args)
        return set()

    def _call_tir(self, pc: int, ins: list, state: tuple) -> None:
        _, kernel, regs, scalars = ins
        if self.kernels is None:  # which arguments it writes is not known yet
            for r in regs:
                self._read(pc, r, (state[0], {}))
                state[1].pop(r, None)
            return
        info = self.kernels.get(kernel)
        if info is None:
            raise self.fail(pc, f"calls kernel {kernel!r}, which the native module does not have")
        kinds = [p["kind"] for p in info["params"]]
        # a register may fill a scalar param (an R.Prim input; the kernel's checked first call
        # checks its value), the trailing tir_vars fill only scalar params
        want = kinds[: len(regs)] + ["scalar"] * len(scalars)
        if kinds != want:
            raise self.fail(
                pc, f"passes {len(regs)} tensors and {len(scalars)} scalars to kernel "
                f"{kernel!r}, whose parameters are {kinds}"
            )  # fmt: skip
        writes = set(info.get("writes", range(len(regs))))
        for j, r in enumerate(regs):
            if j not in writes:
                self._read(pc, r, state)
                continue
            self._read(pc, r, (state[0], {}))  # written: may be uninitialised
            bad = self.origins[r] - {_FRESH, _PLANNED}
            if bad or not self.origins[r]:
                what = ", ".join(sorted(o if type(o) is str else f"parameter {o[1]}" for o in bad))
                raise self.fail(
                    pc, f"kernel {kernel!r} writes its argument {j} (register {r}), which may "
                    f"hold {what or 'a value'}; a kernel writes only tensors the VM allocated"
                )  # fmt: skip
        for j in writes:
            if j < len(regs):
                state[1].pop(regs[j], None)


def _merge(states: list) -> tuple:
    written = set.intersection(*[s[0] for s in states])
    uninit: dict = {}
    for s in states:
        uninit.update(s[1])
    return written, uninit


def json_short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def kernel_infos(mod: Any) -> dict:
    """Kernel name -> FuncInfo of an Executable's native module (empty when it has none)."""
    if mod is None:
        return {}
    return {info["name"]: info for info in mod.func_infos}


def _shape_texts(func: dict) -> list[str]:
    """Every shape expression of a function (all are compiled by _shape_code.py)."""
    texts = list(func["storages"])
    texts += [func["stats"]["intermediate_bytes"], func["stats"]["allocated_bytes"]]
    for ins in func["code"]:
        op = ins[0]
        if op == "AllocTensor":
            texts += ins[4]
        elif op in ("MakeShape", "CallTIR"):
            texts += ins[-1]
        elif op == "MakeScalar":
            texts.append(ins[2])
        elif op.startswith("Match") and op != "MatchTuple":  # MatchTuple: a length, no dims
            dims = [ins[3]] if op == "MatchPrim" else ins[-2] or ()
            texts += [d[1] for d in dims if type(d) is list and d[0] == "check"]
    return texts
