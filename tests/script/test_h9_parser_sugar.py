"""TVMScript sugar as TVM parses it: `return x` is T.ret(x); lambdas (T.comm_reducer's
combiner); T.handle("void")."""

import pytest

import minitvm as tvm
from minitvm import tir
from minitvm.script import from_source
from minitvm.script import tir as T


def test_return_is_t_ret_and_the_built_function_returns_it():
    @T.prim_func
    def implicit(x: T.int32):
        return x * 3 + 1

    @T.prim_func
    def explicit(x: T.int32):
        T.evaluate(T.ret(x * 3 + 1))

    same = [g.with_attr("global_symbol", "f") for g in (implicit, explicit)]
    tvm.ir.assert_structural_equal(*same)
    f = tvm.build(implicit.with_attr("global_symbol", "implicit"), target="llvm")
    assert f(5) == 16


def test_returning_a_buffer_is_refused():
    src = """
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    return A
"""
    with pytest.raises(SyntaxError, match="returns one scalar"):
        from_source(src)


def test_comm_reducer_builds_the_reducer_from_a_lambda():
    r = T.comm_reducer(lambda x, y: x + y, [T.float32(0)])
    assert [v.name for v in r.lhs] == ["x"] and [v.name for v in r.rhs] == ["y"]
    assert isinstance(r.result[0], tir.Add) and r.result[0].a is r.lhs[0]
    pair = T.comm_reducer(lambda a, b, c, d: (T.max(a, c), b + d), [T.float32(0), T.int32(0)])
    assert [str(v.dtype) for v in pair.lhs] == ["float32", "int32"]
    with pytest.raises(SyntaxError, match="need 4"):
        T.comm_reducer(lambda x, y: x + y, [T.float32(0), T.int32(0)])


def test_lambda_inside_a_script_is_evaluated_with_its_parameters_bound():
    @T.prim_func(check_well_formed=False)
    def f(A: T.Buffer((4,), "float32")):
        T.attr(T.comm_reducer(lambda x, y: x * y, [T.float32(1)]), "reduce_scope", 0)
        A[0] = T.float32(0)

    reducer = f.body.node
    assert isinstance(reducer.result[0], tir.Mul)
    assert reducer.result[0].a is reducer.lhs[0] and reducer.result[0].b is reducer.rhs[0]


def test_lambda_with_defaults_is_refused():
    src = """
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.attr(T.comm_reducer(lambda x, y=1: x + y, [T.float32(0)]), "reduce_scope", 0)
    A[0] = T.float32(0)
"""
    with pytest.raises(SyntaxError, match="plain parameters"):
        from_source(src)


def test_void_handle_parameter_is_a_handle():
    @T.prim_func
    def f(out: T.handle("void")):
        T.evaluate(out)

    assert str(f.params[0].dtype).startswith("handle")
