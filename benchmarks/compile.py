"""Compile time, cold and warm, beside Apache TVM: each zoo model is exported once with
`torch.export` (the zoo's torch twin, same weights) and saved; fresh processes then time
`import`, the front end (`from_exported_program` of that saved export) and the build, in
minitvm (`relax.build`, against an empty compile cache for the cold build, then again with the
entry the first process wrote for the warm one) and in Apache TVM (`tvm.compile(mod,
target="llvm")`, which keeps nothing between processes, so each of its builds is cold).

TVM runs in the interpreter given by --tvm-python (a separate venv with apache-tvm and the same
torch version, since the saved export is read there); without it, or when that interpreter
cannot import tvm, the script says why the TVM column is missing. Without torch the models come
from the zoo's builder API (no TVM column: there is no shared export to give it).
Times are the minimum over --repeat fresh processes. The CPU columns add the build's CPU
seconds (process time plus reaped build workers): on a shared machine wall time stretches with
other jobs' load, CPU time much less, so their ratio is the steadier comparison.

    python benchmarks/compile.py --tvm-python /path/to/tvm-venv/bin/python
    python benchmarks/compile.py --models resnet18 --repeat 5
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from _common import machine_lines

# One fresh minitvm process: argv = model name, saved export (or "" for the zoo's builder API).
_MINITVM_CHILD = r"""
import json, resource, sys, time
def cpu():  # this process's threads and its reaped build workers
    return time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
t0 = time.perf_counter()
import minitvm as tvm
from minitvm import relax
t1 = time.perf_counter()
if sys.argv[2]:
    import torch
    from minitvm.relax.frontend.torch import from_exported_program
    ep = torch.export.load(sys.argv[2])
    t1b = time.perf_counter()
    mod = from_exported_program(ep)
else:
    from minitvm.testing import zoo
    t1b = time.perf_counter()
    mod, params = zoo.get_model(sys.argv[1])
    mod = relax.transform.BindParams("main", params)(mod)
c2 = cpu()
t2 = time.perf_counter()
ex = relax.build(mod, "llvm")
t3 = time.perf_counter()
from minitvm.driver import compile_cache
print(json.dumps({"import": t1 - t0, "frontend": t2 - t1b, "build": t3 - t2,
                  "build_cpu": cpu() - c2, "hits": compile_cache.STATS["hits"]}))
"""

# One fresh Apache TVM process: argv = saved export. Parameters become constants, as above.
_TVM_CHILD = r"""
import json, resource, sys, time
def cpu():
    return time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
t0 = time.perf_counter()
import tvm
from tvm.relax.frontend.torch import from_exported_program
t1 = time.perf_counter()
import torch
ep = torch.export.load(sys.argv[1])
t1b = time.perf_counter()
mod = from_exported_program(ep)
c2 = cpu()
t2 = time.perf_counter()
ex = tvm.compile(mod, target="llvm")
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "frontend": t2 - t1b, "build": t3 - t2,
                  "build_cpu": cpu() - c2, "version": tvm.__version__}))
"""

_PROBE = "import tvm, torch, json; print(json.dumps([tvm.__version__, torch.__version__]))"


def _run(python: str, code: str, argv: list[str], env: dict | None = None) -> dict:
    out = subprocess.run([python, "-c", code, *argv], env=env, check=True,
                         capture_output=True, text=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def tvm_interpreter(path: str | None) -> tuple[str | None, str]:
    """(interpreter, description) for the TVM column, or (None, why it is missing)."""
    if not path:
        return None, "no --tvm-python given (a python with apache-tvm and torch installed)"
    try:
        out = subprocess.run(
            [path, "-c", _PROBE], check=False, capture_output=True, text=True, timeout=300
        )
    except OSError as err:
        return None, f"{path} cannot run: {err}"
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"{path} cannot import tvm and torch: {last}"
    tvm_version, torch_version = json.loads(out.stdout.strip().splitlines()[-1])
    return path, f"Apache TVM {tvm_version} (torch {torch_version}) from {path}"


def export_model(name: str, directory: str) -> str:
    """The zoo model's torch twin exported with torch.export and saved; returns the file."""
    import torch

    from minitvm.testing import zoo

    _, params = zoo.get_model(name)
    model = zoo.torch_model(name, params)
    x = torch.from_numpy(zoo_input(name))
    path = os.path.join(directory, f"{name}.pt2")
    torch.export.save(torch.export.export(model, (x,)), path)
    return path


