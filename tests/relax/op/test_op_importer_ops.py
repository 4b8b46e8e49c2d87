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
    "nn.attention", "nn.attention_causal_bias", "nn.attention_bottom_right", "squeeze",
    "squeeze_all", "broadcast_to", "broadcast_to_symbolic", "tile", "repeat", "repeat_flat",
    "flip", "flip_batch", "cumsum", "cumsum_exclusive_flat", "cumsum_int", "nn.pad",
    "nn.pad_edge", "nn.pad_reflect", "image.resize2d_nearest", "image.resize2d_nearest_half",
    "image.resize2d_linear", "image.resize2d_align", "image.resize2d_pytorch_nhwc", "argmax",
    "argmax_keep_flat", "argmin", "argmin_int", "variance", "std", "max_keepdims", "nn.conv1d",
    "nn.conv1d_groups", "nn.conv2d_transpose", "nn.conv2d_transpose_groups_dilation",
    "nn.max_pool1d", "nn.max_pool1d_ceil", "nn.avg_pool1d", "nn.adaptive_avg_pool1d",
    "einsum_matmul", "einsum_batched", "einsum_implicit_ellipsis", "einsum_three",
    "einsum_transpose_diag",
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


# ----------------------------------------------------------------------------- against torch

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _run_one(build, *arrays: np.ndarray) -> np.ndarray:
    """build(*relax vars) compiled with relax.build and run on `arrays` in the VM."""
    params = [
        relax.Var(f"a{k}", relax.TensorStructInfo(a.shape, str(a.dtype)))
        for k, a in enumerate(arrays)
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build(*params))
        bb.emit_func_output(out)
    return _run_vm(bb.get(), list(arrays))[0]


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


RESIZE_VS_TORCH = [
    # (out size, torch kwargs, relax kwargs)
    ((7, 10), {"mode": "nearest"}, {"method": "nearest_neighbor",
     "coordinate_transformation_mode": "asymmetric", "rounding_method": "floor"}),
    ((3, 2), {"mode": "nearest"}, {"method": "nearest_neighbor",
     "coordinate_transformation_mode": "asymmetric", "rounding_method": "floor"}),
    ((7, 10), {"mode": "nearest-exact"}, {"method": "nearest_neighbor",
     "coordinate_transformation_mode": "half_pixel", "rounding_method": "round_prefer_ceil"}),
    ((7, 10), {"mode": "bilinear", "align_corners": False}, {"method": "linear"}),
    ((3, 2), {"mode": "bilinear", "align_corners": False}, {"method": "linear"}),
    ((7, 10), {"mode": "bilinear", "align_corners": True},
     {"method": "linear", "coordinate_transformation_mode": "align_corners"}),
]  # fmt: skip


@pytest.mark.parametrize("size, tkw, rkw", RESIZE_VS_TORCH)
def test_resize2d_matches_torch_interpolate(size, tkw, rkw) -> None:
    x = _rand(2, 3, 5, 4)
    got = _run_one(lambda a: op.image.resize2d(a, size, **rkw), x)
    want = F.interpolate(torch.from_numpy(x), size=size, **tkw).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("is_causal", [False, True])
def test_attention_matches_torch_sdpa(is_causal: bool) -> None:
    q, k, v = _rand(2, 3, 6, 8, seed=1), _rand(2, 3, 6, 8, seed=2), _rand(2, 3, 6, 5, seed=3)
    bsnh = [np.ascontiguousarray(a.transpose(0, 2, 1, 3)) for a in (q, k, v)]
    mask = "TopLeft" if is_causal else None
    got = _run_one(lambda a, b, c: op.nn.attention(a, b, c, causal_mask=mask), *bsnh)
    want = F.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)), is_causal=is_causal)
    np.testing.assert_allclose(got, want.numpy().transpose(0, 2, 1, 3), rtol=1e-4, atol=1e-5)


