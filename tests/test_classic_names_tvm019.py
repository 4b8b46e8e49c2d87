"""Names and behaviours TVM v0.19's own unit tests rely on (issue 27), checked against TVM's
documented behaviour and, where something computes, against numpy."""

import subprocess
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import DiagnosticError, MiniTVMError, ParseError
from minitvm.relax.analysis import struct_info_lca, well_formed, well_formed_errors
from minitvm.relax.ir.instrument import IllFormedModuleError, WellFormedInstrument
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def _run_add_one(func, n=6):
    lib = tvm.build(func, target="llvm")
    a = np.random.default_rng(0).standard_normal(n).astype("float32")
    b = tvm.nd.empty((n,), "float32")
    lib(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a + 1, rtol=1e-6)


# ----------------------------------------------------------------------------- @T.prim_func in a class


class PlainHolder:
    @T.prim_func
    def add_one(A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32")):
        for i in range(6):
            B[i] = A[i] + T.float32(1)

    @R.function
    def ident(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return x


@T.prim_func
def add_one_top(A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32")):
    for i in range(6):
        B[i] = A[i] + T.float32(1)


def test_prim_func_in_a_plain_class_is_parsed_at_once():
    assert isinstance(PlainHolder.add_one, tir.PrimFunc)
    assert isinstance(PlainHolder.ident, relax.Function)
    renamed = add_one_top.with_attr("global_symbol", "add_one")
    assert tvm.ir.structural_equal(PlainHolder.add_one, renamed)
    _run_add_one(PlainHolder.add_one)


@I.ir_module
class CrossRef:
    @T.prim_func
    def add_one(A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32")):
        for i in range(6):
            B[i] = A[i] + T.float32(1)

    @R.function
    def main(x: R.Tensor((6,), "float32")) -> R.Tensor((6,), "float32"):
        cls = CrossRef
        y = R.call_tir(cls.add_one, (x,), R.Tensor((6,), "float32"))
        return y


def test_functions_of_an_ir_module_class_still_reference_each_other():
    assert isinstance(CrossRef, tvm.IRModule)
    ex = relax.build(CrossRef, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    x = np.arange(6, dtype="float32")
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(), x + 1)


# ----------------------------------------------------------------------------- T.handle(dtype, scope)


def test_handle_with_dtype_and_scope_declares_a_pointer_parameter():
    @T.prim_func
    def f(a: T.handle("float32"), b: T.handle("float32", "global")):
        A = T.match_buffer(a, (6,), "float32")
        B = T.match_buffer(b, (6,), "float32")
        p: T.handle("float32", "shared")  # noqa: F842 - a declaration only
        for i in range(6):
            B[i] = A[i] + T.float32(1)

    assert [p.dtype.is_handle for p in f.params] == [True, True]
    _run_add_one(f)


def test_handle_with_a_bad_dtype_is_refused_clearly():
    with pytest.raises(ParseError, match="T.handle.*not a dtype"):
        T.handle("floatxx")
    with pytest.raises(ParseError, match="storage_scope"):
        T.handle("float32", 3)


# ----------------------------------------------------------------------------- PrimFunc([Buffer])


def test_prim_func_takes_buffers_as_parameters():
    n = tir.Var("n", "int32")
    A = tir.decl_buffer((n,), "float32", name="A")
    B = tir.decl_buffer((n,), "float32", name="B")
    i = tir.Var("i", "int32")
    body = tir.For(i, 0, n, tir.ForKind.SERIAL, tir.BufferStore(B, A[i] + 1.0, [i]))
    func = tir.PrimFunc([A, B], body).with_attr("global_symbol", "add_one")
    assert all(p.dtype.is_handle for p in func.params)
    assert [func.buffer_map[p] for p in func.params] == [A, B]
    _run_add_one(func)
    with pytest.raises(MiniTVMError, match="tir.Var or tir.Buffer"):
        tir.PrimFunc([1.5], body)


# ----------------------------------------------------------------------------- well_formed


def _func(params, blocks, body):
    return relax.Function(params, relax.SeqExpr(blocks, body))


def _tensor(*shape):
    return relax.TensorStructInfo(shape, "float32")


def test_well_formed_accepts_a_parsed_module():
    assert well_formed(CrossRef)
    assert well_formed(CrossRef["main"])


def test_well_formed_rejects_a_dataflow_var_used_outside_its_block():
    x = relax.Var("x", _tensor(2))
    y = relax.DataflowVar("y", _tensor(2))
    block = relax.DataflowBlock([relax.VarBinding(y, relax.op.add(x, x))])
    errors = well_formed_errors(_func([x], [block], y))
    assert errors and "DataflowVar 'y' is used outside its dataflow block" in errors[0]


def test_well_formed_rejects_use_before_definition_and_double_definition():
    x = relax.Var("x", _tensor(2))
    y = relax.Var("y", _tensor(2))
    z = relax.Var("z", _tensor(2))
    block = relax.BindingBlock([relax.VarBinding(z, relax.op.add(y, x))])
    assert not well_formed(_func([x], [block], z))
    twice = relax.BindingBlock([relax.VarBinding(x, relax.op.add(x, x))])
    errors = well_formed_errors(_func([x], [twice], x))
    assert any("defined more than once" in e for e in errors)


def test_well_formed_checks_global_vars_and_symbols():
    x = relax.Var("x", _tensor(2))
    y = relax.Var("y", _tensor(2))
    call = relax.Call(tvm.ir.GlobalVar("missing"), [x], sinfo_args=[_tensor(2)])
    mod = tvm.IRModule({"main": _func([x], [relax.BindingBlock([relax.VarBinding(y, call)])], y)})
    assert any("names no function" in e for e in well_formed_errors(mod))
    f = _func([x], [], x).with_attr("global_symbol", "other")
    assert any("global_symbol" in e for e in well_formed_errors(tvm.IRModule({"main": f})))


def test_well_formed_scopes_symbolic_vars_to_their_function():
    n = tir.Var("n", "int64")
    x = relax.Var("x", _tensor(n))
    y = relax.Var("y", _tensor(2))
    s = relax.Var("s", relax.ShapeStructInfo(ndim=1))
    shape_of_n = relax.BindingBlock([relax.VarBinding(s, relax.ShapeExpr([n]))])
    mod = tvm.IRModule({"a": _func([x], [], x), "b": _func([y], [shape_of_n], s)})
    errors = well_formed_errors(mod)
    assert errors == ["b: symbolic variable 'n' in ShapeExpr is used before its definition"]


def test_well_formed_refuses_what_is_not_relax():
    with pytest.raises(MiniTVMError, match="expected an IRModule or a relax.Function"):
        well_formed(add_one_top)


# ----------------------------------------------------------------------------- WellFormedInstrument


def _dataflow_leak():
    x = relax.Var("x", _tensor(2))
    y = relax.DataflowVar("y", _tensor(2))
    block = relax.DataflowBlock([relax.VarBinding(y, relax.op.add(x, x))])
    return tvm.IRModule({"main": _func([x], [block], y)})


def test_well_formed_instrument_checks_around_each_pass():
    with tvm.transform.PassContext(instruments=[WellFormedInstrument()]):
        out = relax.transform.FoldConstant()(CrossRef)
        assert isinstance(out, tvm.IRModule)
        with pytest.raises(IllFormedModuleError, match="before pass 'FoldConstant'"):
            relax.transform.FoldConstant()(_dataflow_leak())
        with pytest.raises(AssertionError):  # TVM's instrument asserts
            relax.transform.FoldConstant()(_dataflow_leak())


def test_well_formed_instrument_can_skip_the_input_check():
    inst = WellFormedInstrument(validate_before_transform=False)
    info = tvm.transform.PassInfo(0, "Anything")
    inst.run_before_pass(_dataflow_leak(), info)  # not checked
    with pytest.raises(IllFormedModuleError, match="after pass 'Anything'"):
        inst.run_after_pass(_dataflow_leak(), info)
    inst.run_after_pass(_dataflow_leak(), tvm.transform.PassInfo(0, "Normalize"))  # skipped


def test_pass_context_copies_with_tuning_api_defaults_and_refuses_traces():
    cur = tvm.transform.PassContext.current()
    ctx = tvm.transform.PassContext(
        opt_level=cur.opt_level,
        instruments=list(cur.instruments),
        trace_stack=cur.trace_stack,
        make_traceable=cur.make_traceable,
        num_evals=cur.num_evals,
        tuning_api_database=cur.get_tuning_api_database(),
    )
    assert ctx.trace_stack == [] and ctx.num_evals == 0
    with pytest.raises(MiniTVMError, match="no relax tuning API"):
        tvm.transform.PassContext(make_traceable=["FoldConstant"])


# ----------------------------------------------------------------------------- struct_info_lca


def test_struct_info_lca_follows_tvms_rules():
    n = tir.Var("n", "int64")
    obj = relax.ObjectStructInfo()
    cases = [
        (_tensor(2, 3), _tensor(4, 3), relax.TensorStructInfo(None, "float32", 2)),
        (_tensor(2, 3), relax.TensorStructInfo((2, 3), "int32"), relax.TensorStructInfo((2, 3), None)),
        (_tensor(2, 3), _tensor(2), relax.TensorStructInfo(None, "float32", -1)),
        (_tensor(n, 3), _tensor(n, 3), _tensor(n, 3)),
        (relax.ShapeStructInfo([1, 2]), relax.ShapeStructInfo([1, 3]), relax.ShapeStructInfo(ndim=2)),
        (relax.PrimStructInfo("int32"), relax.PrimStructInfo("float32"), obj),
        (R.Prim(value=tir.const(0, "float32")), R.Prim(value=tir.const(1, "float32")), R.Prim("float32")),
        (_tensor(2), relax.TupleStructInfo([]), obj),
        (
            relax.TupleStructInfo([_tensor(2), _tensor(3)]),
            relax.TupleStructInfo([_tensor(2), _tensor(4)]),
            relax.TupleStructInfo([_tensor(2), relax.TensorStructInfo(None, "float32", 1)]),
        ),
        (
            relax.FuncStructInfo([_tensor(2)], _tensor(2)),
            relax.FuncStructInfo([_tensor(3)], _tensor(2)),
            relax.FuncStructInfo(None, _tensor(2)),
        ),
    ]  # fmt: skip
    for lhs, rhs, expected in cases:
        for a, b in ((lhs, rhs), (rhs, lhs)):
            tvm.ir.assert_structural_equal(struct_info_lca(a, b), expected)
    with pytest.raises(MiniTVMError, match="rhs must be a StructInfo"):
        struct_info_lca(obj, 3)


def test_r_prim_takes_its_dtype_from_the_value():
    assert str(R.Prim(value=tir.const(0, "float16")).dtype) == "float16"
    assert str(R.Prim("int64").dtype) == "int64"


# ----------------------------------------------------------------------------- parsing options


_ILL_FORMED = """
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = R.call_dps_packed("f", (x,), R.Tensor(("m",), "float32"))
        return y
"""


def test_from_source_checks_well_formedness_unless_told_not_to():
    with pytest.raises(ParseError, match="symbolic variable 'm'.*before its definition"):
        tvm.script.from_source(_ILL_FORMED)
    assert isinstance(tvm.script.from_source(_ILL_FORMED, check_well_formed=False), tvm.IRModule)


def test_parse_errors_are_diagnostic_errors():
    with pytest.raises(DiagnosticError):
        tvm.script.from_source("@T.prim_func\ndef f(a):\n    T.evaluate(0)\n")
    assert issubclass(tvm.error.ParseError, tvm.error.DiagnosticError)


def test_t_target_gives_a_target_attribute():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        for i in range(4):
            A[i] = T.float32(1)

    assert f.attrs["target"].kind.name == "llvm"
    with pytest.raises(ParseError, match="not a dict"):
        T.target({"kind": "llvm"})


def test_script_parser_namespaces_and_check_well_formed_under_the_tvm_alias(tmp_path):
    code = (
        "import sys, minitvm; sys.modules['tvm'] = minitvm\n"
        "from tvm.script.parser import ir as I, tir as T, relax as R, ir_module\n"
        "from tvm.relax.ir.instrument import WellFormedInstrument\n"
        "import tvm\n"
        "assert T is minitvm.script.tir and R is minitvm.script.relax and I is minitvm.script.ir\n"
        "@I.ir_module(check_well_formed=False)\n"
        "class M:\n"
        "    @T.prim_func(check_well_formed=False)\n"
        "    def f(A: T.Buffer((2,), 'float32')):\n"
        "        A[0] = T.float32(1)\n"
        "assert isinstance(M, tvm.IRModule)\n"
        "print('ok')\n"
    )
    path = tmp_path / "alias_probe.py"  # decorators read their source: the probe is a file
    path.write_text(code)
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
