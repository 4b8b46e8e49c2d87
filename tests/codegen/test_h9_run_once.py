"""`coproc_uop_scope` = "TVMBackendRunOnce" on the CPU: the body runs on the first call only."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import BuildError


def _build_once(scope_name: str, kind: str = "serial"):
    n = te.size_var("n")
    buf = tvm.tir.decl_buffer((n,), "int64", name="A")
    ib = tvm.tir.ir_builder.create()
    a = ib.buffer_ptr(buf)
    # TVM attaches the scope to a "cop" thread axis; a constant node keeps the script printable
    ib.scope_attr(tvm.tir.const(0, "int32"), "coproc_uop_scope", tvm.tir.StringImm(scope_name))
    with ib.for_range(0, n, "i", kind=kind) as i:
        a[i] = a[i] + 1
    func = tvm.tir.PrimFunc([buf], ib.get()).with_attr("global_symbol", "bump")
    return tvm.build(tvm.IRModule.from_expr(func), target="llvm")


@pytest.mark.parametrize("kind", ["serial", "parallel"])
def test_run_once_scope_runs_body_on_first_call_only(kind):
    f = _build_once("TVMBackendRunOnce", kind)
    a = tvm.nd.array(np.zeros(10, dtype="int64"))
    for _ in range(3):
        f(a)
    np.testing.assert_array_equal(a.numpy(), np.ones(10, dtype="int64"))
    b = tvm.nd.array(np.zeros(10, dtype="int64"))
    f(b)  # the flag belongs to the loaded module, not to the argument
    np.testing.assert_array_equal(b.numpy(), np.zeros(10, dtype="int64"))


def test_run_once_flag_is_per_built_module():
    first, second = _build_once("TVMBackendRunOnce"), _build_once("TVMBackendRunOnce")
    a = tvm.nd.array(np.zeros(4, dtype="int64"))
    first(a)
    second(a)
    np.testing.assert_array_equal(a.numpy(), np.full(4, 2, dtype="int64"))


def test_unknown_coproc_scope_is_rejected():
    with pytest.raises(BuildError, match="coproc_uop_scope.*TVMBackendRunOnce"):
        _build_once("MyOwnInit")
