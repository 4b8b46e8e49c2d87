"""Gradient rules of importer ops added in relax/op/grad_extra.py (tan ... atanh, trunc, mod,
floor_mod, tile, repeat, conv1d, group_norm), checked in float64 against torch.autograd, both through the
reference interpreter and compiled by relax.build."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import TVMError
from minitvm.relax import op as R
from minitvm.relax.eval_ref import evaluate
from minitvm.relax.transform.gradient import gradient

torch = pytest.importorskip("torch")
T = torch
F = torch.nn.functional


def _u(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, shape)


def _signed(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


# op -> (relax builder, torch function, float64 input generators)
CASES = {
    "tan": (R.tan, T.tan, [_u(-1.2, 1.2, 3, 4)]),
    "sinh": (R.sinh, T.sinh, [_u(-2, 2, 3, 4)]),
    "cosh": (R.cosh, T.cosh, [_u(-2, 2, 3, 4)]),
    "asin": (R.asin, T.asin, [_u(-0.9, 0.9, 3, 4)]),
    "acos": (R.acos, T.acos, [_u(-0.9, 0.9, 3, 4)]),
    "atan": (R.atan, T.atan, [_u(-3, 3, 3, 4)]),
    "asinh": (R.asinh, T.asinh, [_u(-3, 3, 3, 4)]),
    "acosh": (R.acosh, T.acosh, [_u(1.2, 3, 3, 4)]),
    "atanh": (R.atanh, T.atanh, [_u(-0.9, 0.9, 3, 4)]),
    "trunc": (R.trunc, T.trunc, [_signed(0.2, 2.8, 3, 4)]),
    # quotients kept away from integers, where the remainder jumps
    "mod": (R.mod, T.fmod, [_signed(0.3, 9, 3, 4), _u(2.05, 2.45, 4)]),
    "floor_mod": (R.floor_mod, T.remainder, [_signed(0.3, 9, 3, 1), _signed(2.05, 2.45, 4)]),
    "tile": (lambda x: R.tile(x, (2, 1, 3)), lambda x: x.repeat(2, 1, 3), [_u(-1, 1, 3, 2)]),
    "tile_fewer_reps": (lambda x: R.tile(x, 3), lambda x: x.repeat(1, 1, 3), [_u(-1, 1, 2, 3, 2)]),
    "repeat_axis": (
        lambda x: R.repeat(x, 3, axis=-2),
        lambda x: x.repeat_interleave(3, dim=-2),
        [_u(-1, 1, 2, 3, 4)],
    ),
    "conv1d": (
        lambda x, w: R.nn.conv1d(x, w, strides=2, padding=1, dilation=2, groups=2),
        lambda x, w: F.conv1d(x, w, stride=2, padding=1, dilation=2, groups=2),
        [_u(-1, 1, 2, 4, 11), _u(-1, 1, 6, 2, 3)],
    ),
    "group_norm_4d": (
        lambda x, g, b: R.nn.group_norm(x, g, b, 2, 1, [2, 3], 1e-5),
        lambda x, g, b: F.group_norm(x, 2, g, b, 1e-5),
        [_u(-1, 1, 2, 4, 3, 5), _u(0.5, 1.5, 4), _u(-1, 1, 4)],
    ),
    "group_norm_3d": (
        lambda x, g, b: R.nn.group_norm(x, g, b, 3, 1, [2], 1e-3),
        lambda x, g, b: F.group_norm(x, 3, g, b, 1e-3),
        [_u(-1, 1, 3, 6, 4), _u(0.5, 1.5, 6), _u(-1, 1, 6)],
    ),
    "repeat_flat": (
        lambda x: R.repeat(x, 2),
        lambda x: x.reshape(-1).repeat_interleave(2),
        [_u(-1, 1, 2, 3)],
    ),
}


def _adjoint(build, inputs, weight):
    params = [
        relax.Var(f"x{k}", relax.TensorStructInfo(a.shape, "float64")) for k, a in enumerate(inputs)
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit(build(*params))
            loss = bb.emit_output(bb.emit(R.sum(R.multiply(y, relax.const(weight)))))
        bb.emit_func_output(loss)
    return gradient(bb.get(), "main")


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_matches_torch_autograd_in_float64(name):
    build, tfn, gens = CASES[name]
    rng = np.random.default_rng(7)
    inputs = [g(rng) for g in gens]
    tin = [torch.tensor(a, requires_grad=True) for a in inputs]
    tout = tfn(*tin)
    weight = rng.standard_normal(tuple(tout.shape))
    want = torch.autograd.grad((tout * torch.tensor(weight)).sum(), tin)
    mod = _adjoint(build, inputs, weight)
    _, ref = evaluate(mod, *inputs, func_name="main_adjoint")
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    _, built = vm["main_adjoint"](*[tvm.nd.array(a) for a in inputs])
    for k, w in enumerate(want):
        for got in (ref[k], built[k]):
            got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
            np.testing.assert_allclose(got, w.numpy(), rtol=1e-9, atol=1e-12)


def test_tile_of_a_symbolic_shape_is_refused_with_the_reason():
    n = tvm.tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 2), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            loss = bb.emit_output(bb.emit(R.sum(bb.emit(R.tile(x, (2, 1))))))
        bb.emit_func_output(loss)
    with pytest.raises(TVMError, match=r"relax.tile of a tensor with symbolic dims"):
        gradient(bb.get(), "main")


def test_group_norm_with_channels_last_is_refused_with_the_supported_form():
    x = relax.Var("x", relax.TensorStructInfo((2, 3, 4), "float32"))
    gb = [relax.Var(n, relax.TensorStructInfo((4,), "float32")) for n in "gb"]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *gb]):
        with bb.dataflow():
            y = bb.emit(R.nn.group_norm(x, *gb, 2, 2, [1]))
            loss = bb.emit_output(bb.emit(R.sum(y)))
        bb.emit_func_output(loss)
    with pytest.raises(TVMError, match=r"group_norm with channel_axis=2 .*\(channels on axis 1"):
        gradient(bb.get(), "main")
