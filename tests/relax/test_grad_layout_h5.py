"""Gradient rules that keep layouts (relax/op/grad_layout.py): a weight read as
`permute_dims(W)` gets its gradient as one product in W's layout, and a take with a constant
scalar index differentiates to one elementwise `where` (no take_backward scatter)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.expr import Call

torch = pytest.importorskip("torch")

F64 = "float64"


def _module(shapes: dict, body):
    """main(*vars) -> sum(body(*vars) * c), c a fixed random weight (a non-trivial seed grad)."""
    args = [relax.Var(n, relax.TensorStructInfo(s, F64)) for n, s in shapes.items()]
    bb = relax.BlockBuilder()
    with bb.function("main", args):
        with bb.dataflow():
            y = bb.emit(body(*args))
            shape = [int(d) for d in y.struct_info.shape]
            c = relax.const(np.random.default_rng(7).standard_normal(shape), F64)
            out = bb.emit_output(R.sum(R.multiply(y, c)))
        bb.emit_func_output(out)
    return bb.get(), c.data.numpy()


def _grads(mod, inputs):
    """Gradients of every input by the reference interpreter and by the built VM."""
    adj = relax.transform.Gradient("main")(mod)
    _, ref = relax.eval_ref.evaluate(adj, *inputs, func_name="main_adjoint")
    vm = relax.VirtualMachine(relax.build(adj, "llvm"), tvm.cpu(0))
    _, got = vm["main_adjoint"](*[tvm.nd.array(a) for a in inputs])
    return adj, [np.asarray(g) for g in ref], [g.numpy() for g in got]


def _torch_grads(fn, inputs, c):
    ts = [torch.tensor(a, requires_grad=True) for a in inputs]
    (fn(*ts) * torch.tensor(c)).sum().backward()
    return [t.grad.numpy() for t in ts]


def _check(mod, inputs, c, torch_fn):
    adj, ref, got = _grads(mod, inputs)
    want = _torch_grads(torch_fn, inputs, c)
    for r, g, w in zip(ref, got, want):
        np.testing.assert_allclose(r, w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    return adj["main_adjoint"]


def _values(func) -> dict:
    return {b.var: b.value for blk in func.body.blocks for b in blk.bindings}


def _grad_value(func, k: int):
    """The value bound to the k-th returned gradient (output tuple: (loss, (grads...)))."""
    values = _values(func)
    out = func.body.body
    while not hasattr(out, "fields"):  # follow variables to the output tuple literal
        out = values[out]
    grads = out.fields[1]
    grads = grads if hasattr(grads, "fields") else values[grads]
    return values[grads.fields[k]]


def _op_names(func) -> list:
    return [
        v.op.name for v in _values(func).values() if isinstance(v, Call) and hasattr(v.op, "name")
    ]


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("x_shape", [(6, 7), (2, 3, 7)])
def test_linear_weight_grad_is_one_product_in_the_weight_layout(x_shape):
    """x @ W^T (nn.Linear, W not taller than wide): W's gradient is g^T @ x itself, not a
    transpose of x^T @ g."""
    mod, c = _module({"x": x_shape, "w": (5, 7)}, lambda x, w: R.matmul(x, R.permute_dims(w)))
    inputs = [RNG.standard_normal(x_shape), RNG.standard_normal((5, 7))]
    func = _check(mod, inputs, c, lambda x, w: x @ w.T)
    d_w, d_x = _grad_value(func, 1), _grad_value(func, 0)
    assert d_w.op.name == "relax.matmul"  # was permute_dims(matmul(x^T, g))
    assert d_x.op.name == "relax.matmul"
    values = _values(func)
    # d x reads W itself, not permute_dims(permute_dims(W))
    assert d_x.args[1] is func.params[1]
    assert values[d_w.args[0]].op.name == "relax.permute_dims"  # g^T


@pytest.mark.parametrize("x_shape", [(6, 4), (2, 3, 4)])
def test_tall_weight_grad_is_one_product_in_the_weight_layout(x_shape):
    """W taller than wide: its gradient is g^T @ x in W's layout too (the CPU kernel runs both
    orientations as fast); the input's gradient still reads W directly."""
    mod, c = _module({"x": x_shape, "w": (5, 4)}, lambda x, w: R.matmul(x, R.permute_dims(w)))
    inputs = [RNG.standard_normal(x_shape), RNG.standard_normal((5, 4))]
    func = _check(mod, inputs, c, lambda x, w: x @ w.T)
    d_w = _grad_value(func, 1)
    assert d_w.op.name == "relax.matmul"  # was permute_dims(matmul(x^T, g))
    assert _values(func)[d_w.args[0]].op.name == "relax.permute_dims"  # g^T
    assert _grad_value(func, 0).args[1] is func.params[1]


