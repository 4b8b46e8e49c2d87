"""Compile time, cold and warm: `import minitvm`, the front end (zoo model + BindParams) and
`relax.build`, each model built in fresh processes against an empty compile cache (cold) and
then again with the entry the first process wrote (warm). Apache TVM is timed the same way
when it is installed (`import tvm`); otherwise the script says so.

    python benchmarks/compile.py        # mlp, lenet, resnet18, mobilenet_v2, bert_layer
    python benchmarks/compile.py --models resnet18 --repeat 2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

from _common import machine_lines

# One fresh process: times import, front end and build; prints them as JSON on its last line.
_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import minitvm as tvm
from minitvm import relax
from minitvm.testing import zoo
t1 = time.perf_counter()
mod, params = zoo.get_model(sys.argv[1])
mod = relax.transform.BindParams("main", params)(mod)
t2 = time.perf_counter()
ex = relax.build(mod, "llvm")
t3 = time.perf_counter()
from minitvm.driver import compile_cache
print(json.dumps({"import": t1 - t0, "frontend": t2 - t1, "build": t3 - t2,
                  "hits": compile_cache.STATS["hits"]}))
"""


def run_child(model: str, cache_dir: str) -> dict:
    env = dict(os.environ, MINITVM_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", _CHILD, model], env=env, check=True,
                         capture_output=True, text=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+",
                    default=["mlp", "lenet", "resnet18", "mobilenet_v2", "bert_layer"])
    ap.add_argument("--repeat", type=int, default=1, help="cold/warm pairs per model (median)")
    args = ap.parse_args()
    for line in machine_lines(os.cpu_count() or 1):
        print(line)
    if importlib.util.find_spec("tvm") is None:
        print("apache-tvm is not installed: no TVM column (pip install apache-tvm to add it)")
    print()
    print(f"{'model':<14}{'import':>8}{'frontend':>10}{'cold build':>12}{'warm build':>12}"
          f"{'cold/warm':>11}")  # fmt: skip
    for model in args.models:
        cold, warm = [], []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="minitvm-cache-") as cache:
                cold.append(run_child(model, cache))
                warm.append(run_child(model, cache))
        if any(w["hits"] != 1 for w in warm):
            print(f"{model}: the warm build missed the cache (source edited meanwhile?)")
        med = {k: statistics.median(r[k] for r in cold + warm) for k in ("import", "frontend")}
        c = statistics.median(r["build"] for r in cold)
        w = statistics.median(r["build"] for r in warm)
        print(f"{model:<14}{med['import']:>7.2f}s{med['frontend']:>9.2f}s{c:>11.2f}s{w:>11.2f}s"
              f"{c / w:>10.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