def test_group_norm_matches_torch() -> None:
    x, g, b = _rand(2, 6, 3, 4), _rand(6, seed=1), _rand(6, seed=2)
    got = _run_one(
        lambda a, gm, bt: op.nn.group_norm(a, gm, bt, 3, channel_axis=1, axes=[2, 3]), x, g, b
    )
    want = F.group_norm(*map(torch.from_numpy, (x,)), 3, torch.from_numpy(g), torch.from_numpy(b))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "build, ref",
    [
        (lambda a: op.nn.silu(a), F.silu),
        (lambda a: op.nn.gelu_tanh(a), lambda t: F.gelu(t, approximate="tanh")),
        (lambda a: op.nn.leakyrelu(a, 0.1), lambda t: F.leaky_relu(t, 0.1)),
        (lambda a: op.nn.softplus(a, 2.0, 3.0), lambda t: F.softplus(t, 2.0, 3.0)),
        (lambda a: op.floor_mod(a, 0.7), lambda t: torch.remainder(t, 0.7)),
        (lambda a: op.floor_divide(a, 0.7), lambda t: torch.floor_divide(t, 0.7)),
        (lambda a: op.nn.pad(a, (0, 0, 0, 0, 1, 2, 2, 1), pad_mode="reflect"),
         lambda t: F.pad(t, (2, 1, 1, 2), mode="reflect")),
        (lambda a: op.nn.pad(a, (0, 0, 0, 0, 1, 2, 2, 1), pad_mode="edge"),
         lambda t: F.pad(t, (2, 1, 1, 2), mode="replicate")),
    ],
    ids=["silu", "gelu_tanh", "leakyrelu", "softplus", "floor_mod", "floor_divide", "reflect",
         "replicate"],
)  # fmt: skip
def test_elementwise_and_pad_match_torch(build, ref) -> None:
    x = _rand(2, 3, 5, 4) * 4
    got = _run_one(build, x)
    np.testing.assert_allclose(got, ref(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "build, ref, wshape",
    [
        (lambda a, w: op.nn.conv1d(a, w, strides=2, padding=1, groups=2),
         lambda t, w: F.conv1d(t, w, stride=2, padding=1, groups=2), (6, 2, 3)),
        (lambda a, w: op.nn.conv2d_transpose(a, w, strides=2, padding=1, output_padding=1),
         lambda t, w: F.conv_transpose2d(t, w, stride=2, padding=1, output_padding=1), (4, 3, 3, 3)),
        (lambda a, w: op.nn.conv2d_transpose(a, w, strides=(2, 1), groups=2, dilation=2),
         lambda t, w: F.conv_transpose2d(t, w, stride=(2, 1), groups=2, dilation=2), (4, 2, 2, 3)),
    ],
    ids=["conv1d", "conv_transpose2d", "conv_transpose2d_groups"],
)  # fmt: skip
def test_convs_match_torch(build, ref, wshape) -> None:
    x = _rand(2, 4, 5, 6)[:, :, 0] if len(wshape) == 3 else _rand(2, 4, 5, 6)
    w = _rand(*wshape, seed=4)
    got = _run_one(build, np.ascontiguousarray(x), w)
    want = ref(torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(w)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "build, ref",
    [
        (lambda a: op.nn.max_pool1d(a, 3, 2, 1, ceil_mode=True),
         lambda t: F.max_pool1d(t, 3, 2, 1, ceil_mode=True)),
        (lambda a: op.nn.avg_pool1d(a, 2, 2, 1, count_include_pad=True),
         lambda t: F.avg_pool1d(t, 2, 2, 1, count_include_pad=True)),
        (lambda a: op.nn.adaptive_avg_pool1d(a, 4), lambda t: F.adaptive_avg_pool1d(t, 4)),
        (lambda a: op.argmax(a, axis=-1), lambda t: torch.argmax(t, -1)),
        (lambda a: op.std(a, axis=-1), lambda t: torch.std(t, -1, unbiased=False)),
        (lambda a: op.variance(a, axis=[1], keepdims=True),
         lambda t: torch.var(t, 1, unbiased=False, keepdim=True)),
    ],
    ids=["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "argmax", "std", "variance"],
)  # fmt: skip
def test_pool1d_and_statistics_match_torch(build, ref) -> None:
    x = _rand(2, 3, 9)
    got = _run_one(build, x)
    np.testing.assert_allclose(got, ref(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "subscripts, shapes",
    [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("bhqd,bkhd->bhqk", [(2, 3, 4, 5), (2, 6, 3, 5)]),
     ("ij->ji", [(3, 4)]), ("bi,bi->b", [(3, 4), (3, 4)])],
)  # fmt: skip
def test_einsum_matches_torch(subscripts: str, shapes: list) -> None:
    arrays = [_rand(*s, seed=k) for k, s in enumerate(shapes)]
    got = _run_one(lambda *a: op.einsum(list(a), subscripts), *arrays)
    want = torch.einsum(subscripts, *map(torch.from_numpy, arrays)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- graph passes


def _const(rng: np.random.Generator, *shape: int) -> relax.Constant:
    return relax.const((rng.standard_normal(shape) * 0.3).astype("float32"))


def _cnn(rng: np.random.Generator) -> tvm.IRModule:
    """Convs (which AlterOpLayout blocks) around the new ops, which stay in NCHW."""
    x = relax.Var("x", relax.TensorStructInfo((1, 8, 8, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(op.nn.conv2d(x, _const(rng, 16, 8, 3, 3), padding=1))
            y = bb.emit(op.nn.group_norm(y, _const(rng, 16), _const(rng, 16), 4, 1, [2, 3]))
            y = bb.emit(op.nn.silu(y))
            y = bb.emit(op.image.resize2d(y, (16, 16), method="nearest_neighbor"))
            y = bb.emit(op.nn.conv2d(y, _const(rng, 16, 16, 3, 3), padding=1))
            y = bb.emit(op.nn.leakyrelu(y, 0.1))
            y = bb.emit(op.nn.pad(y, (0, 0, 0, 0, 1, 1, 1, 1), pad_mode="reflect"))
            y = bb.emit(op.nn.conv2d(y, _const(rng, 16, 16, 3, 3)))
            y = bb.emit(op.nn.conv2d_transpose(y, _const(rng, 16, 8, 2, 2), strides=2))
            y = bb.emit(op.where(op.greater(y, 0.0), y, op.multiply(y, 0.5)))
            y = bb.emit_output(op.mean(y, axis=[2, 3]))
        bb.emit_func_output(y)
    return bb.get()


def _transformer_block(rng: np.random.Generator) -> tvm.IRModule:
    """Causal self-attention with a symbolic sequence length, gelu_tanh MLP, masks by where."""
    s = tir.Var("s", "int64")
    x = relax.Var("x", relax.TensorStructInfo((2, s, 16), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(op.nn.layer_norm(x, _const(rng, 16), _const(rng, 16)))
            qkv = bb.emit(op.nn.linear(h, _const(rng, 48, 16)))
            q, k, v = (
                bb.emit(relax.TupleGetItem(bb.emit(op.split(qkv, 3, axis=2)), i)) for i in range(3)
            )
            heads = [bb.emit(op.reshape(t, (2, s, 4, 4))) for t in (q, k, v)]
            a = bb.emit(op.nn.attention(*heads, causal_mask="TopLeft"))
            a = bb.emit(op.reshape(a, (2, s, 16)))
            y = bb.emit(op.add(x, a))
            m = bb.emit(op.nn.gelu_tanh(op.nn.linear(y, _const(rng, 32, 16))))
            m = bb.emit(op.where(op.less(m, -1.0), op.zeros((), "float32"), m))
            out = bb.emit_output(op.add(y, op.nn.linear(m, _const(rng, 16, 32))))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("make, shape", [(_cnn, (1, 8, 8, 8)), (_transformer_block, (2, 5, 16))])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_models_of_new_ops_survive_the_graph_passes(make, shape, opt_level: int) -> None:
    """opt_level 3 runs AlterOpLayout (convs blocked, new ops kept in NCHW), FuseOps and the
    DefaultSchedule over the new ops' kernels; the result matches the numpy references."""
    mod = make(np.random.default_rng(0))
    data = _rand(*shape, seed=5)
    with tvm.transform.PassContext(opt_level=opt_level):
        exe = relax.build(mod, "llvm")
    got = relax.VirtualMachine(exe, tvm.cpu())["main"](tvm.nd.array(data)).numpy()
    np.testing.assert_allclose(got, evaluate(mod, data), rtol=1e-4, atol=1e-4)