def test_attention_scores_grad_keeps_key_layout():
    """q @ k^T over batch and head axes: k's gradient is g^T @ q, q's reads k directly."""
    q_shape, k_shape = (2, 3, 5, 6), (2, 3, 4, 6)
    mod, c = _module(
        {"q": q_shape, "k": k_shape}, lambda q, k: R.matmul(q, R.permute_dims(k, [0, 1, 3, 2]))
    )
    inputs = [RNG.standard_normal(q_shape), RNG.standard_normal(k_shape)]
    func = _check(mod, inputs, c, lambda q, k: q @ k.transpose(-1, -2))
    assert _grad_value(func, 1).op.name == "relax.matmul"
    assert _grad_value(func, 0).args[1] is func.params[1]


def test_transposed_operand_used_twice_still_exact():
    """W^T feeds two products: its adjoint is a sum, the general permute rule runs."""

    def body(x, w):
        wt = R.permute_dims(w)
        return R.add(R.matmul(x, wt), R.matmul(R.multiply(x, x), wt))

    mod, c = _module({"x": (3, 4), "w": (5, 4)}, body)
    inputs = [RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4))]
    _check(mod, inputs, c, lambda x, w: x @ w.T + (x * x) @ w.T)


def test_broadcast_batch_falls_back_to_general_rule():
    """k^T broadcast over a batch axis of q: the general rule (with its collapse_sum) runs."""
    mod, c = _module(
        {"q": (2, 3, 4, 5), "k": (3, 6, 5)},
        lambda q, k: R.matmul(q, R.permute_dims(k, [0, 2, 1])),
    )
    inputs = [RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal((3, 6, 5))]
    _check(mod, inputs, c, lambda q, k: q @ k.transpose(-1, -2))


def test_permute_of_permuted_gradient_cancels():
    """permute_dims(x, p) whose gradient is permute_dims(h, p): x's gradient is h."""
    mod, c = _module(
        {"x": (2, 3, 4), "w": (5, 4)},
        lambda x, w: R.matmul(R.permute_dims(x, [1, 0, 2]), R.permute_dims(w)),
    )
    inputs = [RNG.standard_normal((2, 3, 4)), RNG.standard_normal((5, 4))]
    _check(mod, inputs, c, lambda x, w: x.permute(1, 0, 2) @ w.T)


@pytest.mark.parametrize(
    ("axis", "index", "mode"),
    [(0, 0, "clip"), (0, 2, "clip"), (1, -1, "wrap"), (1, 7, "clip"), (-1, 5, "wrap")],
)
def test_take_constant_scalar_index_grad_is_elementwise(axis, index, mode):
    """take(x, k) with a constant scalar k: gradient g on slice k, zero elsewhere, as a where
    (fusable with the sum of the slices' gradients) instead of a zero fill and a scatter."""
    shape = (3, 4, 5)

    def body(x):
        a = R.take(x, relax.const(index, "int64"), axis=axis, mode=mode)
        b = R.take(x, relax.const(1, "int64"), axis=axis, mode=mode)
        return R.add(R.multiply(a, a), b)

    n = shape[axis]
    k = index % n if mode == "wrap" else min(max(index, 0), n - 1)
    mod, c = _module({"x": shape}, body)
    inputs = [RNG.standard_normal(shape)]

    def ref(x):
        a, b = x.select(axis, k), x.select(axis, 1)
        return a * a + b

    func = _check(mod, inputs, c, ref)
    names = _op_names(func)
    assert "relax.take_backward" not in names and "relax.where" in names


def test_take_with_index_tensor_still_scatters():
    """An embedding lookup (index tensor) keeps take_backward, repeated indices summed."""
    idx = np.array([[1, 3, 1], [0, 3, 3]], dtype="int64")
    mod, c = _module({"e": (5, 4)}, lambda e: R.take(e, relax.const(idx), axis=0))
    inputs = [RNG.standard_normal((5, 4))]
    func = _check(mod, inputs, c, lambda e: e[torch.tensor(idx)])
    assert "relax.take_backward" in _op_names(func)
