"""AdjustMatmulOrder, ExpandMatmulOfSum, ReorderTakeAfterMatmul, ReorderPermuteDimsAfterConcat:
the rewritten structure, and before/after computing the same numbers (float rounding only:
sums are associated differently)."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R

RNG = np.random.default_rng(0)


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*[tvm.nd.array(a) for a in args]).numpy()


def _check_same(before, after, *args):
    np.testing.assert_allclose(_run(after, *args), _run(before, *args), rtol=1e-5, atol=1e-5)


def _ops(func):
    return [
        b.value.op.name
        for block in func.body.blocks
        for b in block.bindings
        if isinstance(b.value, relax.Call)
    ]


def _f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


@I.ir_module
class _LowRank:
    @R.function
    def main(
        x: R.Tensor((4, 16), "float32"),
        A: R.Tensor((16, 2), "float32"),
        B: R.Tensor((2, 32), "float32"),
    ) -> R.Tensor((4, 32), "float32"):
        with R.dataflow():
            weight = R.matmul(A, B)
            out = R.matmul(x, weight)
            R.output(out)
        return out


def test_adjust_matmul_order_multiplies_through_the_low_rank_side_first():
    after = relax.transform.AdjustMatmulOrder()(_LowRank)
    (first, second) = after["main"].body.blocks[0].bindings
    x, a, b = after["main"].params
    assert list(first.value.args) == [x, a] and list(second.value.args) == [first.var, b]
    assert relax.transform.AdjustMatmulOrder()(after)["main"] is after["main"]  # idempotent
    _check_same(_LowRank, after, _f32(4, 16), _f32(16, 2), _f32(2, 32))


@I.ir_module
class _LowRankTransposed:
    @R.function
    def main(
        x: R.Tensor((3, 16), "float32"),
        A: R.Tensor((32, 2), "float32"),
        B: R.Tensor((2, 16), "float32"),
    ) -> R.Tensor((3, 32), "float32"):
        with R.dataflow():
            linear = R.matmul(A, B)
            weight = R.permute_dims(linear)
            out = R.matmul(x, weight)
            R.output(out)
        return out


def test_adjust_matmul_order_sees_through_a_transposed_product():
    after = relax.transform.AdjustMatmulOrder()(_LowRankTransposed)
    assert _ops(after["main"]) == [
        "relax.permute_dims",
        "relax.matmul",
        "relax.permute_dims",
        "relax.matmul",
    ]
    _check_same(_LowRankTransposed, after, _f32(3, 16), _f32(32, 2), _f32(2, 16))


@I.ir_module
class _SumWeight:
    @R.function
    def main(
        x: R.Tensor((2, 8), "float32"),
        A: R.Tensor((8, 4), "float32"),
        B: R.Tensor((8, 4), "float32"),
    ) -> R.Tensor((2, 4), "float32"):
        with R.dataflow():
            weight = R.add(A, B)
            out = R.matmul(x, weight)
            R.output(out)
        return out


@I.ir_module
class _BroadcastSum:
    @R.function
    def main(
        x: R.Tensor((2, 8), "float32"), A: R.Tensor((8, 4), "float32"), B: R.Tensor((4,), "float32")
    ) -> R.Tensor((2, 4), "float32"):
        with R.dataflow():
            weight = R.add(A, B)
            out = R.matmul(x, weight)
            R.output(out)
        return out


def test_expand_matmul_of_sum_distributes_and_skips_broadcast_sums():
    after = relax.transform.ExpandMatmulOfSum()(_SumWeight)
    assert _ops(after["main"]) == ["relax.matmul", "relax.matmul", "relax.add"]
    _check_same(_SumWeight, after, _f32(2, 8), _f32(8, 4), _f32(8, 4))
    # x @ B with B of shape (4,) is not x @ broadcast(B): left alone
    assert relax.transform.ExpandMatmulOfSum()(_BroadcastSum)["main"] is _BroadcastSum["main"]


@I.ir_module
class _PickedColumns:
    @R.function
    def main(
        x: R.Tensor((2, 8), "float32"),
        table: R.Tensor((8, 6), "float32"),
        idx: R.Tensor((3,), "int64"),
    ) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            weight = R.take(table, idx, axis=1)
            out = R.matmul(x, weight)
            R.output(out)
        return out


@I.ir_module
class _PickedTables:
    @R.function
    def main(
        x: R.Tensor((3, 1, 8), "float32"),
        tables: R.Tensor((4, 8, 5), "float32"),
        idx: R.Tensor((3,), "int64"),
    ) -> R.Tensor((3, 1, 5), "float32"):
        with R.dataflow():
            weight = R.take(tables, idx, axis=0)
            out = R.matmul(x, weight)
            R.output(out)
        return out


def test_reorder_take_after_matmul_picks_after_multiplying():
    after = relax.transform.ReorderTakeAfterMatmul()(_PickedColumns)
    assert _ops(after["main"]) == ["relax.matmul", "relax.take"]
    idx = np.array([5, 0, 3], dtype="int64")
    _check_same(_PickedColumns, after, _f32(2, 8), _f32(8, 6), idx)


def test_reorder_take_after_matmul_batched_tables_match_numpy():
    after = relax.transform.ReorderTakeAfterMatmul()(_PickedTables)
    assert _ops(after["main"])[-1] == "relax.einsum"
    x, tables = _f32(3, 1, 8), _f32(4, 8, 5)
    idx = np.array([2, 0, 3], dtype="int64")
    want = np.stack([x[i] @ tables[idx[i]] for i in range(3)])
    np.testing.assert_allclose(_run(after, x, tables, idx), want, rtol=1e-5, atol=1e-5)
    _check_same(_PickedTables, after, x, tables, idx)


@I.ir_module
class _ConcatOfTransposes:
    @R.function
    def main(
        x: R.Tensor((2, 4), "float32"),
        wa: R.Tensor((3, 4), "float32"),
        wb: R.Tensor((5, 4), "float32"),
    ) -> R.Tensor((2, 8), "float32"):
        with R.dataflow():
            ta = R.permute_dims(wa)
            tb = R.permute_dims(wb, axes=[1, 0])
            w = R.concat([ta, tb], axis=1)
            out = R.matmul(x, w)
            R.output(out)
        return out


def test_reorder_permute_dims_after_concat_transposes_once():
    after = relax.transform.ReorderPermuteDimsAfterConcat()(_ConcatOfTransposes)
    cat, perm, _ = after["main"].body.blocks[0].bindings
    assert cat.value.op.name == "relax.concat" and int(cat.value.attrs["axis"]) == 0
    assert perm.value.op.name == "relax.permute_dims"
    _check_same(_ConcatOfTransposes, after, _f32(2, 4), _f32(3, 4), _f32(5, 4))
