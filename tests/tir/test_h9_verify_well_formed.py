"""verify_well_formed's TVM-compatible reports: IllFormedTIR is a ValueError too, messages
name nested vs repeated definitions and uses after a scope ended, and a Var defined in two
functions of one module is ill-formed."""

import pytest

from minitvm import IRModule, tir
from minitvm.error import InternalError
from minitvm.tir.analysis import verify_well_formed
from minitvm.tir.analysis.verify import IllFormedTIR


def _let(var, value, body):
    return tir.LetStmt(var, value, body)


def test_nested_and_repeated_definitions_are_told_apart():
    i = tir.Var("i", "int32")
    nested = tir.PrimFunc([], _let(i, 1, _let(i, 2, tir.Evaluate(i))))
    with pytest.raises(ValueError, match="multiple nested definitions of variable i"):
        verify_well_formed(nested)
    repeated = tir.PrimFunc(
        [], tir.SeqStmt([_let(i, 1, tir.Evaluate(i)), _let(i, 2, tir.Evaluate(i))])
    )
    with pytest.raises(
        IllFormedTIR,
        match=r"variable 'i' is defined twice \(TIR is ill-formed, due to multiple definitions",
    ):
        verify_well_formed(repeated)
    assert issubclass(IllFormedTIR, InternalError)
    assert verify_well_formed(tir.transform.convert_ssa(repeated))  # the suggested fix works


def test_use_after_scope_and_cross_function_reuse():
    i = tir.Var("i", "int32")
    after_scope = tir.PrimFunc([], tir.SeqStmt([_let(i, 1, tir.Evaluate(i)), tir.Evaluate(i)]))
    with pytest.raises(
        ValueError, match="Invalid use of undefined variable i at .* no longer in-scope."
    ):
        verify_well_formed(after_scope)
    func = tir.PrimFunc([], _let(i, 1, tir.Evaluate(i)))
    assert verify_well_formed(func)
    mod = IRModule({"a": func, "b": func})
    assert not verify_well_formed(mod, assert_mode=False)
    assert verify_well_formed(tir.transform.ConvertSSA()(mod))
