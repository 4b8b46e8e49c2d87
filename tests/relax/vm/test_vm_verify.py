"""A loaded VM program is untrusted data: an attacker can edit program.json and recompute every
checksum. Each hostile program below is refused by the verifier (minitvm/relax/vm/verify.py)
before anything of it runs; those that used to hang or crash the process run in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import MiniTVMError, RuntimeError_
from minitvm.relax import op
from minitvm.relax.vm import VirtualMachine, build, load_executable
from minitvm.relax.vm.verify import MAX_STEPS, ProgramError
from minitvm.runtime.meta import meta_digest, sha256


def _mlp():
    """main(x: (n, 3)) = relu(x @ w) + 0.5: LoadConst 1, LoadConst 2, AllocTensor 3, CallTIR."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 3), "float32"))
    bb = relax.BlockBuilder()
    w = np.arange(12, dtype="float32").reshape(3, 4) / 10
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(op.nn.relu(op.matmul(x, relax.const(w))))
            # a (4,) constant, not a 0-d one: a 0-d constant becomes an immediate of the
            # fused kernel (fuse_scalars.py) and these tests want two exported constants
            out = bb.emit_output(op.add(h, relax.const(np.full(4, 0.5, "float32"))))
        bb.emit_func_output(out)
    return build(bb.get())


def _add():
    """main(x: (n, 4)) = x + 1: LoadConst 1, AllocTensor 2, CallTIR add [0, 1, 2], Ret 2."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(op.add(x, relax.const(np.ones(4, "float32"))))
        bb.emit_func_output(out)
    return build(bb.get())


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("exports")
    paths = {}
    for name, make in (("mlp", _mlp), ("add", _add)):
        paths[name] = str(root / f"{name}.so")
        make().export_library(paths[name])
    return paths


def resign(src: str, dst, edit) -> str:
    """A copy of export `src` whose program.json was edited by `edit(main_code, program)` and
    whose checksums were recomputed exactly as export_library computes them."""
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    program = json.loads(members["program.json"])
    edit(program["functions"]["main"]["code"], program)
    members["program.json"] = json.dumps(program).encode()
    meta = json.loads(members["meta.json"])
    meta["checksums"]["program.json"] = sha256(members["program.json"])
    meta["checksums"]["meta.json"] = meta_digest(meta)
    members["meta.json"] = json.dumps(meta).encode()
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return str(dst)


_CHILD = """
import sys, numpy as np, minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError
try:
    vm = relax.VirtualMachine(tvm.runtime.load_module(sys.argv[1]), tvm.cpu())
    for _ in range(3):  # large inputs, dropped at once: a stale pointer hits unmapped memory
        vm["main"](np.ones((200000, int(sys.argv[2])), "float32"))
except MiniTVMError as err:
    print("REFUSED", type(err).__name__, err)
