"""One VirtualMachine called from several threads: every result matches numpy."""

from __future__ import annotations

import threading

import numpy as np

from minitvm import relax
from minitvm.relax import op
from minitvm.relax.vm import VirtualMachine, build

F32 = "float32"


def _mlp(width: int = 32, batch: int = 8):
    """Three layers: the intermediates live in planned (reused) storages of a frame."""
    x = relax.Var("x", relax.TensorStructInfo((batch, width), F32))
    ws = [relax.Var(f"w{i}", relax.TensorStructInfo((width, width), F32)) for i in range(3)]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *ws]):
        with bb.dataflow():
            h = x
            for i, w in enumerate(ws):
                h = bb.emit(op.matmul(h, w))
                if i < len(ws) - 1:
                    h = bb.emit(op.nn.relu(h))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def _numpy(x, ws):
    for i, w in enumerate(ws):
        x = x @ w
        if i < len(ws) - 1:
            x = np.maximum(x, 0)
    return x


def test_one_vm_from_four_threads_matches_numpy():
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((32, 32)).astype(F32) * 0.3 for _ in range(3)]
    vm = VirtualMachine(build(_mlp()))
    main = vm["main"]
    wrong, errors = [], []

    def worker(seed: int) -> None:
        r = np.random.default_rng(seed)
        xs = [r.standard_normal((8, 32)).astype(F32) for _ in range(8)]
        wants = [_numpy(x, ws) for x in xs]
        try:
            for k in range(300):
                got = main(xs[k % 8], *ws).numpy()
                if not np.allclose(got, wants[k % 8], rtol=1e-4, atol=1e-4):
                    wrong.append((seed, k))
        except Exception as err:  # noqa: BLE001 - reported by the assert below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not wrong, f"{len(wrong)} of 1200 results wrong"
    # the signature's frame is still the one frame tests and tools look at
    assert len(vm._functions["main"].frames) == 1


def test_results_of_concurrent_calls_are_not_shared_storage():
    """Returned tensors belong to the caller: a later call on any thread leaves them alone."""
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal((32, 32)).astype(F32) * 0.3 for _ in range(3)]
    vm = VirtualMachine(build(_mlp()))
    x1, x2 = (rng.standard_normal((8, 32)).astype(F32) for _ in range(2))
    first = vm["main"](x1, *ws)
    t = threading.Thread(target=lambda: [vm["main"](x2, *ws) for _ in range(20)])
    t.start()
    t.join()
    np.testing.assert_allclose(first.numpy(), _numpy(x1, ws), rtol=1e-4, atol=1e-4)
