"""Per-op dispatch cost of the relax VM beside the raw kernel call, in one run.

A chain of N tiny adds on 4-element tensors (built at opt_level=0 so that FuseOps does not merge
them into one kernel): the VM's time per op minus the raw native call of the same kernel is
the VM's dispatch overhead; the checked runtime Module call and numpy are shown for scale.

    python benchmarks/vm_overhead.py [--ops 100] [--number 2000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op


def chain(n_ops: int):
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for _ in range(n_ops):
                h = bb.emit(op.add(h, x))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def best_of(fn, number: int, repeat: int = 5) -> float:
    """Seconds per call: the best of `repeat` rounds of `number` calls."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    with tvm.transform.PassContext(opt_level=0):
        ex = relax.build(chain(args.ops), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    x = tvm.nd.array(np.arange(4, dtype="float32"))
    out = vm["main"](x)
    np.testing.assert_allclose(out.numpy(), np.arange(4) * (args.ops + 1))

    f = vm["main"]
    vm_call = best_of(lambda: f(x), max(args.number // args.ops, 20))
    calls = [ins[1] for ins in ex.program["functions"]["main"]["code"] if ins[0] == "CallTIR"]
    kernel = ex.mod[max(set(calls), key=calls.count)]  # add(h, x): 2 inputs, 1 output
    a, b, c = (tvm.nd.array(np.ones(4, "float32")) for _ in range(3))
    raw = kernel.bind(a, b, c)  # the native entry with arguments prepared once
    raw_call = best_of(raw, args.number)
    checked_call = best_of(lambda: kernel(a, b, c), args.number)
    with tvm.transform.PassContext(opt_level=0):
        one = relax.VirtualMachine(relax.build(chain(1), "llvm"), tvm.cpu())["main"]
    one_call = best_of(lambda: one(x), args.number)
    an, bn, cn = (np.ones(4, "float32") for _ in range(3))
    numpy_call = best_of(lambda: np.add(an, bn, out=cn), args.number)
    per_op = vm_call / args.ops
    print(
        f"VM: chain of {args.ops} adds on float32[4], {len(ex.program['functions']['main']['code'])} "
        "instructions"
    )
    print(f"  VM call of main                  {vm_call * 1e6:9.2f} us")
    print(f"  VM time per op                   {per_op * 1e6:9.3f} us")
    print(f"  raw native kernel call           {raw_call * 1e6:9.3f} us")
    print(
        f"  VM dispatch overhead per op      {(per_op - raw_call) * 1e6:9.3f} us "
        f"(VM per op - raw call)"
    )
    print(
        f"  VM call of a 1-op function       {one_call * 1e6:9.3f} us "
        f"(fixed cost per call ~ {(one_call - per_op) * 1e6:.2f} us: argument checks, "
        "frame lookup, output allocation)"
    )
    print(f"  checked Module call (mod[name])   {checked_call * 1e6:9.3f} us")
    print(f"  numpy np.add(out=) for scale     {numpy_call * 1e6:9.3f} us")
    print(f"  ratio VM per op / checked call   {per_op / checked_call:9.2f}x")


if __name__ == "__main__":
    main()
