"""The gradient table: every op of the op table has a gradient rule (checked here against
torch.autograd, fp32, odd shapes with broadcasting) or is declared without one, with a reason
(NOT_DIFFERENTIABLE / NO_GRAD_RULE in relax/op/grad.py). docs/training.md prints the table."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.eval_ref import evaluate
from minitvm.relax.op import OP_TABLE
from minitvm.relax.op.grad import GRAD_RULES, NO_GRAD_RULE, NOT_DIFFERENTIABLE, gradient_table
from minitvm.relax.transform.gradient import gradient

torch = pytest.importorskip("torch")
F = torch.nn.functional
DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "training.md"


# input generators (fp32; the same kinds as tests/relax/test_gradient.py)
def normal(*shape):
    return lambda rng: rng.standard_normal(shape).astype("float32")


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape).astype("float32")


def away(*shape):
    """|x| in [0.2, 1.5]: kinks (relu, abs, clip bounds) stay away from the inputs."""
    return lambda rng: (rng.uniform(0.2, 1.5, shape) * rng.choice([-1.0, 1.0], shape)).astype(
        "float32"
    )


def distinct(*shape):
    """No ties (max/min reductions, max pooling)."""
    n = int(np.prod(shape))
    return lambda rng: (rng.permutation(n).reshape(shape) * 0.1 - n * 0.05).astype("float32")


def ints(high, *shape):
    return lambda rng: rng.integers(0, high, shape).astype("int64")


def bools(*shape):
    return lambda rng: rng.random(shape) < 0.5


T = torch
_C = math.sqrt(2.0 / math.pi)


def _bn_torch(x, g, b, m, v, axis=1, eps=1e-5):
    shape = [1] * x.ndim
    shape[axis] = -1
    r = lambda t: t.reshape(shape)
    return ((x - r(m)) / T.sqrt(r(v) + eps) * r(g) + r(b), m, v)


def _bn_torch_training(x, g, b, m, v, momentum=0.3, eps=1e-5):
    """torch's training batch norm, and TVM's moving-stat update (biased batch variance)."""
    out = F.batch_norm(x, None, None, g, b, training=True, eps=eps)
    axes = [0, 2]
    mean, var = x.mean(axes), x.var(axes, unbiased=False)
    return (out, (1 - momentum) * m + momentum * mean, (1 - momentum) * v + momentum * var)


# op -> (relax builder, torch function, input generators, positions to differentiate)
CASES: dict[str, tuple] = {
    "relax.add": (R.add, T.add, [normal(3, 1, 5), normal(4, 1)]),
    "relax.subtract": (R.subtract, T.sub, [normal(2, 3, 1), normal(5)]),
    "relax.multiply": (R.multiply, T.mul, [normal(3, 1, 5), normal(4, 5)]),
    "relax.divide": (R.divide, T.div, [normal(3, 1, 5), positive(4, 1)]),
    "relax.power": (R.power, T.pow, [positive(3, 1, 5), normal(4, 1)]),
    "relax.maximum": (R.maximum, T.maximum, [normal(3, 5), normal(1, 5)]),
    "relax.minimum": (R.minimum, T.minimum, [normal(3, 1), normal(3, 5)]),
    "relax.negative": (R.negative, T.neg, [normal(3, 5)]),
    "relax.abs": (R.abs, T.abs, [away(3, 5)]),
    "relax.exp": (R.exp, T.exp, [normal(3, 5)]),
    "relax.log": (R.log, T.log, [positive(3, 5)]),
    "relax.sqrt": (R.sqrt, T.sqrt, [positive(3, 5)]),
    "relax.rsqrt": (R.rsqrt, T.rsqrt, [positive(3, 5)]),
    "relax.square": (R.square, T.square, [normal(3, 5)]),
    "relax.sin": (R.sin, T.sin, [normal(3, 5)]),
    "relax.cos": (R.cos, T.cos, [normal(3, 5)]),
    "relax.tanh": (R.tanh, T.tanh, [normal(3, 5)]),
    "relax.sigmoid": (R.sigmoid, T.sigmoid, [normal(3, 5)]),
    "relax.erf": (R.grad.erf, T.erf, [normal(3, 5)]),
    "relax.floor": (R.floor, T.floor, [away(3, 5)]),
    "relax.ceil": (R.ceil, T.ceil, [away(3, 5)]),
    "relax.round": (R.round, T.round, [away(3, 5)]),
    "relax.sign": (R.sign, T.sign, [away(3, 5)]),
    "relax.nn.relu": (R.nn.relu, T.relu, [away(3, 5)]),
    "relax.nn.relu_grad": (
        R.grad.relu_grad,
        lambda x, g: T.where(x > 0, g, T.zeros(())),
        [away(3, 5), normal(3, 5)],
        [1],
    ),
    "relax.nn.gelu": (R.nn.gelu, F.gelu, [normal(3, 5)]),
    "relax.nn.gelu_tanh": (R.nn.gelu_tanh, lambda x: F.gelu(x, approximate="tanh"), [normal(3, 5)]),
    "relax.nn.silu": (R.nn.silu, F.silu, [normal(3, 5)]),
    "relax.nn.leakyrelu": (
        lambda x: R.nn.leakyrelu(x, 0.2),
        lambda x: F.leaky_relu(x, 0.2),
        [away(3, 5)],
    ),
    "relax.nn.softplus": (
        lambda x: R.nn.softplus(x, 2.0, 1.0),
        lambda x: F.softplus(x, 2.0, 1.0),
        [away(3, 5)],
    ),
    "relax.clip": (lambda x: R.clip(x, -0.5, 0.7), lambda x: T.clamp(x, -0.5, 0.7), [away(3, 5)]),
    "relax.where": (
        R.where,
        T.where,
        [bools(3, 5), normal(3, 1), normal(5)],
        [1, 2],
    ),
    "relax.ewise_fma": (
        R.ewise_fma,
        lambda a, b, c: a * b + c,
        [normal(3, 5), normal(3, 5), normal(3, 5)],
    ),
    "relax.nn.softmax": (lambda x: R.nn.softmax(x, 0), lambda x: T.softmax(x, 0), [normal(3, 5)]),
    "relax.nn.log_softmax": (R.nn.log_softmax, lambda x: T.log_softmax(x, -1), [normal(3, 5)]),
    "relax.matmul": (R.matmul, T.matmul, [normal(2, 3, 5), normal(5, 4)]),
    "relax.nn.linear": (R.nn.linear, F.linear, [normal(2, 3, 5), normal(4, 5), normal(4)]),
    "relax.nn.dense": (R.nn.dense, F.linear, [normal(3, 5), normal(4, 5)]),
    "relax.sum": (lambda x: R.sum(x, [0, 2]), lambda x: x.sum((0, 2)), [normal(2, 3, 5)]),
    "relax.mean": (
        lambda x: R.mean(x, [1], keepdims=True),
        lambda x: x.mean(1, keepdim=True),
        [normal(2, 3, 5)],
    ),
    # numpy's (and TVM's) variance / std divide by N: torch's correction=0
    "relax.variance": (
        lambda x: R.variance(x, [0, 2]),
        lambda x: x.var((0, 2), correction=0),
        [normal(2, 3, 5)],
    ),
    "relax.std": (
        lambda x: R.std(x, [1], keepdims=True),
        lambda x: x.std(1, keepdim=True, correction=0),
        [normal(2, 3, 5)],
    ),
    "relax.tril": (lambda x: R.tril(x, 1), lambda x: x.tril(1), [normal(2, 4, 3)]),
    "relax.triu": (lambda x: R.triu(x, -1), lambda x: x.triu(-1), [normal(4, 5)]),
    "relax.max": (lambda x: R.max(x, [1]), lambda x: x.amax(1), [distinct(2, 3, 5)]),
    "relax.min": (lambda x: R.min(x, [0, 2]), lambda x: x.amin((0, 2)), [distinct(2, 3, 5)]),
    "relax.prod": (lambda x: R.prod(x, [1]), lambda x: x.prod(1), [away(2, 3, 5)]),
    "relax.cumsum": (
        lambda x: R.cumsum(x, 1),
        lambda x: x.cumsum(1),
        [normal(3, 5)],
    ),
    "relax.reshape": (lambda x: R.reshape(x, (5, 3)), lambda x: x.reshape(5, 3), [normal(3, 5)]),
    "relax.flatten": (R.flatten, T.flatten, [normal(3, 5)]),
    "relax.expand_dims": (lambda x: R.expand_dims(x, 1), lambda x: x[:, None], [normal(3, 5)]),
    "relax.squeeze": (lambda x: R.squeeze(x, [1]), lambda x: x.squeeze(1), [normal(3, 1, 5)]),
    "relax.permute_dims": (
        lambda x: R.permute_dims(x, [2, 0, 1]),
        lambda x: x.permute(2, 0, 1),
        [normal(2, 3, 5)],
    ),
    "relax.astype": (
        lambda x: R.astype(R.astype(x, "float64"), "float32"),
        lambda x: x.double().float(),
        [normal(3, 5)],
    ),
    "relax.strided_slice": (
        lambda x: R.strided_slice(x, [1], [1], [4]),
        lambda x: x[:, 1:4],
        [normal(3, 5)],
    ),
    "relax.concat": (
        lambda a, b: R.concat([a, b], 1),
        lambda a, b: T.cat([a, b], 1),
        [normal(3, 2), normal(3, 5)],
    ),
    "relax.split": (lambda x: R.split(x, 3, 1), lambda x: T.split(x, 2, 1), [normal(3, 6)]),
    "relax.take": (
        lambda w, i: R.take(w, i, axis=0),
        lambda w, i: w[i],
        [normal(5, 3), ints(5, 7)],
        [0],
    ),
    "relax.broadcast_like": (
        R.grad.broadcast_like,
        lambda x, y: x.expand_as(y),
        [normal(3, 1), normal(2, 3, 5)],
        [0],
    ),
    "relax.broadcast_to": (
        lambda x: R.broadcast_to(x, (2, 3, 5)),
        lambda x: x.expand(2, 3, 5),
        [normal(3, 1)],
    ),
    "relax.flip": (lambda x: R.flip(x, 1), lambda x: x.flip(1), [normal(3, 5)]),
    "relax.nn.pad": (
        lambda x: R.nn.pad(x, [0, 0, 1, 2], 0.5),
        lambda x: F.pad(x, (1, 2), value=0.5),
        [normal(3, 5)],
    ),
    "relax.nn.conv2d": (
        lambda x, w: R.nn.conv2d(x, w, strides=2, padding=1),
        lambda x, w: F.conv2d(x, w, stride=2, padding=1),
        [normal(2, 3, 7, 5), normal(4, 3, 3, 2)],
    ),
    "relax.nn.max_pool2d": (
        lambda x: R.nn.max_pool2d(x, 3, 2, padding=1),
        lambda x: F.max_pool2d(x, 3, 2, padding=1),
        [distinct(1, 2, 7, 5)],
    ),
    "relax.nn.avg_pool2d": (
        lambda x: R.nn.avg_pool2d(x, 2, 2),
        lambda x: F.avg_pool2d(x, 2, 2),
        [normal(1, 2, 6, 5)],
    ),
    "relax.nn.adaptive_avg_pool2d": (
        lambda x: R.nn.adaptive_avg_pool2d(x, (2, 1)),
        lambda x: F.adaptive_avg_pool2d(x, (2, 1)),
        [normal(1, 2, 4, 3)],
    ),
    "relax.nn.layer_norm": (
        lambda x, g, b: R.nn.layer_norm(x, g, b, axes=[-1]),
        lambda x, g, b: F.layer_norm(x, (5,), g, b),
        [normal(2, 3, 5), normal(5), normal(5)],
    ),
    "relax.nn.batch_norm": (
        lambda x, g, b, m, v: R.nn.batch_norm(x, g, b, m, v, axis=1, training=False),
        _bn_torch,
        [normal(2, 3, 5), normal(3), normal(3), normal(3), positive(3)],
    ),
    "relax.nn.batch_norm (training)": (
        lambda x, g, b, m, v: R.nn.batch_norm(x, g, b, m, v, axis=1, momentum=0.3),
        _bn_torch_training,
        [normal(2, 3, 5), normal(3), normal(3), normal(3), positive(3)],
    ),
    "relax.nn.nll_loss": (
        lambda x, t, w: R.nn.nll_loss(x, t, w, "mean", 1),
        lambda x, t, w: F.nll_loss(x, t, w, reduction="mean", ignore_index=1),
        [normal(5, 3), ints(3, 5), positive(3)],
        [0],
    ),
    "relax.nn.cross_entropy_with_logits": (
        R.nn.cross_entropy_with_logits,
        lambda x, y: -(x * y).sum() / x.shape[0],
        [normal(3, 5), normal(3, 5)],
    ),
    "relax.nn.dropout": (
        lambda x: R.nn.dropout(x, 0.5),
        lambda x: (x, T.ones_like(x)),
        [normal(3, 5)],
    ),
    "relax.sort": (
        lambda x: R.sort(x, 1, True),
        lambda x: T.sort(x, dim=1, descending=True, stable=True)[0],
        [distinct(3, 5)],
    ),
    "relax.topk": (
        lambda x: R.topk(x, 2, 0, "values", False),
        lambda x: T.topk(x, 2, 0, largest=False)[0],
        [distinct(4, 3)],
    ),
    "relax.scatter_elements": (
        lambda d, i, u: R.scatter_elements(d, i, u, 1),
        lambda d, i, u: d.scatter(1, i, u),
        [normal(3, 5), ints(5, 3, 2), normal(3, 2)],
        [0, 2],
    ),
    "relax.scatter_nd": (
        lambda d, i, u: R.scatter_nd(d, i, u, "add"),
        lambda d, i, u: d.index_put((i[:, 0],), u, accumulate=True),
        [normal(4, 3), ints(4, 5, 1), normal(5, 3)],
        [0, 2],
    ),
    "relax.gather_nd": (
        lambda d, i: R.gather_nd(d, i),
        lambda d, i: d[i[..., 0], i[..., 1]],
        [normal(4, 3), ints(3, 6, 2)],
        [0],
    ),
    # torch's sum_to_size is collapse_sum_to (sum over the broadcast axes)
    "relax.collapse_sum_to": (
        lambda x: R.collapse_sum_to(x, (3, 1)),
        lambda x: x.sum_to_size(3, 1),
        [normal(2, 3, 5)],
    ),
    "relax.collapse_sum_like": (
        R.collapse_sum_like,
        lambda x, y: x.sum_to_size(*y.shape),
        [normal(2, 3, 5), normal(1, 5)],
        [0],
    ),
    # grad_extra.py's importer ops (float64 checks: tests/test_a6_grad_extra.py)
    "relax.tan": (R.tan, T.tan, [away(3, 5)]),
    "relax.sinh": (R.sinh, T.sinh, [normal(3, 5)]),
    "relax.cosh": (R.cosh, T.cosh, [normal(3, 5)]),
    "relax.asin": (R.asin, T.asin, [lambda rng: rng.uniform(-0.9, 0.9, (3, 5)).astype("float32")]),
    "relax.acos": (R.acos, T.acos, [lambda rng: rng.uniform(-0.9, 0.9, (3, 5)).astype("float32")]),
    "relax.atan": (R.atan, T.atan, [normal(3, 5)]),
    "relax.asinh": (R.asinh, T.asinh, [normal(3, 5)]),
    "relax.acosh": (R.acosh, T.acosh, [lambda rng: rng.uniform(1.2, 3, (3, 5)).astype("float32")]),
    "relax.atanh": (
        R.atanh,
        T.atanh,
        [lambda rng: rng.uniform(-0.9, 0.9, (3, 5)).astype("float32")],
    ),
    "relax.trunc": (R.trunc, T.trunc, [away(3, 5)]),
    "relax.mod": (
        R.mod,
        T.fmod,
        [normal(3, 5), lambda rng: rng.uniform(2.05, 2.45, (5,)).astype("float32")],
    ),
    "relax.floor_mod": (
        R.floor_mod,
        T.remainder,
        [normal(3, 1), lambda rng: rng.uniform(2.05, 2.45, (4,)).astype("float32")],
    ),
    "relax.tile": (lambda x: R.tile(x, (2, 1, 3)), lambda x: x.repeat(2, 1, 3), [normal(3, 2)]),
    "relax.repeat": (
        lambda x: R.repeat(x, 3, axis=1),
        lambda x: x.repeat_interleave(3, dim=1),
        [normal(2, 3, 4)],
    ),
    "relax.nn.conv1d": (
        lambda x, w: R.nn.conv1d(x, w, strides=2, padding=1, groups=2),
        lambda x, w: F.conv1d(x, w, stride=2, padding=1, groups=2),
        [normal(2, 4, 9), normal(6, 2, 3)],
    ),
    "relax.nn.group_norm": (
        lambda x, g, b: R.nn.group_norm(x, g, b, 2, 1, [2, 3]),
        lambda x, g, b: F.group_norm(x, 2, g, b),
        [normal(2, 4, 3, 3), positive(4), normal(4)],
    ),
    # grad_more.py's importer ops (float64 checks: tests/test_a7_grad.py)
    "relax.nn.conv2d_transpose": (
        lambda x, w: R.nn.conv2d_transpose(x, w, strides=2, padding=1, output_padding=1),
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
        [normal(2, 3, 4, 5), normal(3, 4, 3, 3)],
    ),
    "relax.nn.conv1d_transpose": (
        lambda x, w: R.nn.conv1d_transpose(x, w, 2, 1, 1, groups=2),
        lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1, groups=2),
        [normal(2, 4, 5), normal(4, 3, 3)],
    ),
    "relax.nn.conv3d": (
        lambda x, w: R.nn.conv3d(x, w, strides=(2, 1, 2), padding=1),
        lambda x, w: F.conv3d(x, w, stride=(2, 1, 2), padding=1),
        [normal(1, 2, 4, 3, 5), normal(3, 2, 3, 2, 3)],
    ),
    "relax.nn.conv3d_transpose": (
        lambda x, w: R.nn.conv3d_transpose(x, w, (2, 1, 2), 1, (1, 0, 1), 1, 2),
        lambda x, w: F.conv_transpose3d(
            x, w, stride=(2, 1, 2), padding=1, output_padding=(1, 0, 1), groups=2
        ),
        [normal(1, 4, 3, 2, 3), normal(4, 1, 2, 3, 2)],
    ),
    "relax.dynamic_strided_slice": (  # bounds 1:4:2, 5:0:-2, 0:5:3; a match_cast names the dims
        lambda x: relax.BlockBuilder.current().match_cast(
            R.dynamic_strided_slice(
                x, *(relax.const(np.array(v, "int64")) for v in ([1, 5, 0], [4, 0, 5], [2, -2, 3]))
            ),
            relax.TensorStructInfo((2, 3, 2), "float32"),
        ),
        lambda x: x[1:4:2, :, 0:5:3].flip(1)[:, 0:5:2],
        [normal(5, 6, 5)],
    ),
    "relax.einsum": (
        lambda a, b: R.einsum([a, b], "bij,bjk->bik"),
        lambda a, b: T.einsum("bij,bjk->bik", a, b),
        [normal(2, 3, 4), normal(2, 4, 5)],
    ),
    "relax.gather_elements": (
        lambda d, i: R.gather_elements(d, i, 1),
        lambda d, i: T.gather(d, 1, i),
        [normal(3, 4), ints(4, 3, 6)],
        [0],
    ),
    "relax.cumprod": (lambda x: R.cumprod(x, 1), lambda x: x.cumprod(1), [away(3, 5)]),
    "relax.nn.max_pool1d": (
        lambda x: R.nn.max_pool1d(x, 3, 2, (1, 1)),
        lambda x: F.max_pool1d(x, 3, 2, 1),
        [distinct(2, 3, 9)],
    ),
    "relax.nn.avg_pool1d": (
        lambda x: R.nn.avg_pool1d(x, 2, 2),
        lambda x: F.avg_pool1d(x, 2, 2),
        [normal(2, 3, 8)],
    ),
    "relax.nn.adaptive_avg_pool1d": (
        lambda x: R.nn.adaptive_avg_pool1d(x, 3),
        lambda x: F.adaptive_avg_pool1d(x, 3),
        [normal(2, 3, 7)],
    ),
    "relax.image.resize2d": (
        lambda x: R.image.resize2d(x, (5, 7)),
        lambda x: F.interpolate(x, (5, 7), mode="bilinear", align_corners=False),
        [normal(2, 3, 3, 4)],
    ),
    "relax.nn.attention": (
        lambda q, k, v: R.nn.attention(q, k, v, causal_mask="TopLeft"),
        lambda q, k, v: F.scaled_dot_product_attention(
            *(t.permute(0, 2, 1, 3) for t in (q, k, v)), is_causal=True
        ).permute(0, 2, 1, 3),
        [normal(2, 4, 2, 3), normal(2, 4, 2, 3), normal(2, 4, 2, 5)],
    ),
    "relax.nn.prelu": (R.nn.prelu, F.prelu, [away(2, 3, 4), positive(3)]),
    "relax.nn.rms_norm": (
        lambda x, w: R.nn.rms_norm(x, w, -1, 1e-5),
        lambda x, w: F.rms_norm(x, (4,), w, 1e-5),
        [normal(2, 3, 4), positive(4)],
    ),
}


def _check(name: str, seed: int = 0) -> None:
    build, tfn, gens = CASES[name][:3]
    rng = np.random.default_rng(seed)
    inputs = [g(rng) for g in gens]
    wrt = CASES[name][3] if len(CASES[name]) > 3 else list(range(len(inputs)))
    params = [
        relax.Var(f"x{k}", relax.TensorStructInfo(a.shape, str(a.dtype)))
        for k, a in enumerate(inputs)
    ]
    tin = [torch.tensor(a, requires_grad=k in wrt) for k, a in enumerate(inputs)]
    touts = tfn(*tin)
    touts = list(touts) if isinstance(touts, tuple | list) else [touts]
    weights = [rng.standard_normal(tuple(t.shape)).astype("float32") for t in touts]
    tloss = sum((t * torch.tensor(c)).sum() for t, c in zip(touts, weights))
    expected = torch.autograd.grad(tloss, [tin[k] for k in wrt])
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit(build(*params))
            fields = (
                [bb.emit(relax.TupleGetItem(out, i)) for i in range(len(touts))]
                if isinstance(out.struct_info, relax.TupleStructInfo)
                else [out]
            )
            loss = None
            for f, c in zip(fields, weights):
                term = bb.emit(R.sum(R.multiply(f, relax.const(c))))
                loss = term if loss is None else bb.emit(R.add(loss, term))
            loss = bb.emit_output(loss)
        bb.emit_func_output(loss)
    adj = gradient(bb.get(), "main", [params[k] for k in wrt])
    _, grads = evaluate(adj, *inputs, func_name="main_adjoint")
    for k, got, want in zip(wrt, grads, expected):
        got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
        np.testing.assert_allclose(
            got, want.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{name}: grad of input {k}"
        )


def test_every_op_has_a_rule_or_a_reason():
    table = dict(gradient_table())
    unclassified = [op for op, status in table.items() if status == "unclassified"]
    assert not unclassified, (
        f"ops with neither a gradient rule nor a reason: {unclassified}; add a rule to "
        "GRAD_RULES or a reason to NOT_DIFFERENTIABLE / NO_GRAD_RULE in relax/op/grad.py"
    )
    for name in set(NOT_DIFFERENTIABLE) | set(NO_GRAD_RULE):
        assert name in OP_TABLE, f"{name} is classified but not in the op table"
        assert OP_TABLE[name].grad is None, f"{name} has a rule and a no-gradient reason"
    assert not set(NOT_DIFFERENTIABLE) & set(NO_GRAD_RULE)


def test_every_rule_has_a_torch_case():
    assert set(GRAD_RULES) <= set(CASES), sorted(set(GRAD_RULES) - set(CASES))


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_rule_matches_torch(name):
    _check(name)


def test_gradient_refuses_an_op_without_a_rule():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(R.sum(R.layout_transform(x, index_map=lambda i, j: (j, i))))
        bb.emit_func_output(out)
    with pytest.raises(
        tvm.error.MiniTVMError, match=r"op relax.layout_transform .* has no gradient rule"
    ):
        gradient(bb.get(), "main")


def _markdown() -> str:
    lines = ["| op | gradient |", "| --- | --- |"]
    lines += [f"| `{op}` | {status} |" for op, status in gradient_table()]
    return "\n".join(lines)


def test_docs_table_matches_the_op_table():
    text = DOCS.read_text()
    start = text.index("<!-- grad-table:start -->") + len("<!-- grad-table:start -->")
    end = text.index("<!-- grad-table:end -->")
    assert text[start:end].strip() == _markdown(), (
        "docs/training.md's gradient table is stale; regenerate it with "
        "`python tests/test_grad_table.py`"
    )


if __name__ == "__main__":  # rewrite the table in docs/training.md
    text = DOCS.read_text()
    a, b = "<!-- grad-table:start -->", "<!-- grad-table:end -->"
    head, rest = text.split(a)
    _, tail = rest.split(b)
    DOCS.write_text(f"{head}{a}\n{_markdown()}\n{b}{tail}")
