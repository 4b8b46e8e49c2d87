"""StaticPlanBlockMemory: intermediates share storage by liveness; outputs and params never do."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import ShapeError
from minitvm.relax import op
from minitvm.relax.transform.static_plan_block_memory import PLAN_ATTR, plan_function
from minitvm.relax.vm import VirtualMachine, build

F32 = "float32"


def _mlp(layers: int = 4, width: int = 64, batch: int = 16):
    x = relax.Var("x", relax.TensorStructInfo((batch, width), F32))
    ws = [relax.Var(f"w{i}", relax.TensorStructInfo((width, width), F32)) for i in range(layers)]
    bs = [relax.Var(f"b{i}", relax.TensorStructInfo((width,), F32)) for i in range(layers)]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *ws, *bs]):
        with bb.dataflow():
            h = x
            for i in range(layers):
                h = bb.emit(op.add(op.matmul(h, ws[i]), bs[i]))
                if i < layers - 1:
                    h = bb.emit(op.nn.relu(h))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def _mlp_numpy(x, ws, bs):
    for i, (w, b) in enumerate(zip(ws, bs)):
        x = x @ w + b
        if i < len(ws) - 1:
            x = np.maximum(x, 0)
    return x


def _frame_storage_bytes(vm) -> int:
    (frame,) = vm._functions["main"].frames.values()
    return sum(s.nbytes for s in frame.storages)


def test_planning_halves_intermediate_bytes_of_a_4_layer_mlp():
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((64, 64)).astype(F32) * 0.2 for _ in range(4)]
    bs = [rng.standard_normal(64).astype(F32) for _ in range(4)]
    x = rng.standard_normal((16, 64)).astype(F32)
    figures = {}
    for fusion in (0, 2):
        with tvm.transform.PassContext(opt_level=fusion, disabled_pass=["StaticPlanBlockMemory"]):
            plain = build(_mlp())
        with tvm.transform.PassContext(opt_level=fusion):
            planned = build(_mlp())
        unplanned_bytes = plain.memory_stats()["allocated_bytes"]
        planned_bytes = planned.memory_stats()["allocated_bytes"]
        assert plain.memory_stats()["intermediate_bytes"] == unplanned_bytes
        assert planned.memory_stats()["intermediate_bytes"] == unplanned_bytes
        for ex in (plain, planned):
            vm = VirtualMachine(ex, tvm.cpu())
            for _ in range(2):  # the second call reuses the planned storage
                out = vm["main"](x, *ws, *bs)
                np.testing.assert_allclose(out.numpy(), _mlp_numpy(x, ws, bs), rtol=1e-4, atol=1e-3)
        assert _frame_storage_bytes(vm) == planned_bytes  # what the VM really allocated
        figures[fusion] = (
            planned_bytes,
            unplanned_bytes,
            planned.memory_stats()["num_intermediates"],
        )
    planned_bytes, unplanned_bytes, count = figures[0]
    message = (
        f"4-layer MLP (batch 16, width 64), unfused: {count} intermediates, planned {planned_bytes} "
        f"bytes vs unplanned {unplanned_bytes} bytes; fused: planned {figures[2][0]} vs "
        f"unplanned {figures[2][1]} bytes ({figures[2][2]} intermediates)"
    )
    assert 2 * planned_bytes <= unplanned_bytes, message
    assert figures[2][0] < figures[2][1], message
    print(message)


def _chain_with_long_lived_value():
    """a = x+x; b = a*x; c = b+a (a still live); d = c*c (output is d and a)."""
    x = relax.Var("x", relax.TensorStructInfo((8,), F32))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.add(x, x))
            b = bb.emit(op.multiply(a, x))
            c = bb.emit(op.add(b, a))
            d = bb.emit(op.multiply(c, c))
            e = bb.emit(op.add(d, x))
            gv = bb.emit_output(relax.Tuple((e, a)))
        bb.emit_func_output(gv)
    return bb.get()


def test_outputs_are_never_planned_and_live_values_keep_their_storage():
    with tvm.transform.PassContext(opt_level=0):
        ex = build(_chain_with_long_lived_value())
    stats = ex.memory_stats()
    assert stats["num_outputs"] == 2 and stats["num_intermediates"] == 3  # e and a escape
    assert stats["num_storages"] == 2  # b, c, d: c overlaps b, d reuses b's storage
    vm = VirtualMachine(ex, tvm.cpu())
    xs = np.arange(8, dtype=F32)
    e1, a1 = vm["main"](xs)
    e2, a2 = vm["main"](xs + 1)
    for x, e, a in ((xs, e1, a1), (xs + 1, e2, a2)):  # first results were not overwritten
        a_ref = x + x
        c_ref = a_ref * x + a_ref
        np.testing.assert_allclose(a.numpy(), a_ref)
        np.testing.assert_allclose(e.numpy(), c_ref * c_ref + x)


def test_symbolic_sizes_share_only_within_a_size_class():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 4), F32))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit(op.add(x, x))  # n*16 bytes
        b = bb.emit(op.concat([a, a], axis=0))  # n*32 bytes: another class
        c = bb.emit(op.multiply(a, a))  # n*16: a is still live (used by c) -> new storage
        d = bb.emit(op.add(c, c))  # n*16: a is dead -> reuses a's storage
        e = bb.emit(op.concat([d, b], axis=0))
        bb.emit_func_output(e)
    mod = bb.get()
    with tvm.transform.PassContext(opt_level=0):
        mod = relax.transform.LegalizeOps()(mod)
    plan = plan_function(mod["main"])
    sizes = [str(s) for s in plan["storages"]]
    assert len(sizes) == 3, sizes  # a/d share; b; c
    assert sorted(sizes) == sorted([sizes[0], sizes[0], sizes[1]]) and sizes[0] != sizes[1], sizes
    assert "32" in sizes[1] and "16" in sizes[0]  # a's class (n*16 bytes), then b's (n*32)
    with tvm.transform.PassContext(opt_level=0):
        vm = VirtualMachine(build(bb.get()), tvm.cpu())
    for rows in (1, 5):
        xs = np.random.default_rng(rows).standard_normal((rows, 4)).astype(F32)
        a_ref = xs + xs
        ref = np.concatenate([2 * a_ref * a_ref, np.concatenate([a_ref, a_ref])])
        np.testing.assert_allclose(vm["main"](xs).numpy(), ref, rtol=1e-6)


def test_upper_bound_makes_symbolic_storage_static():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 4), F32))
    bb = relax.BlockBuilder()
    with bb.function("main", [x], attrs={"tir_var_upper_bound": {"n": 8}}):
        a = bb.emit(op.add(x, x))
        b = bb.emit(op.multiply(a, a))
        c = bb.emit(op.add(b, b))  # reuses a's storage
        bb.emit_func_output(bb.emit(op.add(c, x)))
    with tvm.transform.PassContext(opt_level=0):
        ex = build(bb.get())
    mod_plan = ex.program["functions"]["main"]["storages"]
    assert mod_plan == ["128", "128"], mod_plan  # 8 * 4 * 4 bytes each, for a/c and b
    assert ex.memory_stats()["num_intermediates"] == 3
    vm = VirtualMachine(ex, tvm.cpu())
    xs = np.ones((3, 4), F32)
    np.testing.assert_allclose(vm["main"](xs).numpy(), 9 * np.ones((3, 4)))
    with pytest.raises(ShapeError, match="exceeds its tir_var_upper_bound"):
        vm["main"](np.ones((9, 4), F32))


def test_random_programs_match_numpy_with_planning():
    """Random DAGs of adds/multiplies over earlier values: reuse must never clobber a live value."""
    rng = np.random.default_rng(42)
    for trial in range(3):
        x = relax.Var("x", relax.TensorStructInfo((6,), F32))
        bb = relax.BlockBuilder()
        refs = []
        xs = rng.standard_normal(6).astype(F32)
        with bb.function("main", [x]):
            with bb.dataflow():
                vals, nums = [x], [xs]
                for _ in range(10):
                    i, j = rng.integers(0, len(vals), size=2)
                    use_add = bool(rng.integers(0, 2))
                    f = op.add if use_add else op.multiply
                    vals.append(bb.emit(f(vals[i], vals[j])))
                    nums.append(nums[i] + nums[j] if use_add else nums[i] * nums[j])
                picks = sorted({int(k) for k in rng.integers(1, len(vals), size=2)})
                out = bb.emit_output(relax.Tuple(tuple(vals[k] for k in picks)))
                refs = [nums[k] for k in picks]
            bb.emit_func_output(out)
        with tvm.transform.PassContext(opt_level=0):
            ex = build(bb.get())
        assert PLAN_ATTR not in ex.program  # the plan lives in the function program
        got = VirtualMachine(ex, tvm.cpu())["main"](xs)
        for g, r in zip(got, refs):
            np.testing.assert_allclose(g.numpy(), r, rtol=1e-5, err_msg=f"trial {trial}")
