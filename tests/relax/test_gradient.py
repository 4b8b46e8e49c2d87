"""relax.transform.Gradient: finite-difference checks of every gradient rule in the op table."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import MiniTVMError, ShapeError
from minitvm.ir.module import IRModule
from minitvm.relax import op as R
from minitvm.relax.functor import substitute_vars
from minitvm.relax.op.grad import GRAD_RULES
from minitvm.relax.transform.gradient import Emitter
from minitvm.testing import check_grad
from minitvm.tir.expr import Var as TirVar

F64 = "float64"


def _rng(seed=0):
    return np.random.default_rng(seed)


def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape)


def away_from_zero(*shape):
    """Values with |x| >= 0.2, so kinks (relu, abs, max) stay out of the eps-ball."""
    return lambda rng: rng.uniform(0.2, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def distinct(*shape):
    """A random permutation of spread values: no ties inside pooling windows."""
    return lambda rng: (
        rng.permutation(np.arange(np.prod(shape), dtype=np.float64)).reshape(shape) * 0.1
    )


def ints(high, *shape):
    return lambda rng: rng.integers(0, high, shape).astype("int32")


# name -> (build(*vars) -> expr, input generators, options)
CASES: dict[str, list] = {
    "relax.add": [(R.add, [normal(3, 4), normal(4)]), (R.add, [normal(3, 1), normal(1, 4)])],
    "relax.subtract": [(R.subtract, [normal(2, 3, 4), normal(3, 1)])],
    "relax.multiply": [
        (R.multiply, [normal(3, 4), normal(3, 4)]),
        (R.multiply, [normal(2, 3), normal(2, 1)]),
    ],
    "relax.divide": [(R.divide, [normal(3, 4), positive(4)])],
    "relax.power": [
        (lambda x: R.power(x, relax.const(3.0, F64)), [positive(3, 4)]),
        (R.power, [positive(3, 4), normal(3, 4)]),
    ],
    "relax.broadcast_like": [
        (
            lambda x, y: R.grad.broadcast_like(x, y),
            [normal(3, 1), normal(2, 3, 4)],
            {"require": [0]},
        )
    ],
    "relax.maximum": [(R.maximum, [normal(3, 4), normal(4)])],
    "relax.minimum": [(R.minimum, [normal(3, 4), normal(3, 4)])],
    "relax.negative": [(R.negative, [normal(3, 4)])],
    "relax.abs": [(R.abs, [away_from_zero(3, 4)])],
    "relax.exp": [(R.exp, [normal(3, 4)])],
    "relax.log": [(R.log, [positive(3, 4)])],
    "relax.sqrt": [(R.sqrt, [positive(3, 4)])],
    "relax.tanh": [(R.tanh, [normal(3, 4)])],
    "relax.sigmoid": [(R.sigmoid, [normal(3, 4)])],
    "relax.erf": [(R.grad.erf, [normal(3, 4)])],
    "relax.nn.relu": [(R.nn.relu, [away_from_zero(3, 4)])],
    "relax.nn.relu_grad": [
        (R.grad.relu_grad, [away_from_zero(3, 4), normal(3, 4)], {"require": [1]})
    ],
    "relax.nn.gelu": [(R.nn.gelu, [normal(3, 4)])],
    "relax.nn.softmax": [
        (R.nn.softmax, [normal(3, 5)]),
        (lambda x: R.nn.softmax(x, axis=0), [normal(3, 5)]),
    ],
    "relax.nn.log_softmax": [(R.nn.log_softmax, [normal(3, 5)])],
    "relax.matmul": [
        (R.matmul, [normal(3, 4), normal(4, 5)]),
        (R.matmul, [normal(2, 3, 4), normal(4, 5)]),
        (R.matmul, [normal(2, 2, 3, 4), normal(4, 5)]),
        (R.matmul, [normal(3, 4), normal(2, 4, 5)]),
        (R.matmul, [normal(4), normal(4, 5)]),
        (R.matmul, [normal(3, 4), normal(4)]),
    ],
    "relax.nn.linear": [
        (R.nn.linear, [normal(3, 4), normal(5, 4), normal(5)]),
        (R.nn.linear, [normal(2, 3, 4), normal(5, 4)]),
    ],
    "relax.nn.dense": [(lambda x, w: R.nn.dense(x, w), [normal(3, 4), normal(5, 4)])],
    "relax.sum": [(lambda x: R.sum(x, axis=[1]), [normal(2, 3, 4)]), (R.sum, [normal(2, 3)])],
    "relax.mean": [(lambda x: R.mean(x, axis=[0, 2], keepdims=True), [normal(2, 3, 4)])],
    "relax.variance": [(lambda x: R.variance(x, axis=[1]), [normal(2, 3, 4)])],
    "relax.std": [(lambda x: R.std(x, axis=[0, 2], keepdims=True), [normal(2, 3, 4)])],
    "relax.tril": [(lambda x: R.tril(x, 0), [normal(3, 4)])],
    "relax.triu": [(lambda x: R.triu(x, 1), [normal(2, 3, 3)])],
    "relax.reshape": [(lambda x: R.reshape(x, (4, 6)), [normal(2, 3, 4)])],
    "relax.flatten": [(R.flatten, [normal(2, 3)])],
    "relax.expand_dims": [(lambda x: R.expand_dims(x, 1), [normal(2, 3)])],
    "relax.permute_dims": [(lambda x: R.permute_dims(x, [2, 0, 1]), [normal(2, 3, 4)])],
    "relax.astype": [
        (lambda x: R.astype(R.astype(x, "float32"), F64), [normal(3, 4)], {"tol": 1e-3})
    ],
    "relax.strided_slice": [
        (lambda x: R.strided_slice(x, [1, 0], [1, -3], [3, 5]), [normal(2, 5, 4)])
    ],
    "relax.concat": [(lambda a, b: R.concat([a, b], axis=1), [normal(2, 3), normal(2, 4)])],
    "relax.split": [(lambda x: R.split(x, 3, axis=1), [normal(2, 6)])],
    "relax.take": [
        (lambda w, i: R.take(w, i, axis=0), [normal(6, 4), ints(6, 5)], {"require": [0]})
    ],
    "relax.sort": [(lambda x: R.sort(x, 1, True), [distinct(3, 5)])],
    "relax.topk": [(lambda x: R.topk(x, 2, 0, "values", False), [distinct(4, 3)])],
    "relax.gather_nd": [
        (lambda d, i: R.gather_nd(d, i), [normal(4, 3), ints(3, 6, 2)], {"require": [0]})
    ],
    "relax.scatter_elements": [
        (
            lambda d, i, u: R.scatter_elements(d, i, u, 1, "add"),
            [normal(3, 5), ints(5, 3, 2), normal(3, 2)],
            {"require": [0, 2]},
        )
    ],
    "relax.scatter_nd": [
        (
            lambda d, i, u: R.scatter_nd(d, i, u, "add"),
            [normal(4, 3), ints(4, 5, 1), normal(5, 3)],
            {"require": [0, 2]},
        )
    ],
    "relax.nn.conv2d": [
        (lambda x, w: R.nn.conv2d(x, w), [normal(2, 3, 6, 6), normal(4, 3, 3, 3)]),
        (
            lambda x, w: R.nn.conv2d(x, w, strides=2, padding=1, dilation=(1, 2)),
            [normal(1, 2, 7, 8), normal(3, 2, 3, 2)],
        ),
        (lambda x, w: R.nn.conv2d(x, w, groups=2), [normal(1, 4, 5, 5), normal(6, 2, 3, 3)]),
    ],
    "relax.nn.max_pool2d": [
        (lambda x: R.nn.max_pool2d(x, 2, 2), [distinct(2, 2, 6, 6)]),
        (lambda x: R.nn.max_pool2d(x, 3, 2, padding=1), [distinct(1, 2, 7, 7)]),
    ],
    "relax.nn.avg_pool2d": [
        (lambda x: R.nn.avg_pool2d(x, 3, 2, padding=1), [normal(1, 2, 7, 7)]),
        (
            lambda x: R.nn.avg_pool2d(x, 3, 2, padding=1, count_include_pad=True),
            [normal(1, 2, 6, 6)],
        ),
        (
            lambda x: R.nn.avg_pool2d(x, 3, 1, padding=1, dilation=2, count_include_pad=True),
            [normal(1, 2, 7, 6)],
        ),
    ],
    "relax.max": [
        (lambda x: R.max(x, axis=[1]), [distinct(2, 5, 3)]),
        (lambda x: R.max(x, axis=[0, 2], keepdims=True), [distinct(3, 4, 2)]),
        (R.max, [distinct(3, 4)]),
    ],
    "relax.prod": [
        (lambda x: R.prod(x, axis=[1]), [away_from_zero(2, 4, 3)]),
        (lambda x: R.prod(x, axis=[0, 2], keepdims=True), [away_from_zero(3, 2, 2)]),
        (R.prod, [away_from_zero(2, 3)]),
    ],
    "relax.min": [
        (lambda x: R.min(x, axis=-1), [distinct(4, 5)]),
        (lambda x: R.min(x, axis=[0], keepdims=True), [distinct(3, 4)]),
    ],
    "relax.nn.layer_norm": [
        (lambda x, g, b: R.nn.layer_norm(x, g, b), [normal(3, 5), normal(5), normal(5)]),
        (
            lambda x, g, b: R.nn.layer_norm(x, g, b, axes=[0]),
            [normal(4, 3), normal(4), normal(4)],
        ),
        (
            lambda x, g, b: R.nn.layer_norm(x, g, b, center=False, scale=False),
            [normal(3, 5), normal(5), normal(5)],
            {"require": [0]},
        ),
        (
            lambda x, g, b: R.nn.layer_norm(x, g, b, axes=[-2, -1], epsilon=1e-3),
            [normal(2, 3, 4), normal(3, 4), normal(3, 4)],
        ),
    ],
    "relax.nn.batch_norm": [
        (
            lambda x, g, b, m, v: R.nn.batch_norm(x, g, b, m, v, axis=-1, epsilon=1e-3),
            [normal(5, 4), normal(4), normal(4), normal(4), positive(4)],
        ),
        (
            lambda x, g, b, m, v: R.nn.batch_norm(x, g, b, m, v, center=False, scale=False),
            [normal(2, 3, 5), normal(3), normal(3), normal(3), positive(3)],
            {"require": [0, 3, 4]},
        ),
        (
            lambda x, g, b, m, v: R.nn.batch_norm(x, g, b, m, v),
            [normal(2, 3, 4, 4), normal(3), normal(3), normal(3), positive(3)],
        ),
    ],
    "relax.nn.nll_loss": [
        (lambda x, t: R.nn.nll_loss(x, t), [normal(4, 5), ints(5, 4)], {"require": [0]}),
        (
            lambda x, t, w: R.nn.nll_loss(x, t, w, "sum", 2),
            [normal(4, 5), ints(5, 4), positive(5)],
            {"require": [0]},
        ),
        (
            lambda x, t: R.nn.nll_loss(x, t, reduction="none", ignore_index=1),
            [normal(3, 5, 2), ints(5, 3, 2)],
            {"require": [0]},
        ),
    ],
    "relax.nn.cross_entropy_with_logits": [
        (lambda x, y: R.nn.cross_entropy_with_logits(x, y), [normal(3, 4), normal(3, 4)]),
        (lambda x, y: R.nn.cross_entropy_with_logits(x, y), [normal(5), normal(5)]),
    ],
    # rules for ops the importers emit (also checked against torch in tests/test_grad_table.py)
    "relax.nn.silu": [(R.nn.silu, [normal(3, 4)])],
    "relax.nn.gelu_tanh": [(R.nn.gelu_tanh, [normal(3, 4)])],
    "relax.nn.leakyrelu": [(lambda x: R.nn.leakyrelu(x, 0.1), [away_from_zero(3, 4)])],
    "relax.nn.softplus": [(lambda x: R.nn.softplus(x, 2.0, 1.0), [away_from_zero(3, 4)])],
    "relax.clip": [(lambda x: R.clip(x, -0.5, 0.7), [away_from_zero(3, 4)])],
    "relax.where": [
        (
            lambda c, a, b: R.where(c, a, b),
            [lambda rng: rng.random((3, 4)) < 0.5, normal(3, 1), normal(4)],
            {"require": [1, 2]},
        )
    ],
    "relax.ewise_fma": [(R.ewise_fma, [normal(3, 4), normal(3, 4), normal(3, 4)])],
    "relax.cumsum": [
        (lambda x: R.cumsum(x, 1, exclusive=True), [normal(3, 4)]),
        (lambda x: R.cumsum(x), [normal(2, 3)]),
    ],
    "relax.nn.pad": [(lambda x: R.nn.pad(x, [1, 0, 0, 2]), [normal(3, 4)])],
    "relax.square": [(R.square, [normal(3, 4)])],
    "relax.rsqrt": [(R.rsqrt, [positive(3, 4)])],
    "relax.sin": [(R.sin, [normal(3, 4)])],
    "relax.cos": [(R.cos, [normal(3, 4)])],
    "relax.squeeze": [(lambda x: R.squeeze(x, [1]), [normal(3, 1, 4)])],
    "relax.broadcast_to": [(lambda x: R.broadcast_to(x, (2, 3, 4)), [normal(3, 1)])],
    "relax.flip": [(lambda x: R.flip(x, 0), [normal(3, 4)])],
    "relax.nn.dropout": [(lambda x: R.nn.dropout(x, 0.5), [normal(3, 4)])],
    "relax.floor": [(R.floor, [lambda rng: rng.uniform(0.1, 0.9, (3, 4)) + 2.0])],
    "relax.ceil": [(R.ceil, [lambda rng: rng.uniform(0.1, 0.9, (3, 4)) - 2.0])],
    "relax.round": [(R.round, [lambda rng: rng.uniform(0.1, 0.4, (3, 4)) + 1.0])],
    "relax.sign": [(R.sign, [away_from_zero(3, 4)])],
    "relax.nn.adaptive_avg_pool2d": [
        (lambda x: R.nn.adaptive_avg_pool2d(x), [normal(1, 2, 3, 3)]),
        (lambda x: R.nn.adaptive_avg_pool2d(x, (2, 3)), [normal(1, 2, 4, 6)]),
        (lambda x: R.nn.adaptive_avg_pool2d(x, 1), [normal(2, 3, 4, 5)]),
    ],
    "relax.collapse_sum_to": [(lambda x: R.collapse_sum_to(x, (3, 1)), [normal(2, 3, 4)])],
    "relax.collapse_sum_like": [
        (lambda x, y: R.collapse_sum_like(x, y), [normal(2, 3, 4), normal(1, 4)], {"require": [0]})
    ],
    # grad_extra.py's importer ops (also against torch.autograd: tests/test_a6_grad_extra.py)
    "relax.tan": [(R.tan, [lambda rng: rng.uniform(-1.2, 1.2, (3, 4))])],
    "relax.sinh": [(R.sinh, [normal(3, 4)])],
    "relax.cosh": [(R.cosh, [normal(3, 4)])],
    "relax.asin": [(R.asin, [lambda rng: rng.uniform(-0.9, 0.9, (3, 4))])],
    "relax.acos": [(R.acos, [lambda rng: rng.uniform(-0.9, 0.9, (3, 4))])],
    "relax.atan": [(R.atan, [normal(3, 4)])],
    "relax.asinh": [(R.asinh, [normal(3, 4)])],
    "relax.acosh": [(R.acosh, [lambda rng: rng.uniform(1.2, 3.0, (3, 4))])],
    "relax.atanh": [(R.atanh, [lambda rng: rng.uniform(-0.9, 0.9, (3, 4))])],
    "relax.trunc": [(R.trunc, [lambda rng: rng.uniform(0.1, 0.9, (3, 4)) + 1.0])],
    "relax.mod": [(R.mod, [normal(3, 4), lambda rng: rng.uniform(2.05, 2.45, (4,))])],
    "relax.floor_mod": [(R.floor_mod, [normal(3, 1), lambda rng: rng.uniform(2.05, 2.45, (4,))])],
    "relax.tile": [(lambda x: R.tile(x, (2, 1, 3)), [normal(3, 2)])],
    "relax.repeat": [
        (lambda x: R.repeat(x, 3, axis=1), [normal(2, 3, 4)]),
        (lambda x: R.repeat(x, 2), [normal(2, 3)]),
    ],
    "relax.nn.conv1d": [
        (lambda x, w: R.nn.conv1d(x, w, strides=2, padding=1), [normal(2, 3, 9), normal(4, 3, 3)])
    ],
    "relax.nn.group_norm": [
        (
            lambda x, g, b: R.nn.group_norm(x, g, b, 2, 1, [2, 3]),
            [normal(2, 4, 3, 3), positive(4), normal(4)],
        )
    ],
    # grad_more.py's importer ops (torch checks: tests/test_a7_grad.py)
    "relax.nn.conv2d_transpose": [
        (
            lambda x, w: R.nn.conv2d_transpose(x, w, strides=2, padding=1, groups=2),
            [normal(1, 4, 3, 3), normal(4, 1, 3, 2)],
        )
    ],
    "relax.nn.conv1d_transpose": [
        (lambda x, w: R.nn.conv1d_transpose(x, w, 2, 1), [normal(2, 3, 4), normal(3, 2, 3)])
    ],
    "relax.nn.conv3d": [
        (lambda x, w: R.nn.conv3d(x, w, padding=1), [normal(1, 2, 3, 3, 4), normal(2, 2, 2, 2, 3)])
    ],
    "relax.nn.conv3d_transpose": [
        (
            lambda x, w: R.nn.conv3d_transpose(x, w, (2, 1, 2), 1, (1, 0, 1), (1, 2, 1), 2),
            [normal(1, 4, 2, 3, 2), normal(4, 1, 2, 2, 3)],
        )
    ],
    "relax.dynamic_strided_slice": [  # 1:4:2, 5:0:-2, 0:5:3; a match_cast names the dims
        (
            lambda x: relax.BlockBuilder.current().match_cast(
                R.dynamic_strided_slice(
                    x, *(relax.const(np.array(v, "int64")) for v in ([1, 5, 0], [4, 0, 5], [2, -2, 3]))
                ),
                relax.TensorStructInfo((2, 3, 2), "float64"),
            ),
            [normal(5, 6, 5)],
        )
    ],
    "relax.einsum": [(lambda a, b: R.einsum([a, b], "ij,jk->ik"), [normal(3, 4), normal(4, 2)])],
    "relax.gather_elements": [
        (
            lambda d, i: R.gather_elements(d, i, 0),
            [normal(3, 4), ints(3, 5, 4)],
            {"require": [0]},
        )
    ],
    "relax.cumprod": [
        (lambda x: R.cumprod(x, 1), [away_from_zero(3, 4)]),
        (lambda x: R.cumprod(x, 0, exclusive=True), [away_from_zero(4, 3)]),
    ],
    "relax.nn.max_pool1d": [(lambda x: R.nn.max_pool1d(x, 3, 2, (1, 1)), [distinct(2, 3, 9)])],
    "relax.nn.avg_pool1d": [(lambda x: R.nn.avg_pool1d(x, 3, 2, (1, 1)), [normal(2, 3, 8)])],
    "relax.nn.adaptive_avg_pool1d": [(lambda x: R.nn.adaptive_avg_pool1d(x, 3), [normal(2, 3, 7)])],
    "relax.image.resize2d": [
        (lambda x: R.image.resize2d(x, (5, 3), method="linear"), [normal(1, 2, 3, 4)]),
    ],
    "relax.nn.attention": [
        (
            lambda q, k, v, b: R.nn.attention(q, k, v, b),
            [normal(1, 3, 2, 4), normal(1, 5, 2, 4), normal(1, 5, 2, 3), normal(3, 5)],
        )
    ],
    "relax.nn.prelu": [(R.nn.prelu, [away_from_zero(2, 3, 4), positive(3)])],
    "relax.nn.rms_norm": [
        (lambda x, w: R.nn.rms_norm(x, w, [1, 2]), [normal(2, 3, 4), positive(3, 4)])
    ],
}


def _scalar_loss_module(build, gens, seed=0):
    """main(*inputs) = sum(build(*inputs) * C) with a fixed random C (one per tuple field)."""
    rng = _rng(seed)
    inputs = [g(rng) for g in gens]
    params = [
        relax.Var(f"x{k}", relax.TensorStructInfo(a.shape, str(a.dtype)))
        for k, a in enumerate(inputs)
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit(build(*params))
            sinfo = out.struct_info
            fields = (
                [bb.emit(relax.TupleGetItem(out, i)) for i in range(len(sinfo.fields))]
                if isinstance(sinfo, relax.TupleStructInfo)
                else [out]
            )
            terms = []
            for f in fields:
                c = relax.const(rng.standard_normal([int(d) for d in f.struct_info.shape]), F64)
                terms.append(bb.emit(R.sum(R.multiply(f, c))))
            loss = terms[0]
            for t in terms[1:]:
                loss = bb.emit(R.add(loss, t))
            loss = bb.emit_output(loss)
        bb.emit_func_output(loss)
    return bb.get(), inputs


def _flat_cases():
    for name, cases in CASES.items():
        for k, case in enumerate(cases):
            yield pytest.param(name, case, id=f"{name}-{k}")


def test_every_grad_rule_has_a_case():
    assert set(GRAD_RULES) <= set(CASES), sorted(set(GRAD_RULES) - set(CASES))
    for name in GRAD_RULES:
        assert relax.Op.get(name).op_def.grad is GRAD_RULES[name]


@pytest.mark.parametrize("name,case", list(_flat_cases()))
def test_grad_rule_finite_differences(name, case):
    build, gens = case[0], case[1]
    opts = case[2] if len(case) > 2 else {}
    mod, inputs = _scalar_loss_module(build, gens)
    tol = opts.get("tol", 1e-4)
    eps = 1e-6 if tol < 1e-3 else 1e-3
    check_grad(mod, inputs, require_grads=opts.get("require"), eps=eps, rtol=tol, atol=tol * 1e-2)


VM_CASES = [
    "relax.cumsum",
    "relax.nn.pad",
    "relax.where",
    "relax.nn.softplus",
    "relax.add",
    "relax.matmul",
    "relax.nn.softmax",
    "relax.nn.conv2d",
    "relax.nn.max_pool2d",
    "relax.nn.avg_pool2d",
    "relax.take",
    "relax.nn.relu",
    "relax.split",
    "relax.strided_slice",
    "relax.max",
    "relax.min",
    "relax.prod",
    "relax.nn.layer_norm",
    "relax.nn.batch_norm",
    "relax.nn.adaptive_avg_pool2d",
    "relax.nn.nll_loss",
]


@pytest.mark.parametrize("name", VM_CASES)
def test_grad_rule_compiled_on_vm(name):
    """The backward graph goes through relax.build (legalize, fuse, plan memory) and the VM."""
    case = CASES[name][-1]
    opts = case[2] if len(case) > 2 else {}
    mod, inputs = _scalar_loss_module(case[0], case[1], seed=1)
    check_grad(mod, inputs, require_grads=opts.get("require"), use_vm=True, num_directions=1)


def test_cross_entropy_composition():
    def xent(logits, labels):
        return R.negative(R.mean(R.sum(R.multiply(labels, R.nn.log_softmax(logits)), axis=[1])))

    rng = _rng(3)
    logits = rng.standard_normal((4, 5))
    labels = np.eye(5)[rng.integers(0, 5, 4)]
    x = relax.Var("logits", relax.TensorStructInfo((4, 5), F64))
    y = relax.Var("labels", relax.TensorStructInfo((4, 5), F64))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            out = bb.emit_output(xent(x, y))
        bb.emit_func_output(out)
    grads = check_grad(bb.get(), [logits, labels], require_grads=[0])
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(grads[0], (p - labels) / 4, rtol=1e-10)


def _mlp_module(n=None):
    batch = TirVar("n", "int64") if n is None else n
    x = relax.Var("x", relax.TensorStructInfo((batch, 4), F64))
    w = relax.Var("w", relax.TensorStructInfo((4, 3), F64))
    b = relax.Var("b", relax.TensorStructInfo((3,), F64))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            h = bb.emit(R.tanh(R.add(R.matmul(x, w), b)))
            loss = bb.emit_output(R.sum(R.multiply(h, h)))
        bb.emit_func_output(loss)
    return bb.get()


def test_symbolic_batch_dim():
    mod = _mlp_module()
    adj = relax.transform.Gradient("main", require_grads=["w", "b"])(mod)
    sinfo = adj["main_adjoint"].ret_struct_info
    assert len(sinfo.fields[1].fields) == 2
    ex = relax.build(adj, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu(0))
    rng = _rng(4)
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(3)
    for n in (2, 5):
        x = rng.standard_normal((n, 4))
        loss, (gw, gb) = vm["main_adjoint"](tvm.nd.array(x), tvm.nd.array(w), tvm.nd.array(b))
        h = np.tanh(x @ w + b)
        dz = 2 * h * (1 - h * h)
        np.testing.assert_allclose(loss.numpy(), (h * h).sum(), rtol=1e-10)
        np.testing.assert_allclose(gw.numpy(), x.T @ dz, rtol=1e-10)
        np.testing.assert_allclose(gb.numpy(), dz.sum(0), rtol=1e-10)
    check_grad(mod, [rng.standard_normal((3, 4)), w, b])


def _norm_pool_module():
    """A small net with a symbolic batch dim through every newly differentiable op."""
    n = TirVar("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 2, 4, 4), F64))
    params = [x] + [
        relax.Var(name, relax.TensorStructInfo(shape, F64))
        for name, shape in (
            ("bn_g", (2,)),
            ("bn_b", (2,)),
            ("bn_m", (2,)),
            ("bn_v", (2,)),
            ("ln_g", (4,)),
            ("ln_b", (4,)),
        )
    ]
    _, bn_g, bn_b, bn_m, bn_v, ln_g, ln_b = params
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            bn = bb.emit(R.nn.batch_norm(x, bn_g, bn_b, bn_m, bn_v))
            h = bb.emit(relax.TupleGetItem(bn, 0))
            ln = bb.emit(R.nn.layer_norm(h, ln_g, ln_b, axes=-1))
            # (n, 2, 1, 1); tanh before the pool: its kernel is named `tanh` (regression test
            # for entry symbols that once shadowed libm's tanh and crashed)
            pooled = bb.emit(R.nn.adaptive_avg_pool2d(R.tanh(ln), 1))
            top = bb.emit(R.max(ln, axis=[2]))  # (n, 2, 4)
            low = bb.emit(R.min(top, axis=[1], keepdims=True))  # (n, 1, 4)
            loss = bb.emit(R.add(R.sum(R.multiply(pooled, pooled)), R.sum(R.multiply(low, top))))
            loss = bb.emit_output(loss)
        bb.emit_func_output(loss)
    return bb.get()


def test_norm_pool_reduce_rules_with_symbolic_batch_dim():
    mod = _norm_pool_module()
    rng = _rng(5)
    weights = [
        rng.standard_normal(2),
        rng.standard_normal(2),
        rng.standard_normal(2),
        rng.uniform(0.5, 2.0, 2),
        rng.standard_normal(4),
        rng.standard_normal(4),
    ]
    for n in (2, 3):
        x = rng.permutation(np.arange(n * 32, dtype=np.float64)).reshape(n, 2, 4, 4) * 0.1
        check_grad(mod, [x] + weights, use_vm=True, num_directions=1, seed=n)


def test_max_min_ties_give_the_grad_to_every_tied_element():
    x = relax.Var("x", relax.TensorStructInfo((2, 4), F64))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            hi = bb.emit(R.multiply(R.max(x, axis=1), relax.const(np.array([1.0, 2.0]), F64)))
            lo = bb.emit(R.min(x, axis=0))
            out = bb.emit_output(R.add(R.sum(hi), R.sum(lo)))
        bb.emit_func_output(out)
    adj = relax.transform.Gradient("main")(bb.get())
    xv = np.array([[3.0, 1.0, 3.0, 0.0], [5.0, 5.0, 5.0, 7.0]])
    # row maxima (weights 1, 2): both 3.0s of row 0 and the 7.0; column minima: all of row 0
    expected = np.array([[2.0, 1.0, 2.0, 1.0], [0.0, 0.0, 0.0, 2.0]])
    _, (gx,) = relax.eval_ref.evaluate(adj, xv, func_name="main_adjoint")
    np.testing.assert_array_equal(gx, expected)
    vm = relax.VirtualMachine(relax.build(adj, "llvm"), tvm.cpu(0))
    _, (gx_vm,) = vm["main_adjoint"](tvm.nd.array(xv))
    np.testing.assert_array_equal(gx_vm.numpy(), expected)


def test_unused_param_gets_zero_grad_and_tuple_output():
    x = relax.Var("x", relax.TensorStructInfo((3,), F64))
    y = relax.Var("y", relax.TensorStructInfo((2,), F64))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            e = bb.emit(R.exp(x))
            s = bb.emit(R.sum(e))
            out = bb.emit_output(relax.Tuple((e, s)))
        bb.emit_func_output(out)
    adj = relax.transform.Gradient("main", target_index=1)(bb.get())
    xv = np.array([0.1, 0.2, 0.3])
    (ev, _sv), (gx, gy) = relax.eval_ref.evaluate(adj, xv, np.ones(2), func_name="main_adjoint")
    np.testing.assert_allclose(ev, np.exp(xv))
    np.testing.assert_allclose(gx, np.exp(xv))
    np.testing.assert_array_equal(gy, np.zeros(2))


def _second_order_module(adj_mod, name):
    """g(x) = sum(grad_0(x)) built from the bindings of `name` (the adjoint of f)."""
    func = adj_mod[name]
    bb = relax.BlockBuilder()
    with bb.function("g", list(func.params)):
        with bb.dataflow():
            em = Emitter(bb)
            vmap = {}
            for block in func.body.blocks:
                for b in block.bindings:
                    vmap[b.var] = em.emit(substitute_vars(b.value, vmap))
            out = substitute_vars(func.body.body, vmap)
            grad = em.emit(relax.TupleGetItem(em.emit(relax.TupleGetItem(out, 1)), 0))
            total = bb.emit_output(em.emit(R.sum(grad)))
        bb.emit_func_output(total)
    return bb.get()


def test_gradient_of_gradient():
    """d/dx sum(3 x^2) = 6 x: Gradient applied to a function built from an adjoint."""
    x = relax.Var("x", relax.TensorStructInfo((4,), F64))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(R.sum(R.multiply(R.multiply(x, x), x)))
        bb.emit_func_output(out)
    adj = relax.transform.Gradient("main")(bb.get())
    second = relax.transform.Gradient("g")(_second_order_module(adj, "main_adjoint"))
    xv = np.array([0.5, -1.0, 2.0, 3.0])
    val, (g2,) = relax.eval_ref.evaluate(second, xv, func_name="g_adjoint")
    np.testing.assert_allclose(val, (3 * xv * xv).sum())
    np.testing.assert_allclose(g2, 6 * xv)
    check_grad(_second_order_module(adj, "main_adjoint"), [xv], func_name="g")


def test_errors():
    x = relax.Var("x", relax.TensorStructInfo((3,), F64))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(R.exp(x))
        bb.emit_func_output(out)
    mod = bb.get()
    with pytest.raises(ShapeError, match="must return a scalar loss"):
        relax.transform.Gradient("main")(mod)
    with pytest.raises(MiniTVMError, match="no function 'nope'"):
        relax.transform.Gradient("nope")(mod)
    with pytest.raises(MiniTVMError, match="'z' is not a parameter"):
        relax.transform.Gradient("main", require_grads=["z"])(mod)

    x4 = relax.Var("x", relax.TensorStructInfo((1, 1, 4, 4), F64))
    g4 = relax.Var("g", relax.TensorStructInfo((1, 1, 2, 2), F64))
    pool_attrs = dict(R.nn.max_pool2d(x4, 2, 2).attrs)
    bb = relax.BlockBuilder()
    with bb.function("main", [g4, x4]):
        with bb.dataflow():
            out = bb.emit_output(R.sum(R.grad.max_pool2d_grad(g4, x4, **pool_attrs)))
        bb.emit_func_output(out)
    with pytest.raises(MiniTVMError, match="relax.nn.max_pool2d_grad .* has no gradient rule"):
        relax.transform.Gradient("main")(bb.get())

    xi = relax.Var("x", relax.TensorStructInfo((1, 65, 5, 5), F64))
    wi = relax.Var("w", relax.TensorStructInfo((65, 1, 3, 3), F64))
    bb = relax.BlockBuilder()
    with bb.function("main", [xi, wi]):
        with bb.dataflow():
            out = bb.emit_output(R.sum(R.nn.conv2d(xi, wi, groups=65)))
        bb.emit_func_output(out)
    with pytest.raises(MiniTVMError, match="groups=65 .* has no gradient rule"):
        relax.transform.Gradient("main")(bb.get())

    xh = relax.Var("x", relax.TensorStructInfo((1, 65, TirVar("h", "int64"), 5), F64))
    bb = relax.BlockBuilder()
    with bb.function("main", [xh]):
        with bb.dataflow():
            out = bb.emit_output(R.sum(R.nn.adaptive_avg_pool2d(xh, (2, 3))))
        bb.emit_func_output(out)
    with pytest.raises(
        MiniTVMError, match=r"adaptive_avg_pool2d of a tensor .* \[2, 3\] must be static"
    ):
        relax.transform.Gradient("main")(bb.get())

    n = TirVar("n", "int64")
    xs = relax.Var("x", relax.TensorStructInfo((2, n), F64))
    gs = relax.Var("g", relax.TensorStructInfo((n,), F64))
    bb = relax.BlockBuilder()
    with bb.function("main", [xs, gs]):
        with bb.dataflow():
            out = bb.emit_output(R.sum(R.nn.layer_norm(xs, gs, gs)))
        bb.emit_func_output(out)
    with pytest.raises(MiniTVMError, match=r"layer_norm over the symbolic dims \['n'\]"):
        relax.transform.Gradient("main")(bb.get())
    assert isinstance(IRModule, type)


def test_check_grad_catches_a_wrong_rule(monkeypatch):
    import dataclasses

    exp = relax.Op.get("relax.exp")
    wrong = dataclasses.replace(exp.op_def, grad=lambda y, call, g, bb: [R.multiply(g, 2.0)])
    monkeypatch.setattr(exp, "op_def", wrong)
    mod, inputs = _scalar_loss_module(R.exp, [normal(3, 4)])
    with pytest.raises(AssertionError, match="disagrees with finite differences"):
        check_grad(mod, inputs)