"""


def _run_child(path: str, cols: int) -> str:
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD), path, str(cols)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return child.stdout


def test_a_program_starting_with_goto_0_is_refused_not_run_forever(exports, tmp_path):
    path = resign(exports["mlp"], tmp_path / "goto.so", lambda c, p: c.insert(0, ["Goto", 0]))
    out = _run_child(path, 3)  # used to loop forever
    assert "REFUSED ProgramError" in out and "jumps back to 0" in out


def test_a_register_written_twice_cannot_leave_the_fast_path_a_stale_pointer(exports, tmp_path):
    # reg 3 is first a constant (the fast path never re-points constants), then a fresh output:
    # the second call wrote through the first call's freed output (SIGSEGV)
    path = resign(
        exports["mlp"], tmp_path / "twice.so", lambda c, p: c.insert(3, ["LoadConst", 3, 1])
    )
    out = _run_child(path, 3)
    assert "REFUSED ProgramError" in out and "register 3 is also written by instruction 3" in out


def _edit_main(edit):
    return lambda c, p: edit(c)


HOSTILE = {
    # the kernel writes into the caller's (zero-copy) input x, then the real call runs
    "kernel writes an input": (
        "add",
        lambda c, p: c.insert(3, ["CallTIR", "add", [0, 1, 0], []]),
        r"kernel 'add' writes its argument 2 \(register 0\), which may hold parameter 0",
    ),
    "kernel writes a constant": (
        "add",
        lambda c, p: c.insert(3, ["CallTIR", "add", [0, 1, 1], []]),
        "which may hold a constant",
    ),
    "returns uninitialised memory": (
        "add",
        lambda c, p: c.pop(3),
        "reads register 2, a tensor allocated by instruction 2 that no kernel has written",
    ),
    "kernel reads uninitialised memory": (
        "add",
        lambda c, p: (
            c.insert(3, ["AllocTensor", 3, -1, 0, ["h[0]", "4"], "float32"])
            or c.__setitem__(4, ["CallTIR", "add", [3, 1, 2], []])
            or p["functions"]["main"].update(num_regs=4)
        ),
        "reads register 3, a tensor allocated by instruction 3",
    ),
    "register out of range": ("add", lambda c, p: c.__setitem__(4, ["Ret", 99]), "operand 0"),
    "constant out of range": (
        "add",
        lambda c, p: c.__setitem__(1, ["LoadConst", 1, 9]),
        "9 is not a valid const",
    ),
    "jump outside the function": ("add", lambda c, p: c.insert(0, ["Goto", 40]), "operand 0 40"),
    "register read before written": (
        "add",
        lambda c, p: c.insert(1, ["Move", 2, 1]),
        "reads register 1, which no instruction before it writes",
    ),
    "parameter overwritten": (
        "add",
        lambda c, p: c.insert(1, ["LoadConst", 0, 0]),
        "operand 0 0 is not a valid write",
    ),
    "recursion": (
        "add",
        lambda c, p: c.insert(4, ["Call", 2, "main", [0]]),
        r"call each other in a cycle \(main -> main\)",
    ),
    "call with the wrong arity": (
        "add",
        lambda c, p: (
            p["functions"].update(f=dict(json.loads(json.dumps(p["functions"]["main"])), name="f"))
            or c.insert(4, ["Call", 2, "f", []])
        ),
        "passes 0 arguments to 'f', which has 1 parameters",
    ),
    "unknown function": (
        "add",
        lambda c, p: c.insert(4, ["Call", 2, "nope", [0]]),
        "calls unknown function 'nope'",
    ),
    "kernel with the wrong arity": (
        "add",
        lambda c, p: c.__setitem__(3, ["CallTIR", "add", [0, 2], []]),
        r"passes 2 tensors and 0 scalars to kernel 'add', whose parameters are",
    ),
    "unknown kernel": (
        "add",
        lambda c, p: c.__setitem__(3, ["CallTIR", "system", [0, 1, 2], []]),
        "calls kernel 'system', which the native module does not have",
    ),
    "heap slot never bound": (
        "add",
        lambda c, p: c.__setitem__(2, ["AllocTensor", 2, -1, 0, ["h[5]", "4"], "float32"]),
        "uses heap slot 5, which no match instruction binds",
    ),
    "dim bound twice": (
        "add",
        lambda c, p: c.insert(1, ["MatchTensor", 0, "x", "float32", 2, [["bind", 0], 4], "body"]),
        "heap slot 0 is bound twice",
    ),
    "Ret in the middle": ("add", lambda c, p: c.insert(1, ["Ret", 0]), "Ret must be the last"),
    "operands missing": (
        "add",
        lambda c, p: c.__setitem__(3, ["CallTIR", "add"]),
        "has 1 operands",
    ),
    "object dtype": (
        "add",
        lambda c, p: c.__setitem__(2, ["AllocTensor", 2, -1, 0, ["h[0]", "4"], "O"]),
        "is not a valid dtype",
    ),
    "exponential call tree": (
        "add",
        lambda c, p: _call_tree(p, 40),
        f"runs more than {MAX_STEPS} instructions",
    ),
}


def _call_tree(program: dict, depth: int) -> None:
    """f0 calls f1 twice, f1 calls f2 twice, ...: 2**depth calls, no cycle."""
    funcs = program["functions"]
    base = funcs["main"]
    for k in range(depth, -1, -1):
        code = [list(i) for i in base["code"][:-1]]
        if k < depth:
            code += [["Call", 3, f"f{k + 1}", [0]], ["Call", 4, f"f{k + 1}", [0]]]
        funcs[f"f{k}"] = dict(base, name=f"f{k}", num_regs=5, code=[*code, ["Ret", 2]])
    funcs["main"]["code"].insert(4, ["Call", 3, "f0", [0]])
    funcs["main"]["num_regs"] = 4


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_programs_are_refused_at_load(exports, tmp_path, case):
    src, edit, match = HOSTILE[case]
    path = resign(exports[src], tmp_path / "bad.so", edit)
    with pytest.raises(ProgramError, match=match) as info:
        load_executable(path)
    assert isinstance(info.value, RuntimeError_) and "program.json" in str(info.value)


def test_an_edited_in_memory_executable_is_refused_by_the_vm():
    ex = _add()
    ex.program["functions"]["main"]["code"].insert(3, ["CallTIR", "add", [0, 1, 0], []])
    with pytest.raises(ProgramError, match="VirtualMachine: program.json: function 'main'"):
        VirtualMachine(ex, tvm.cpu())


def test_shape_code_division_by_zero_is_a_clean_error():
    ex = _add()
    code = ex.program["functions"]["main"]["code"]
    code[2] = ["AllocTensor", 2, -1, 0, ["h[0] // (h[0] - h[0])", "4"], "float32"]
    vm = VirtualMachine(ex, tvm.cpu())
    with pytest.raises(MiniTVMError, match="divides by zero"):
        vm["main"](np.ones((2, 4), "float32"))


def test_an_absurd_allocation_is_a_shape_error():
    ex = _add()
    code = ex.program["functions"]["main"]["code"]
    code[2] = ["AllocTensor", 2, -1, 0, [str(2**62), "4"], "float32"]
    with pytest.raises(MiniTVMError, match="allocates a tensor of shape"):
        VirtualMachine(ex, tvm.cpu())


def test_the_programs_the_compiler_writes_pass_and_run(exports):
    for name, want in (("mlp", None), ("add", lambda x: x + 1)):
        vm = VirtualMachine(load_executable(exports[name]), tvm.cpu())
        x = np.ones((3, 3 if name == "mlp" else 4), "float32")
        for _ in range(2):  # the second call takes the fast path
            y = vm["main"](x).numpy()
        if want is not None:
            np.testing.assert_array_equal(y, want(x))


def test_relax_load_executable_is_exported(exports):
    assert relax.load_executable is load_executable
    assert isinstance(relax.load_executable(exports["add"]), relax.Executable)
