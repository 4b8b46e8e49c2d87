"""Fuzz cases of exported relax Executables: program.json fields, instructions and member bytes
mutated (and, as an attacker would, re-checksummed), then loaded and run.

A case passes when it runs, or is refused with a MiniTVMError; it is `Wrong` when a run writes
into the caller's input array. Runs in the harness's worker subprocesses (fuzz_harness.py), so a
crash or a hang is reported as such instead of killing the suite.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np
from fuzz_harness import Wrong
from hypothesis import strategies as st

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import op
from minitvm.relax.vm import build
from minitvm.runtime.meta import meta_digest, sha256

# values an edited field takes: registers, pcs and indices in and out of range, other opcodes,
# shape code, dtypes, names of functions and kernels, paths, wrong types
POOL = (-1, 0, 1, 2, 3, 4, 7, 99, 2**31, 2**63, None, True, 1.5, [], [0], [0, 0], [[1, 2]],
        ["bind", 0], ["bind", 3], ["check", "h[0] // 0"], "Goto", "Ret", "Move", "CallTIR",
        "h[0]", "h[9]", "h[0] // (h[0] - h[0])", "-5", str(2**62), "float32", "int8", "O", "main",
        "add", "fused_matmul_nn_relu_add", "param", "body", "../../etc/passwd", "x" * 300)  # fmt: skip
MUTATIONS = ("field", "swap", "duplicate", "drop", "insert", "program_bytes", "member_bytes")
EXECUTABLE_CASES = st.fixed_dictionaries({
    "program": st.sampled_from(["mlp", "add"]),
    "mutations": st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3),
    "seed": st.integers(0, 2**31),
    "resign": st.sampled_from([True, True, True, False]),
})  # fmt: skip


def _programs() -> dict:
    """name -> (export path, columns of x)."""
    if _programs.cache:
        return _programs.cache
    root = tempfile.mkdtemp(prefix="minitvm_fuzz_exe_")
    n = tir.Var("n", "int64")
    for name, cols in (("mlp", 3), ("add", 4)):
        x = relax.Var("x", relax.TensorStructInfo((n, cols), "float32"))
        bb = relax.BlockBuilder()
        with bb.function("main", [x]):
            with bb.dataflow():
                if name == "mlp":
                    w = relax.const(np.arange(12, dtype="float32").reshape(3, 4) / 10)
                    h = bb.emit(op.nn.relu(op.matmul(x, w)))
                    out = bb.emit_output(op.add(h, relax.const(np.float32(0.5))))
                else:
                    out = bb.emit_output(op.add(x, relax.const(np.ones(4, "float32"))))
            bb.emit_func_output(out)
        path = os.path.join(root, f"{name}.so")
        build(bb.get()).export_library(path)
        _programs.cache[name] = (path, cols)
    return _programs.cache


_programs.cache = {}


def _leaves(value, prefix=()) -> list:
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list) else ()  # fmt: skip
    out = [prefix] if prefix else []
    for k, v in items:
        out.extend(_leaves(v, (*prefix, k)))
    return out


def _mutate_program(program: dict, mutation: str, rng: np.random.Generator) -> None:
    try:
        _edit(program, mutation, rng)
    except (TypeError, KeyError, IndexError, ValueError, AttributeError):
        pass  # an earlier edit broke the structure this one walks: the file is damaged enough


def _edit(program: dict, mutation: str, rng: np.random.Generator) -> None:
    code = program["functions"]["main"]["code"]
    i, j = (int(k) for k in rng.integers(0, len(code), 2))
    if mutation == "field":
        path = _leaves(program)[rng.integers(0, len(_leaves(program)))]
        target = program
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = POOL[rng.integers(0, len(POOL))]
    elif mutation == "swap":
        code[i], code[j] = code[j], code[i]
    elif mutation == "duplicate":
        code.insert(j, json.loads(json.dumps(code[i])))
    elif mutation == "drop" and len(code) > 1:
        del code[i]
    elif mutation == "insert":
        template = json.loads(json.dumps(code[i]))
        for k in range(1, len(template)):
            if rng.random() < 0.5:
                template[k] = POOL[rng.integers(0, len(POOL))]
        code.insert(j, template)


def _flip(data: bytes, rng: np.random.Generator) -> bytes:
    raw = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        raw[int(rng.integers(0, len(raw)))] ^= 1 << int(rng.integers(0, 8))
    return bytes(raw)


def run_executable(case: dict, canary_dir: str) -> None:
    source, cols = _programs()[case["program"]]
    rng = np.random.default_rng(case["seed"])
    with zipfile.ZipFile(source) as zf:
        members = {m: zf.read(m) for m in zf.namelist()}
    program = json.loads(members["program.json"])
    for mutation in case["mutations"]:
        if mutation in ("program_bytes", "member_bytes"):
            continue
        _mutate_program(program, mutation, rng)
    members["program.json"] = json.dumps(program).encode()
    if "program_bytes" in case["mutations"]:
        members["program.json"] = _flip(members["program.json"], rng)
    if "member_bytes" in case["mutations"]:
        # re-signed machine code is simply other code (docs/reliability.md): only the object's
        # own checks cover it, so a flip in object.o is left to the exports category
        names = sorted(m for m in members if m != "object.o" or not case["resign"])
        name = names[int(rng.integers(0, len(names)))]
        members[name] = _flip(members[name], rng)
    if case["resign"]:
        _resign(members)
    path = os.path.join(tempfile.gettempdir(), "tampered_exe.so")  # the worker's scratch dir
    with zipfile.ZipFile(path, "w") as zf:
        for m, data in members.items():
            zf.writestr(m, data)
    try:
        vm = relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
        for rows in (5, 5, 2):  # the second call takes the fast path, the third a new frame
            x = np.random.default_rng(rows).standard_normal((rows, cols)).astype("float32")
            before = x.copy()
            vm["main"](x)
            if not np.array_equal(x, before):
                raise Wrong("the program wrote into the caller's input array")
    finally:
        os.unlink(path)


def _resign(members: dict) -> None:
    """Recompute the checksums as export_library does (unless meta.json itself is broken)."""
    try:
        meta = json.loads(members["meta.json"])
    except ValueError:
        return
    if not isinstance(meta, dict):
        return
    meta["checksums"] = {m: sha256(d) for m, d in members.items() if m != "meta.json"}
    meta["checksums"]["meta.json"] = meta_digest(meta)
    members["meta.json"] = json.dumps(meta).encode()
