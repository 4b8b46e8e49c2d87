"""Fuzz categories `cli` and `artifacts`: the command line's arguments and its compiled-model tar.

`cli`: `minitvm VERB ...` (compile, run, bench, show, cache info) from a valid command line with
1-3 mutations: a path replaced by one that does not exist, a folder, a FIFO, /dev/zero, an empty
or random file, a file of the other kind, a unicode or over-long name; a number or a shapes
string replaced by a hostile one; an option dropped, repeated or unknown; a stray token. The
command runs in the worker through `minitvm.cli.main` (stdout and stderr captured, in a fresh
folder); it must return 0, or 1/2 with an `error:` line: an escaping exception, a traceback in
its output or any other exit code is a failure (a hang or a crash is one by the harness).

`artifacts`: a compiled artifact (`minitvm compile`'s tar, minitvm/cli/artifact.py) tampered
with: bytes flipped (anywhere, or in a tar header), truncated, its executable swapped with
another artifact's, a metadata field set to another value, the executable's bytes flipped,
extra, repeated, link or `../` members; half of the edits re-checksummed (executable_sha256)
as an attacker would. Then `minitvm run` on a known input: it must be refused (exit 1/2 with an
`error:` line) or give the output of one of the two compiled models (a swapped, re-checksummed
executable runs the other model: docs/reliability.md, "What the checks do not protect").
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import tarfile
import tempfile

import numpy as np
from fuzz_harness import Wrong

SEED = 20261126
_W = (np.arange(16, dtype="float32").reshape(4, 4) - 7.5) / 4
_B = np.array([0.5, -1.0, 2.0, -0.25], "float32")


# ----------------------------------------------------------------------------- fixtures


def _fixtures() -> dict:
    """Files every case uses (made once per worker): two ONNX models, their artifacts, an
    input, a FIFO, a folder, an empty and a random file."""
    if _fixtures.cache:
        return _fixtures.cache
    root = tempfile.mkdtemp(prefix="minitvm_fuzz_cli_")
    files = {"root": root}
    for name, relu in (("relu", True), ("linear", False)):
        files[f"{name}.onnx"] = path = os.path.join(root, f"{name}.onnx")
        _write_model(path, relu)
        files[f"{name}.tar"] = tar = os.path.join(root, f"{name}.tar")
        code, _, err = call(["compile", path, "-o", tar, "-q"])
        assert code == 0, err
    files["x.npy"] = os.path.join(root, "x.npy")
    np.save(files["x.npy"], np.linspace(-3, 3, 8, dtype="float32").reshape(2, 4))
    files["fifo"] = os.path.join(root, "fifo")
    os.mkfifo(files["fifo"])
    files["dir"] = os.path.join(root, "folder")
    os.mkdir(files["dir"])
    files["empty"] = os.path.join(root, "empty.onnx")
    open(files["empty"], "wb").close()
    files["random"] = os.path.join(root, "random.tar")
    with open(files["random"], "wb") as out:
        out.write(np.random.default_rng(1).bytes(3000))
    _fixtures.cache = files
    return files


_fixtures.cache = {}


def _write_model(path: str, relu: bool) -> None:
    from onnx import TensorProto, helper, numpy_helper, save

    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"],
             ["r" if relu else "y"])]  # fmt: skip
    if relu:
        nodes.append(helper.make_node("Relu", ["r"], ["y"]))
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(_W, "W"), numpy_helper.from_array(_B, "B")],
    )  # fmt: skip
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _expected() -> list[np.ndarray]:
    x = np.load(_fixtures()["x.npy"])
    y = x @ _W + _B
    return [np.maximum(y, 0), y]


def call(argv: list[str]) -> tuple[int, str, str]:
    """Run `minitvm ARGV` in this process: (exit code, stdout, stderr)."""
    from minitvm.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse's usage errors and --help
            code = exit_.code if isinstance(exit_.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def _judge(argv: list[str], code: int, out: str, err: str) -> None:
    """0, or 1/2 with an `error:` line; never a traceback. A refusal is raised as a MiniTVMError
    (the harness counts it clean)."""
    from minitvm.error import MiniTVMError

    where = f"minitvm {' '.join(a[:80] for a in argv)}"
    if "Traceback (most recent call last)" in out + err:
        raise AssertionError(f"{where}: printed a traceback:\n{err[-1500:]}")
    if code not in (0, 1, 2):
        raise AssertionError(f"{where}: exit code {code}; stderr: {err[-800:]}")
    if code and not any(line.startswith("error:") for line in err.splitlines()):
        raise AssertionError(f"{where}: exit code {code} without an `error:` line: {err[-800:]}")
    if code:
        raise MiniTVMError(f"exit {code}: {err.strip().splitlines()[-1]}")


# ----------------------------------------------------------------------------- cli


def _paths(files: dict) -> list[str]:
    return [
        "does_not_exist.onnx", files["dir"], files["fifo"], "/dev/zero", "/dev/null", "/",
        files["empty"], files["random"], files["relu.onnx"], files["relu.tar"], files["x.npy"],
        "mödel-模型.onnx", "caf\udce9.tar", "x" * 5000 + ".onnx", "", "-", "--", "a\nb.tar",
        files["dir"] + "/", "/proc/self/status",
    ]  # fmt: skip


_NUMBERS = ("0", "-1", "1", "3", "1e99", "99999999999999999999999", "nan", "٣", "0x10", "",
            " 2", "-0", "2147483648")  # fmt: skip
_SHAPES = ("x:1,4", "x:0,4", "x:-1,4", "x:99999999999,4", "x:2,4,", "x:", ":", "x:a,b", "y:2,4",
           "x:2;4", "x:2,4 x:3,4", "x:1e3,4", "x:٢,4", "x:2**40,4", "x:4611686018427387904,4",
           "x:2,5", "x:2", "x:2,4,1", "x:2,4 y:1", "x==2,4")  # fmt: skip
_TOKENS = ("--frobnicate", "-z", "--input", "--input-shapes", "=", "--target", "--seed", "-o",
           "--repeat=", "\x00", "🙂", "--help", "--device", "--format", "--target=cuda",
           "--target=llvm -mcpu=pentium99", "--target=opencl", "--compare", "ort")  # fmt: skip
_VERBS = ("compile", "run", "bench", "show", "show_tar", "cache")


def _base(verb: str, files: dict) -> list[str]:
    """A valid command line of `verb` (small and quick), its outputs in the current folder."""
    return {
        "compile": ["compile", files["relu.onnx"], "--input-shapes", "x:2,4", "-o", "m.tar", "-q"],
        "run": ["run", files["relu.tar"], "--input", f"x={files['x.npy']}", "-o", "out.npy",
                "--repeat", "1"],
        "bench": ["bench", files["relu.tar"], "--repeat", "2", "--warmup", "0"],
        "show": ["show", files["relu.onnx"], "--input-shapes", "x:3,4"],
        "show_tar": ["show", files["relu.tar"], "--vm"],
        "cache": ["cache", "info"],
    }[verb]  # fmt: skip


def _mutate_argv(argv: list[str], rng: random.Random, files: dict) -> None:
    kind = rng.randrange(6)
    i = rng.randrange(1, len(argv)) if len(argv) > 1 else 1
    if kind == 0 and i < len(argv):  # a path or any value replaced by a hostile path
        argv[i] = rng.choice(_paths(files))
    elif kind == 1 and i < len(argv):  # a value replaced by a hostile number or shapes string
        argv[i] = rng.choice(_NUMBERS + _SHAPES)
    elif kind == 2 and len(argv) > 1:  # an argument dropped
        del argv[i]
    elif kind == 3 and i < len(argv):  # an argument repeated
        argv.insert(i, argv[i])
    elif kind == 4:  # a stray token
        argv.insert(rng.randrange(1, len(argv) + 1), rng.choice(_TOKENS))
    else:  # an input given by a hostile NAME=FILE
        name = rng.choice(("x", "y", "", "x=x", "ü"))
        argv += ["--input", f"{name}={rng.choice(_paths(files))}"]


def run_cli(case: int, canary_dir: str) -> None:
    from fuzz_record_cases import limit_memory

    limit_memory()
    rng = random.Random(f"{SEED}:cli:{case}")
    files = _fixtures()
    argv = _base(rng.choice(_VERBS), files)
    for _ in range(rng.randint(1, 3)):
        _mutate_argv(argv, rng, files)
    # a repeat or warmup count is a request, not an attack: keep the run short
    argv = [a if not (argv[k - 1:k] and argv[k - 1] in ("--repeat", "--warmup") and a.isdigit()
            and int(a) > 3) else "3" for k, a in enumerate(argv)]  # fmt: skip
    with _in_fresh_folder():
        code, out, err = call(argv)
    _judge(argv, code, out, err)


@contextlib.contextmanager
def _in_fresh_folder():
    old = os.getcwd()
    work = tempfile.mkdtemp(prefix="cli_case_")
    os.chdir(work)
    try:
        yield work
    finally:
        os.chdir(old)


# ----------------------------------------------------------------------------- artifacts

_TAMPERS = ("flip", "header", "truncate", "swap", "meta", "exe", "extra", "twice", "link",
            "dotdot")  # fmt: skip
_META_VALUES = (None, True, 0, -1, 2**63, 1.5, "", "x" * 3000, [], {}, "main", "llvm",
                "opencl", "float64", "int8", "x", "y", "../../etc/passwd", ["x"], [1, 2],
                [{"name": "x", "source_name": "x", "shape": [2, 4], "dtype": "float32"}] * 2,
                [{"name": "x", "source_name": "x", "shape": ["N", 5], "dtype": "float32"}],
                [{"name": "x", "source_name": "x", "shape": [2, 4], "dtype": "int32"}],
                "__import__('os').mkdir('CANARY')")  # fmt: skip


def _members(path: str) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def _flip(data: bytes, rng: random.Random, start: int = 0, end: int | None = None) -> bytes:
    raw = bytearray(data)
    end = len(raw) if end is None else min(end, len(raw))
    for _ in range(rng.randint(1, 4)):
        raw[rng.randrange(start, end)] ^= 1 << rng.randrange(8)
    return bytes(raw)


def _edit_meta(meta: dict, rng: random.Random, canary: str) -> None:
    paths = [(k,) for k in meta] + [("inputs", 0, k) for k in meta["inputs"][0]]
    path = rng.choice(paths + [("new_key",)])
    value = rng.choice(_META_VALUES)
    if isinstance(value, str):
        value = value.replace("CANARY", canary)
    target = meta
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _write_tar(path: str, members: list[tuple[str, bytes | None]]) -> None:
    """Members in order; a None payload is a symlink to /etc/passwd."""
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def tamper(path: str, rng: random.Random, canary: str) -> str:
    """Write a tampered copy of the relu artifact to `path`; returns what was done."""
    files = _fixtures()
    kind = rng.choice(_TAMPERS)
    members = _members(files["relu.tar"])
    exe, meta = members["executable.zip"], json.loads(members["metadata.json"])
    resign = rng.random() < 0.5
    if kind in ("flip", "header", "truncate"):
        with open(files["relu.tar"], "rb") as src:
            data = src.read()
        if kind == "truncate":
            data = data[: rng.randrange(len(data))]
        else:
            data = _flip(data, rng, 0, 512 if kind == "header" else None)
        with open(path, "wb") as out:
            out.write(data)
        return kind
    if kind == "swap":
        exe = _members(files["linear.tar"])["executable.zip"]
    elif kind == "meta":
        _edit_meta(meta, rng, canary)
    elif kind == "exe":
        exe = _flip(exe, rng)
    if resign and isinstance(meta, dict):
        meta["executable_sha256"] = hashlib.sha256(exe).hexdigest()
    listed = [("executable.zip", exe), ("metadata.json", json.dumps(meta).encode())]
    if kind == "extra":
        listed.append((rng.choice(("extra.bin", "executable.zip.1", "model.pkl")), b"\x80\x04."))
    elif kind == "twice":
        other = rng.choice(listed)
        listed.insert(rng.randrange(3), (other[0], json.dumps({"format": "x"}).encode()))
    elif kind == "link":
        listed[rng.randrange(2)] = (listed[rng.randrange(2)][0], None)
    elif kind == "dotdot":
        listed[rng.randrange(2)] = ("../" + listed[0][0], listed[0][1])
    if rng.random() < 0.3:
        listed.reverse()
    _write_tar(path, listed)
    return f"{kind} (resigned {resign})"


def run_artifact(case: int, canary_dir: str) -> None:
    from fuzz_record_cases import limit_memory

    limit_memory()
    rng = random.Random(f"{SEED}:artifact:{case}")
    files = _fixtures()
    with _in_fresh_folder() as work:
        path = os.path.join(work, "tampered.tar")
        what = tamper(path, rng, os.path.join(canary_dir, "canary"))
        argv = ["run", path, "--input", f"x={files['x.npy']}", "-o", "out.npy"]
        code, out, err = call(argv)
        _judge(argv, code, out, err)
        got = np.load("out.npy", allow_pickle=False)
        if not any(got.shape == w.shape and np.allclose(got, w, 1e-5) for w in _expected()):
            raise Wrong(f"{what}: the tampered artifact ran and gave {got}")
