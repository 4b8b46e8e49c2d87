"""The ops the importers emit, end to end: relax.build (the whole pipeline: legalize, fuse,
DefaultSchedule) + VirtualMachine against the numpy references, plus their error messages."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.error import DTypeError, ShapeError
from minitvm.relax import op
from minitvm.relax.eval_ref import evaluate

_spec = importlib.util.spec_from_file_location(
    "_op_table_cases", pathlib.Path(__file__).parent.parent / "test_op_table.py"
)
_cases = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _cases  # dataclasses look their module up there
_spec.loader.exec_module(_cases)

# the op-table cases of the importer ops (the table test checks them legalized op by op)
VM_CASES = [
    "rsqrt", "square", "sin", "cos", "floor", "ceil", "round", "sign", "sign_int",
    "floor_divide", "floor_divide_int", "floor_mod", "floor_mod_int", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
    "logical_not", "where", "where_scalar", "where_bcast", "erf_public", "nn.silu",
    "nn.gelu_tanh", "nn.leakyrelu", "nn.softplus", "nn.group_norm", "nn.group_norm_nhwc",
    "nn.attention", "nn.attention_causal_bias", "nn.attention_bottom_right",
]  # fmt: skip


def _run_vm(mod: tvm.IRModule, inputs: list) -> list:
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(a) for a in inputs])
    outs = list(out) if isinstance(out, list | tuple) else [out]
    return [o.numpy() for o in outs]


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize("name", VM_CASES)
def test_importer_op_builds_and_runs_in_the_vm(name: str, symbolic: bool) -> None:
    case = _cases.CASES[name]
    if symbolic and not case.symbolic:
        pytest.skip("static-only case")
    mod, _ = _cases._build(case, symbolic)
    inputs = _cases._inputs(case, seed=1)
    expected = _cases._as_list(evaluate(mod, *inputs))
    got = _run_vm(mod, inputs)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)
