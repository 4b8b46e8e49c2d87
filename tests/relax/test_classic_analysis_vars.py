"""relax.analysis all_vars / bound_vars / free_vars / all_global_vars / udchain /
name_to_binding / detect_recursion / has_reshape_pattern, with TVM's documented meaning."""

import pytest

import minitvm as tvm
from minitvm import relax as rx
from minitvm import tir
from minitvm.script import relax as R
from minitvm.script import tir as T


def _names(vs):
    return [v.name_hint for v in vs]


def _closure():
    x = rx.Var("x", R.Tensor((4,), "float32"))
    y = rx.Var("y", R.Tensor((4,), "float32"))
    z = rx.Var("z", R.Tensor((4,), "float32"))
    inner = rx.Function(
        [z], rx.op.add(x, rx.op.add(y, z)), ret_struct_info=R.Tensor((4,), "float32")
    )
    outer = rx.Function([x, y], rx.Call(inner, [y]), ret_struct_info=R.Tensor((4,), "float32"))
    return inner, outer


def test_free_vars_of_a_closure_are_its_captures():
    inner, outer = _closure()
    assert _names(free_vars := rx.analysis.free_vars(inner)) == ["x", "y"]
    assert all(isinstance(v, rx.Var) for v in free_vars)
    assert rx.analysis.free_vars(outer) == []
    assert _names(rx.analysis.bound_vars(outer)) == ["x", "y", "z"]
    assert _names(rx.analysis.all_vars(inner)) == ["z", "x", "y"]


def _chain():
    n = tir.Var("n", "int64")
    x = rx.Var("x", R.Tensor((n,), "float32"))
    y = rx.Var("y", R.Tensor((n,), "float32"))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit(rx.op.add(x, y))
            b = bb.emit(rx.op.multiply(a, y))
            c = bb.emit_output(b)
        bb.emit_func_output(c)
    return bb.get(), (x, y, a, b, c)


def test_udchain_lists_the_users_of_each_variable():
    mod, (x, y, a, b, c) = _chain()
    udc = rx.analysis.udchain(mod["main"].body.blocks[0])
    assert udc[x] == [a]
    assert udc[y] == [a, b]
    assert udc[a] == [b]
    assert udc[b] == [c]
    assert udc[c] == []


def test_name_to_binding_and_bound_vars_of_a_body():
    mod, (_, _, a, b, c) = _chain()
    func = mod["main"]
    n2b = rx.analysis.name_to_binding(func)
    assert sorted(n2b) == sorted([a.name_hint, b.name_hint, c.name_hint])
    assert all(len(v) == 1 for v in n2b.values())
    body_bound = rx.analysis.bound_vars(func.body)
    assert [v is w for v, w in zip(body_bound, (a, b, c))] == [True] * 3
    assert _names(rx.analysis.free_vars(func.body)) == ["x", "y"]


def test_all_global_vars_in_a_call():
    g1, g2 = rx.GlobalVar("f"), rx.GlobalVar("g")
    x = rx.Var("x", R.Tensor((2,), "float32"))
    call = rx.Call(g1, [x, g2])
    assert _names(rx.analysis.all_global_vars(call)) == ["f", "g"]


def _module_calling(edges):
    """A module of identity functions; f calls each function in edges[f] in turn."""
    gvs = {name: rx.GlobalVar(name) for name in edges}
    mod = tvm.IRModule()
    sinfo = R.Tensor((2,), "float32")
    for name, callees in edges.items():
        x = rx.Var("x", sinfo)
        body = x
        for c in callees:
            body = rx.Call(gvs[c], [body], sinfo_args=[sinfo])
        mod[gvs[name]] = rx.Function([x], body, ret_struct_info=sinfo)
    return mod


@pytest.mark.parametrize(
    "edges, groups",
    [
        ({"a": ["b"], "b": ["c"], "c": []}, []),
        ({"a": ["a"], "b": []}, [{"a"}]),
        ({"a": ["b"], "b": ["a"], "c": ["a"]}, [{"a", "b"}]),
        (
            {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["e"], "e": ["d", "e"]},
            [{"a", "b", "c"}, {"d", "e"}],
        ),
    ],
)
def test_detect_recursion_finds_each_cycle_group(edges, groups):
    found = rx.analysis.detect_recursion(_module_calling(edges))
    assert sorted(map(sorted, ({g.name_hint for g in grp} for grp in found))) == sorted(
        map(sorted, groups)
    )


def test_reshape_pattern_accepts_a_flattening_copy_and_rejects_a_bias():
    @T.prim_func
    def reshape(A: T.Buffer((2, 3, 4), "float32"), B: T.Buffer((6, 4), "float32")):
        for i, j in T.grid(6, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[(vi * 4 + vj) // 12, (vi * 4 + vj) % 12 // 4, (vi * 4 + vj) % 4]

    @T.prim_func
    def transpose(A: T.Buffer((4, 6), "float32"), B: T.Buffer((6, 4), "float32")):
        for i, j in T.grid(6, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj, vi]

    @T.prim_func
    def bias(A: T.Buffer((6, 4), "float32"), B: T.Buffer((6, 4), "float32")):
        for i, j in T.grid(6, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    assert rx.analysis.has_reshape_pattern(reshape)
    assert not rx.analysis.has_reshape_pattern(transpose)  # same shape, different positions
    assert not rx.analysis.has_reshape_pattern(bias)


def test_bad_inputs_are_refused_with_the_function_name():
    with pytest.raises(tvm.error.MiniTVMError, match="detect_recursion"):
        rx.analysis.detect_recursion("not a module")
    with pytest.raises(tvm.error.MiniTVMError, match="udchain"):
        rx.analysis.udchain(None)


def test_defined_and_free_symbolic_vars():
    m, n, k, p = (tir.Var(c, "int64") for c in "mnkp")
    x = rx.Var("x", rx.TensorStructInfo([m, m + n], "float32"))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        bb.match_cast(x, rx.TensorStructInfo([m, k], "float32"))
        y = bb.emit(rx.call_dps_packed("ext", x, rx.TensorStructInfo([p], "float32")))
        bb.emit_func_output(y)
    func = bb.get()["main"]
    assert [v.name for v in rx.analysis.defined_symbolic_vars(func)] == ["m", "k"]
    assert {v.name for v in rx.analysis.free_symbolic_vars(func)} == {"n", "p"}
