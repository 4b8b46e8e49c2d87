"""PassContext(config={"tir.add_lower_pass": [(phase, pass)]}): TVM's user lowering phases."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.error import ArgumentError, BuildError


def _add_one():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    return te.create_schedule(B.op), [A, B]


def _recorder(seen, phase):
    def record(func, mod, ctx):
        kinds = set()
        tir.stmt_functor.post_order_visit(func.body, lambda n: kinds.add(type(n).__name__))
        seen.append((phase, "Block" in kinds, "BufferStore" in kinds))
        return func

    return tvm.tir.transform.prim_func_pass(record, opt_level=0)


def test_phases_run_in_order_phase_0_on_blocks():
    s, args = _add_one()
    seen = []
    passes = [(p, _recorder(seen, p)) for p in (3, 0, 2, 1)]
    with tvm.transform.PassContext(config={"tir.add_lower_pass": passes}):
        f = tvm.build(s, args, target="llvm")
    assert [p for p, _, _ in seen] == [0, 1, 2, 3]
    assert seen[0][1] and not any(blocks for _, blocks, _ in seen[1:])
    a = tvm.nd.array(np.arange(16, dtype="float32"))
    b = tvm.nd.empty((16,), "float32")
    f(a, b)
    np.testing.assert_allclose(b.numpy(), a.numpy() + 1)


def test_a_user_pass_changes_the_built_code():
    """The pass's result is what gets compiled: doubling every stored value doubles B."""

    def double_stores(func, mod, ctx):
        def rewrite(node):
            if isinstance(node, tir.BufferStore):
                return tir.BufferStore(node.buffer, node.value * 2.0, node.indices)
            return None

        return func.replace(body=tir.stmt_functor.ir_transform(func.body, None, rewrite))

    s, args = _add_one()
    user = tvm.tir.transform.prim_func_pass(double_stores, opt_level=0)
    with tvm.transform.PassContext(config={"tir.add_lower_pass": [(1, user)]}):
        f = tvm.build(s, args, target="llvm")
    a = tvm.nd.array(np.arange(16, dtype="float32"))
    b = tvm.nd.empty((16,), "float32")
    f(a, b)
    np.testing.assert_allclose(b.numpy(), (a.numpy() + 1) * 2)


def test_a_gpu_check_in_phase_2_sees_the_launch():
    """TVM's verify_gpu_code pattern: the pass sees the kernel's thread extents."""
    s, (A, B) = _add_one()
    bx, tx = s[B].split(B.op.axis[0], factor=8)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    valid = []

    def check(limit):
        def run(func, mod, ctx):
            valid.append(tvm.tir.analysis.verify_gpu_code(func, {"max_threads_per_block": limit}))
            return func

        return tvm.tir.transform.prim_func_pass(run, opt_level=0)

    for limit in (8, 7):
        with tvm.transform.PassContext(config={"tir.add_lower_pass": [(2, check(limit))]}):
            tvm.lower(s, [A, B])
    assert valid == [True, False]


@pytest.mark.parametrize(
    "config, match",
    [
        ("not a list", "list of \\(phase, pass\\) pairs"),
        ([(4, lambda m: m)], "each entry is \\(phase 0-3, pass\\)"),
        ([("1", lambda m: m)], "each entry is \\(phase 0-3, pass\\)"),
        ([(1, "pass")], "each entry is \\(phase 0-3, pass\\)"),
    ],
)
def test_bad_config_is_an_argument_error(config, match):
    s, args = _add_one()
    with tvm.transform.PassContext(config={"tir.add_lower_pass": config}):
        with pytest.raises(ArgumentError, match=match):
            tvm.build(s, args, target="llvm")


def test_a_pass_that_loses_the_function_is_a_build_error():
    s, args = _add_one()
    with tvm.transform.PassContext(config={"tir.add_lower_pass": [(2, lambda mod: None)]}):
        with pytest.raises(BuildError, match="phase 2 pass .* returned NoneType"):
            tvm.build(s, args, target="llvm")
