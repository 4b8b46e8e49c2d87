"""TVM v0.19 relax behaviours: Function return refinement, Normalize typing untyped vars, and
`R.rewriter` / `relax.PatternMatchingRewriter`."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.error import MiniTVMError
from minitvm.ir.structural import assert_structural_equal
from minitvm.relax.eval_ref import evaluate
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def test_normalize_refines_return_struct_info_from_the_body():
    x = relax.Var("x", R.Tensor([2, 3], "float32"))
    declared = R.Tensor("float32", ndim=2)
    f = relax.Function([x], relax.op.add(x, x), ret_struct_info=declared)
    assert_structural_equal(f.ret_struct_info, declared)  # a raw body refines nothing
    after = relax.transform.Normalize()(minitvm.IRModule.from_expr(f))["main"]
    assert_structural_equal(after.ret_struct_info, R.Tensor([2, 3], "float32"))
    loose = relax.Function([x], relax.SeqExpr([], x), ret_struct_info=relax.ObjectStructInfo())
    kept = relax.transform.Normalize()(minitvm.IRModule.from_expr(loose))["main"]
    assert_structural_equal(kept.ret_struct_info, R.Tensor([2, 3], "float32"))


def test_normalize_gives_untyped_var_the_if_struct_info():
    cond = relax.Var("cond", R.Tensor([], "bool"))
    x = relax.Var("x", R.Tensor([1], "float32"))
    y = relax.Var("y")  # no struct info: R.Object until Normalize fills it in
    branch_if = relax.If(cond, relax.op.add(x, x), relax.op.multiply(x, x))
    seq = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(y, branch_if)])], y)
    f = relax.Function([cond, x], seq, ret_struct_info=R.Tensor("float32", ndim=1))
    after = relax.transform.Normalize()(minitvm.IRModule.from_expr(f))["main"]
    binding = after.body.blocks[0].bindings[0]
    assert_structural_equal(binding.var.struct_info, R.Tensor([1], "float32"))
    assert after.body.body is binding.var  # the use was renamed along with the binding
    assert_structural_equal(after.ret_struct_info, R.Tensor([1], "float32"))


@R.rewriter
class _AddToPacked:
    @R.function
    def pattern(A: R.Tensor([16], "float32"), B: R.Tensor([16], "float32")):
        C = R.add(A, B)
        return C

    @R.function
    def replacement(A: R.Tensor([16], "float32"), B: R.Tensor([16], "float32")):
        C = R.call_pure_packed("fast_add", A, B, sinfo_args=R.Tensor([16], "float32"))
        return C


def test_rewriter_replaces_every_match():
    @R.function(private=True)
    def before(x: R.Tensor([16], "float32")):
        y = x + x
        z = y + y
        return z

    @R.function(private=True)
    def expected(x: R.Tensor([16], "float32")):
        y = R.call_pure_packed("fast_add", x, x, sinfo_args=R.Tensor([16], "float32"))
        z = R.call_pure_packed("fast_add", y, y, sinfo_args=R.Tensor([16], "float32"))
        return z

    assert_structural_equal(_AddToPacked(before), expected)


def test_rewriter_leaves_other_shapes_alone_and_runs_as_a_pass():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor([8], "float32")):
            y = x + x
            return y

    after = minitvm.ir.transform.Sequential([_AddToPacked])(Before)
    assert_structural_equal(after, Before)


def test_rewriter_composition_computes_the_same_values():
    @R.rewriter
    class DoubleToScale:
        @R.function
        def pattern(A: R.Tensor([4], "float32")):
            return A + A

        @R.function
        def replacement(A: R.Tensor([4], "float32")):
            return A * R.const(2.0, "float32")

    @R.rewriter
    class ScaleToDivide:  # A * B -> A / (1 / B): exact when B is a power of two
        @R.function
        def pattern(A: R.Tensor([4], "float32"), B: R.Tensor([], "float32")):
            return A * B

        @R.function
        def replacement(A: R.Tensor([4], "float32"), B: R.Tensor([], "float32")):
            return R.divide(A, R.divide(R.const(1.0, "float32"), B))

    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor([4], "float32")):
            y = x + x
            return y

    after = (DoubleToScale | ScaleToDivide)(Before)
    ops = [b.value.op.name for b in after["main"].body.blocks[0].bindings]
    assert ops == ["relax.divide", "relax.divide"]  # both rules applied, one after the other
    data = np.random.default_rng(0).standard_normal(4).astype("float32")
    got = evaluate(after, data)
    np.testing.assert_allclose(np.asarray(evaluate(Before, data)), data * 2.0, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(got), data * 2.0)


def test_rewriter_does_not_move_work_across_impure_calls():
    @R.rewriter
    class FuseMatmulAdd:
        @R.function
        def pattern(s: R.Tensor([4], "float32"), w: R.Tensor([4, 4], "float32")):
            t = R.matmul(w, s)
            return R.add(t, s)

        @R.function
        def replacement(s: R.Tensor([4], "float32"), w: R.Tensor([4, 4], "float32")):
            return R.call_pure_packed("fma", s, w, sinfo_args=R.Tensor([4], "float32"))

    @R.function(private=True, pure=False)
    def before(s: R.Tensor([4], "float32"), w: R.Tensor([4, 4], "float32")):
        t = R.matmul(w, s)
        R.print(format="between")
        u = R.add(t, s)
        return u

    assert_structural_equal(FuseMatmulAdd(before), before)


def test_rewriter_errors_name_the_problem():
    with pytest.raises(KeyError, match="replacement"):

        @R.rewriter
        class NoReplacement:
            @R.function
            def pattern():
                return R.tuple()

    with pytest.raises(ValueError, match="must have the same signature"):

        @R.rewriter
        class Mismatch:
            @R.function
            def pattern(A: R.Tensor([32])):
                return A

            @R.function
            def replacement(A: R.Tensor([16])):
                return A

    with pytest.raises(MiniTVMError):

        @R.rewriter
        class NotRelax:
            @R.function
            def pattern():
                return R.tuple()

            replacement = None


def test_rewriter_matches_an_implicit_tuple_inside_a_dataflow_block():
    @R.rewriter
    class AddSubPair:
        @R.function
        def pattern(x: R.Tensor([4], "float32"), y: R.Tensor([4], "float32")):
            return (x + y, x - y)

        @R.function
        def replacement(x: R.Tensor([4], "float32"), y: R.Tensor([4], "float32")):
            s = x + y
            return (s, s - y - y)

    @I.ir_module
    class Before:
        @R.function
        def main(a: R.Tensor([4], "float32"), b: R.Tensor([4], "float32")):
            with R.dataflow():
                p = a + b
                q = a - b
                out = R.multiply(p, q)
                R.output(out)
            return out

    after = AddSubPair(Before)
    assert relax.analysis.well_formed(after)
    ops = [b.value.op.name for b in after["main"].body.blocks[0].bindings if hasattr(b.value, "op")]
    assert ops.count("relax.subtract") == 2 and ops.count("relax.add") == 1
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(4).astype("float32") for _ in range(2))
    np.testing.assert_allclose(
        np.asarray(evaluate(after, a, b)), (a + b) * (a - b), rtol=1e-5, atol=1e-6
    )


def test_rewriter_that_matches_its_own_output_raises():
    @R.rewriter
    class Commute:
        @R.function
        def pattern(x: R.Tensor([4], "float32"), y: R.Tensor([4], "float32")):
            return x + y

        @R.function
        def replacement(x: R.Tensor([4], "float32"), y: R.Tensor([4], "float32")):
            return y + x

    @R.function(private=True)
    def before(a: R.Tensor([4], "float32"), b: R.Tensor([4], "float32")):
        c = a + b
        return c

    with pytest.raises(MiniTVMError, match="never converges"):
        Commute(before)


def _double_rewriter():
    @R.rewriter
    class DoubleViaSubroutine:
        @R.function
        def pattern(A: R.Tensor([4], "float32")):
            return A + A

        @R.function
        def replacement(A: R.Tensor([4], "float32")) -> R.Tensor([4], "float32"):
            B = DoubleViaSubroutine.subroutine(A)
            return B

        @R.function(private=True)
        def subroutine(A: R.Tensor([4], "float32")) -> R.Tensor([4], "float32"):
            return A * R.const(2.0, "float32")

    return DoubleViaSubroutine


def test_rewriter_copies_used_private_subroutines_renaming_on_clash():
    @R.rewriter
    class Unused:
        @R.function
        def pattern(A: R.Tensor([4], "float32")):
            return A * A

        @R.function
        def replacement(A: R.Tensor([4], "float32")) -> R.Tensor([4], "float32"):
            B = Unused.helper(A)
            return B

        @R.function(private=True)
        def helper(A: R.Tensor([4], "float32")) -> R.Tensor([4], "float32"):
            return A

    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor([4], "float32")):
            y = x + x
            z = y + y
            return z

        @R.function(private=True)
        def subroutine(x: R.Tensor([4], "float32")) -> R.Tensor([4], "float32"):
            return x

    after = (_double_rewriter() | Unused)(Before)
    assert sorted(after) == ["main", "subroutine", "subroutine_1"]  # Unused.helper not copied
    calls = [b.value.op.name_hint for b in after["main"].body.blocks[0].bindings]
    assert calls == ["subroutine_1", "subroutine_1"]
    data = np.random.default_rng(0).standard_normal(4).astype("float32")
    np.testing.assert_array_equal(np.asarray(evaluate(after, data)), data * 4.0)


def test_rewriter_refuses_public_subroutines():
    with pytest.raises(ValueError, match="is publicly exposed"):

        @R.rewriter
        class Public:
            @R.function
            def pattern(A: R.Tensor([4], "float32")):
                return A + A

            @R.function
            def replacement(A: R.Tensor([4], "float32")) -> R.Tensor([4], "float32"):
                B = Public.subroutine(A)
                return B

            @R.function
            def subroutine(A: R.Tensor([4], "float32")) -> R.Tensor([4], "float32"):
                return A


def test_rewriter_binds_symbolic_dims_of_the_pattern():
    @R.rewriter
    class Doubling:
        @R.function
        def pattern(A: R.Tensor(["n"], "float32")):
            return A + A

        @R.function
        def replacement(A: R.Tensor(["n"], "float32")):
            n = T.int64()
            return R.call_pure_packed("double", A, sinfo_args=R.Tensor([n], "float32"))

    @R.function(private=True)
    def before(x: R.Tensor([8], "float32"), y: R.Tensor(["m"], "float32")):
        a = x + x
        b = y + y
        return (a, b)

    @R.function(private=True)
    def expected(x: R.Tensor([8], "float32"), y: R.Tensor(["m"], "float32")):
        m = T.int64()
        a = R.call_pure_packed("double", x, sinfo_args=R.Tensor([8], "float32"))
        b = R.call_pure_packed("double", y, sinfo_args=R.Tensor([m], "float32"))
        return (a, b)

    assert_structural_equal(Doubling(before), expected)
