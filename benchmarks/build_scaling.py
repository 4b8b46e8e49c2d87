"""How `relax.build` time grows with the size of the model: ONNX chains of N nodes built at a
few sizes, the time per node and the ratio between consecutive sizes (2.0 for doubled sizes
means linear), with the time of each build stage.

Two chains: "elementwise" (Add/Relu/Mul/Sigmoid in turn on a [4, 32] tensor, which FuseOps
fuses into one kernel of N blocks) and "mixed" (layers of MatMul + Add + Relu + Reshape +
Transpose + Reshape, several kernels). Each build runs in a fresh interpreter-level cache
state (the driver's kernel caches are cleared) and serially (MINITVM_BUILD_JOBS=1 unless set),
so that the stages add up to the whole.

    python benchmarks/build_scaling.py [--sizes 125 250 500 1000] [--chain elementwise|mixed]
    python benchmarks/build_scaling.py --profile 500     # cProfile of one build, top 30
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import numpy as np

os.environ.setdefault("MINITVM_BUILD_JOBS", "1")

import minitvm as tvm
from minitvm import relax

WIDTH = 32


def elementwise_chain(n: int):
    """An ONNX model of `n` nodes: Add(c)/Relu/Mul(c)/Sigmoid in turn on float32[4, 32]."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        out = f"t{i}"
        kind = ("Add", "Relu", "Mul", "Sigmoid")[i % 4]
        if kind in ("Add", "Mul"):
            c = rng.uniform(0.5, 1.0, size=(WIDTH,)).astype("float32")
            inits.append(numpy_helper.from_array(c, f"c{i}"))
            nodes.append(helper.make_node(kind, [prev, f"c{i}"], [out]))
        else:
            nodes.append(helper.make_node(kind, [prev], [out]))
        prev = out
    return _model(nodes, inits, prev, (4, WIDTH))


def mixed_chain(n: int):
    """About `n` ONNX nodes in layers of MatMul, Add, Relu, Reshape, Transpose, Reshape."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    shape = numpy_helper.from_array(np.array([4, 4, WIDTH // 4], "int64"), "shape3")
    flat = numpy_helper.from_array(np.array([4, WIDTH], "int64"), "shape2")
    inits += [shape, flat]
    for i in range((n + 5) // 6):
        w = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype("float32")
        b = rng.standard_normal(WIDTH).astype("float32")
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        names = [f"l{i}_{k}" for k in range(6)]
        nodes += [
            helper.make_node("MatMul", [prev, f"w{i}"], [names[0]]),
            helper.make_node("Add", [names[0], f"b{i}"], [names[1]]),
            helper.make_node("Relu", [names[1]], [names[2]]),
            helper.make_node("Reshape", [names[2], "shape3"], [names[3]]),
            helper.make_node("Transpose", [names[3]], [names[4]], perm=[0, 2, 1]),
            helper.make_node("Reshape", [names[4], "shape2"], [names[5]]),
        ]
        prev = names[5]
    return _model(nodes, inits, prev, (4, WIDTH))


def _model(nodes, inits, out, shape):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CHAINS = {"elementwise": elementwise_chain, "mixed": mixed_chain}


def staged_build(model) -> tuple[dict[str, float], object]:
    """relax.build's stages run one by one, each timed: the import, every pass of the pipeline,
    lowering of every kernel, LLVM code generation; returns the times and the Executable."""
    from minitvm import codegen, driver
    from minitvm.driver import kernel_cache
    from minitvm.relax.frontend.onnx import from_onnx
    from minitvm.relax.pipeline import DEFAULT_PIPELINE, GRAPH_PIPELINE, default_passes
    from minitvm.relax.vm.build import resolve_prim_calls_by_name
    from minitvm.relax.vm.codegen import vm_codegen
    from minitvm.relax.vm.executable import Executable
    from minitvm.tir.function import PrimFunc

    kernel_cache.clear()
    times: dict[str, float] = {}

    def timed(name, fn, *args):
        start = time.perf_counter()
        out = fn(*args)
        times[name] = times.get(name, 0.0) + time.perf_counter() - start
        return out

    mod = timed("from_onnx", from_onnx, model)
    mod = resolve_prim_calls_by_name(mod)
    for p in default_passes("llvm", steps=GRAPH_PIPELINE + DEFAULT_PIPELINE):
        mod = timed(p.name, p, mod)
    prims = {
        gv.name_hint: f.with_attr("global_symbol", gv.name_hint)
        for gv, f in mod.functions_items()
        if isinstance(f, PrimFunc)
    }
    lowered = [timed("lower (tir)", driver._lower_checked, f) for f in prims.values()]
    obj = timed("llvm codegen", codegen.llvm.build, lowered, tvm.target.Target("llvm"), [])
    program, constants = timed("vm codegen", vm_codegen, mod, {n: n for n in prims})
    native = tvm.runtime.Module.from_codegen(obj, entry_name=next(iter(prims)))
    return times, Executable(native, program, constants)


def check(model, ex) -> None:
    """The built model computes what ONNX Runtime computes."""
    import onnxruntime as ort

    x = np.random.default_rng(1).standard_normal((4, WIDTH)).astype("float32")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[125, 250, 500, 1000])
    parser.add_argument("--chain", choices=sorted(CHAINS), default="elementwise")
    parser.add_argument("--profile", type=int, default=0, help="cProfile one build of this size")
    args = parser.parse_args()
    make = CHAINS[args.chain]
    if args.profile:
        model = make(args.profile)
        prof = cProfile.Profile()
        prof.enable()
        staged_build(model)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return
    print(f"relax.build of an ONNX {args.chain} chain, serial build (MINITVM_BUILD_JOBS=1)")
    staged_build(make(4))  # warm-up: imports, LLVM initialisation
    prev = None
    for n in args.sizes:
        model = make(n)
        times, ex = staged_build(model)
        check(model, ex)
        total = sum(times.values())
        ratio = f"x{total / prev:5.2f}" if prev else "      "
        print(f"N={n:5d}  {total:8.2f} s  {total / n * 1e3:7.2f} ms/node  {ratio}")
        top = sorted(times.items(), key=lambda kv: -kv[1])[:6]
        print("          " + ", ".join(f"{k} {v:.2f}" for k, v in top))
        prev = total


if __name__ == "__main__":
    main()
