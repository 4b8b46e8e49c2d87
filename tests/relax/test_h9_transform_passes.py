"""TVM-semantics relax passes: TopologicalSort, ConvertToDataflow, ExpandTupleArguments, and the
TVM behaviours of CanonicalizeBindings (block-local vars become DataflowVars), DeadCodeElimination
(exposed functions are entries) and FoldConstant (graph ops fold only inside dataflow blocks).
Each: a structural check of the result and a run showing before and after compute the same."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import TVMError
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T

RNG = np.random.default_rng(0)


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(a) for a in args])
    return out.numpy()


def _same_numbers(before, after, *args):
    np.testing.assert_allclose(_run(after, *args), _run(before, *args), rtol=1e-6, atol=1e-6)


def _names(func):
    return [b.var.name_hint for b in func.body.blocks[0].bindings]


# ----------------------------------------------------------------------------- TopologicalSort


@I.ir_module
class _Unsorted:
    @R.function
    def main(A: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            B1 = R.add(A, R.const(1.0))
            B2 = R.multiply(A, R.const(2.0))
            C2 = R.add(A, B2)
            C1 = R.subtract(A, B1)
            D = R.multiply(C1, C2)
            R.output(D)
        return D


@pytest.mark.parametrize(
    "order, direction, expected",
    [
        ("depth-first", "from-inputs", ["B1", "C1", "B2", "C2", "D"]),
        ("breadth-first", "from-inputs", ["B1", "B2", "C1", "C2", "D"]),
        ("depth-first", "from-outputs", ["B1", "C1", "B2", "C2", "D"]),
    ],
)
def test_topological_sort_orders_dataflow_bindings_by_walk(order, direction, expected):
    after = relax.transform.TopologicalSort(order, direction)(_Unsorted)
    assert _names(after["main"]) == expected
    assert relax.analysis.well_formed(after)
    _same_numbers(_Unsorted, after, RNG.standard_normal(4).astype("float32"))


def test_topological_sort_rejects_an_unknown_order():
    with pytest.raises(TVMError, match='invalid traversal order "sideways"'):
        relax.transform.TopologicalSort("sideways")


# ----------------------------------------------------------------------------- ConvertToDataflow


@I.ir_module
class _NoDataflow:
    @R.function
    def main(x: R.Tensor((3,), "float32"), y: R.Tensor((3,), "float32")) -> R.Tensor(
        (3,), "float32"
    ):
        z = R.add(x, y)
        w = R.multiply(z, y)
        v = R.subtract(w, x)
        return v


def test_convert_to_dataflow_wraps_pure_runs_and_localises_vars():
    after = relax.transform.ConvertToDataflow()(_NoDataflow)
    (block,) = after["main"].body.blocks
    assert isinstance(block, relax.DataflowBlock)
    kinds = [type(b.var) for b in block.bindings]
    assert kinds == [relax.DataflowVar, relax.DataflowVar, relax.Var]  # only `v` leaves
    xs, ys = RNG.standard_normal(3).astype("float32"), RNG.standard_normal(3).astype("float32")
    _same_numbers(_NoDataflow, after, xs, ys)


def test_convert_to_dataflow_leaves_runs_shorter_than_min_size():
    after = relax.transform.ConvertToDataflow(min_size=4)(_NoDataflow)
    assert not any(isinstance(b, relax.DataflowBlock) for b in after["main"].body.blocks)


# ----------------------------------------------------------------------------- ExpandTupleArguments


@I.ir_module
class _TupleArg:
    @R.function(private=True)
    def pick(
        args: R.Tuple(R.Tensor((2,), "float32"), R.Tensor((2,), "float32")),
    ) -> R.Tensor((2,), "float32"):
        a = args[0]
        b = args[1]
        c = R.subtract(a, b)
        return c

    @R.function
    def main(A: R.Tensor((2,), "float32"), B: R.Tensor((2,), "float32")) -> R.Tensor(
        (2,), "float32"
    ):
        cls = _TupleArg
        out: R.Tensor((2,), "float32") = cls.pick((A, B))
        return out


def test_expand_tuple_arguments_flattens_private_signature_and_calls():
    after = relax.transform.ExpandTupleArguments()(_TupleArg)
    pick = after["pick"]
    assert [p.name_hint for p in pick.params] == ["args_0", "args_1"]
    assert all(isinstance(p.struct_info, relax.TensorStructInfo) for p in pick.params)
    call = after["main"].body.blocks[-1].bindings[-1].value
    assert list(call.args) == list(after["main"].params)
    xs, ys = RNG.standard_normal(2).astype("float32"), RNG.standard_normal(2).astype("float32")
    _same_numbers(_TupleArg, after, xs, ys)


# ----------------------------------------------------------------------------- CanonicalizeBindings


@I.ir_module
class _ExtraOutput:
    @R.function
    def main(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
        with R.dataflow():
            y = R.add(x, R.const(1.0))
            z = R.multiply(y, R.const(3.0))
            R.output(y, z)
        return z


def test_canonicalize_bindings_makes_block_local_outputs_dataflow_vars():
    after = relax.transform.CanonicalizeBindings()(_ExtraOutput)
    y, z = (b.var for b in after["main"].body.blocks[0].bindings)
    assert isinstance(y, relax.DataflowVar) and not isinstance(z, relax.DataflowVar)
    _same_numbers(_ExtraOutput, after, RNG.standard_normal(3).astype("float32"))


# ----------------------------------------------------------------------------- DeadCodeElimination


@I.ir_module
class _Functions:
    @R.function(private=True)
    def unused(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
        return x

    @R.function
    def exposed(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
        y = R.add(x, x)
        return y

    @R.function
    def main(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
        y = R.multiply(x, x)
        return y


def test_dead_code_elimination_keeps_exposed_functions_and_drops_private_unused():
    after = relax.transform.DeadCodeElimination(["main"])(_Functions)
    assert sorted(gv.name_hint for gv in after.get_global_vars()) == ["exposed", "main"]
    _same_numbers(_Functions, after, RNG.standard_normal(3).astype("float32"))


# ----------------------------------------------------------------------------- AttachGlobalSymbol


@I.ir_module
class _PrivateOnly:
    I.module_attrs({"system_lib_prefix": "lib_"})

    @T.prim_func(private=True)
    def double(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] * T.float32(2)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = _PrivateOnly
        y = R.call_tir(cls.double, (x,), R.Tensor((4,), "float32"))
        return y


def test_attach_global_symbol_exposes_and_prefixes_prim_funcs():
    after = relax.transform.AttachGlobalSymbol()(_PrivateOnly)
    assert sorted(gv.name_hint for gv in after.get_global_vars()) == ["lib_double", "main"]
    assert after["lib_double"].attrs["global_symbol"] == "lib_double"
    callee = after["main"].body.blocks[0].bindings[0].value.args[0]
    assert callee is after.get_global_var("lib_double")
    assert relax.analysis.well_formed(after)
    _same_numbers(_PrivateOnly, after, RNG.standard_normal(4).astype("float32"))