def zoo_input(name: str):
    import numpy as np

    from minitvm.testing import zoo

    return np.random.default_rng(0).standard_normal(zoo.input_shape(name)).astype("float32")


def time_minitvm(name: str, export: str, repeat: int) -> tuple[dict, dict]:
    """Min over `repeat` fresh (cold, warm) process pairs, each pair on its own empty cache."""
    cold, warm = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="minitvm-cache-") as cache:
            env = dict(os.environ, MINITVM_CACHE_DIR=cache)
            cold.append(_run(sys.executable, _MINITVM_CHILD, [name, export], env))
            warm.append(_run(sys.executable, _MINITVM_CHILD, [name, export], env))
    if any(w["hits"] < 1 for w in warm):
        print(f"{name}: a warm build missed the cache (source edited meanwhile?)")
    return _best(cold), _best(warm)


def time_tvm(python: str, export: str, repeat: int) -> dict:
    return _best([_run(python, _TVM_CHILD, [export]) for _ in range(repeat)])


def _best(runs: list[dict]) -> dict:
    return {k: min(r[k] for r in runs) for k in ("import", "frontend", "build", "build_cpu")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--models", nargs="+", default=["mlp", "lenet", "resnet18", "mobilenet_v2", "bert_layer"]
    )
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per figure (min)")
    ap.add_argument("--tvm-python", help="interpreter with apache-tvm (and the same torch)")
    args = ap.parse_args()
    for line in machine_lines(os.cpu_count() or 1):
        print(line)
    have_torch = importlib.util.find_spec("torch") is not None
    tvm_python, why = tvm_interpreter(args.tvm_python) if have_torch else (None, "")
    if not have_torch:
        print("torch is not installed: models from the zoo's builder API, no TVM column")
    elif tvm_python is None:
        print(f"TVM column missing: {why}")
    else:
        print(f"TVM column: {why}")
    print()
    head = f"{'model':<14}{'import':>8}{'frontend':>10}{'cold build':>12}{'warm build':>12}"
    if tvm_python:
        head += f"{'TVM import':>12}{'TVM front':>11}{'TVM build':>11}{'cold/TVM':>10}"
    head += f"{'cold/warm':>11}{'cold CPU':>10}"
    print(head + (f"{'TVM CPU':>9}{'CPU ratio':>11}" if tvm_python else ""))
    with tempfile.TemporaryDirectory(prefix="minitvm-export-") as directory:
        for model in args.models:
            export = export_model(model, directory) if have_torch else ""
            cold, warm = time_minitvm(model, export, args.repeat)
            row = (f"{model:<14}{cold['import']:>7.2f}s{cold['frontend']:>9.2f}s"
                   f"{cold['build']:>11.2f}s{warm['build']:>11.2f}s")  # fmt: skip
            t = time_tvm(tvm_python, export, args.repeat) if tvm_python else None
            if t:
                row += (f"{t['import']:>11.2f}s{t['frontend']:>10.2f}s{t['build']:>10.2f}s"
                        f"{cold['build'] / t['build']:>9.2f}x")  # fmt: skip
            row += f"{cold['build'] / warm['build']:>10.1f}x{cold['build_cpu']:>9.2f}s"
            if t:
                row += f"{t['build_cpu']:>8.2f}s{cold['build_cpu'] / t['build_cpu']:>10.2f}x"
            print(row, flush=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
