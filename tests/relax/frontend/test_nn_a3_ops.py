"""nn.op's prelu, rms_norm and TVM's token-sampling ops (multinomial_from_uniform, top-p/top-k
sampling and renormalisation), each exported, compiled, run on the VM and compared with a
numpy reference written here from the documented semantics (and TVM's documented examples)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import DTypeError, MiniTVMError, ShapeError
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import op, spec

RNG = np.random.default_rng(3)


class _Fn(nn.Module):
    """A module whose forward is `fn` itself (so the spec names fn's arguments)."""

    def __init__(self, fn):
        self.forward = fn


def _run(fn, specs: dict, *inputs):
    mod, _ = _Fn(fn).export_tvm({"forward": specs})
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    return vm["forward"](*(tvm.runtime.tensor(a) for a in inputs)).numpy()


def _specs(**arrays):
    return {k: spec.Tensor(v.shape, str(v.dtype)) for k, v in arrays.items()}


# --------------------------------------------------------------------------- prelu, rms_norm


def test_prelu_scales_negatives_per_channel():
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    alpha = np.array([0.1, 0.5, 2.0], "float32")
    got = _run(lambda x, a: op.prelu(x, a), _specs(x=x, a=alpha), x, alpha)
    want = np.where(x > 0, x, x * alpha[None, :, None])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_prelu_emits_relax_nn_prelu_on_axis_1():
    mod, _ = _Fn(lambda x, a: op.prelu(x, a)).export_tvm(
        {"forward": {"x": spec.Tensor((2, 3), "float32"), "a": spec.Tensor((3,), "float32")}}
    )
    (call,) = [
        b.value for b in mod["forward"].body.blocks[0].bindings if b.var.name_hint == "prelu"
    ]
    assert call.op.name == "relax.nn.prelu" and call.attrs["axis"] == 1


def test_prelu_refuses_alpha_of_the_wrong_length():
    specs = {"x": spec.Tensor((2, 3), "float32"), "a": spec.Tensor((4,), "float32")}
    with pytest.raises(ShapeError, match=r"relax.nn.prelu: alpha has shape \(4,\), expected"):
        _Fn(lambda x, a: op.prelu(x, a)).export_tvm({"forward": specs})


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_rms_norm_matches_numpy(dtype):
    x = RNG.standard_normal((2, 3, 8)).astype(dtype)
    w = RNG.standard_normal((3, 8)).astype(dtype)
    got = _run(lambda x, w: op.rms_norm(x, w, axes=[-2, -1]), _specs(x=x, w=w), x, w)
    xf = x.astype("float64")
    want = xf / np.sqrt((xf**2).mean(axis=(1, 2), keepdims=True) + 1e-5) * w.astype("float64")
    tol = 1e-5 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(got.astype("float64"), want, rtol=tol, atol=tol)


def test_rms_norm_module_emits_one_op():
    model = nn.RMSNorm(8, axes=-1, bias=False)
    mod, _ = model.export_tvm({"forward": {"x": spec.Tensor((2, 8), "float32")}})
    assert "R.nn.rms_norm(x, weight, axes=(-1,))" in mod.script()
    assert "R.sqrt" not in mod.script()  # not a composite


def test_rms_norm_refuses_a_weight_of_the_wrong_shape():
    specs = {"x": spec.Tensor((2, 8), "float32"), "w": spec.Tensor((4,), "float32")}
    with pytest.raises(ShapeError, match="relax.nn.rms_norm: weight has shape"):
        _Fn(lambda x, w: op.rms_norm(x, w, axes=-1)).export_tvm({"forward": specs})


# --------------------------------------------------------------------------- sampling


def _first_passing(running: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Reference: per row, the first j with running[j] > t (the last j when none is)."""
    out = []
    for r, u in zip(running, t):
        hits = np.nonzero(r > u)[0]
        out.append(hits[0] if len(hits) else len(r) - 1)
    return np.array(out, "int64")[:, None]


def test_multinomial_from_uniform_documented_example():
    prob = np.array([[0.2, 0.3, 0.5], [0.3, 0.4, 0.3]], "float32")
    u = np.array([[0.4], [0.9]], "float32")
    got = _run(lambda p, u: op.multinomial_from_uniform(p, u), _specs(p=prob, u=u), prob, u)
    np.testing.assert_array_equal(got, [[1], [2]])


def test_multinomial_from_uniform_with_sample_indices_matches_numpy():
    raw = RNG.random((3, 7)).astype("float32")
    prob = raw / raw.sum(axis=1, keepdims=True)
    u = np.concatenate([RNG.random((5, 1)), [[0.0], [1.0]]]).astype("float32")  # both ends
    idx = np.array([[0], [1], [1], [2], [2], [0], [2]], "int64")
    fn = lambda p, u, i: op.multinomial_from_uniform(p, u, i)
    got = _run(fn, _specs(p=prob, u=u, i=idx), prob, u, idx)
    want = _first_passing(np.cumsum(prob, axis=1)[idx[:, 0]], u[:, 0])
    np.testing.assert_array_equal(got, want)
    assert got[-1, 0] == 6 and got[-2, 0] == 0  # u = 1 takes the last token, u = 0 the first


def test_multinomial_from_uniform_refuses_mismatched_rows():
    specs = {"p": spec.Tensor((3, 5), "float32"), "u": spec.Tensor((2, 1), "float32")}
    with pytest.raises(ShapeError, match="one uniform sample per distribution"):
        _Fn(lambda p, u: op.multinomial_from_uniform(p, u)).export_tvm({"forward": specs})


def _nucleus_cut(sorted_prob, top_p, top_k):
    """Reference: per row, how many leading sorted entries top-p/top-k keep, capped at V - 1."""
    running = np.cumsum(sorted_prob, axis=1)
    cut = []
    for b, row in enumerate(running):
        m = 0
        while m < len(row) and row[m] < top_p[b, 0] and m + 1 < top_k[b, 0]:
            m += 1
        cut.append(min(m, len(row) - 1))
    return running, np.array(cut)


def test_sample_top_p_top_k_documented_example():
    sorted_prob = np.array([[0.5, 0.4, 0.1], [0.4, 0.3, 0.3]], "float32")
    index = np.array([[2, 1, 0], [2, 0, 1]], "int64")
    top_p = np.array([[0.6], [0.9]], "float32")
    top_k = np.array([[3], [2]], "int64")
    u = np.array([[0.5], [0.6], [0.7]], "float32")
    rows = np.array([[0], [1], [1]], "int64")
    fn = lambda p, i, tp, tk, u, r: op.sample_top_p_top_k_from_sorted_prob(p, i, tp, tk, u, r)
    arrays = {"p": sorted_prob, "i": index, "tp": top_p, "tk": top_k, "u": u, "r": rows}
    got = _run(fn, _specs(**arrays), *arrays.values())
    np.testing.assert_array_equal(got, [[2], [0], [0]])  # TVM's test expects these


def test_sample_top_p_top_k_matches_numpy_on_random_rows():
    raw = RNG.random((4, 9)).astype("float32")
    prob = raw / raw.sum(axis=1, keepdims=True)
    order = np.argsort(-prob, axis=1, kind="stable")
    sorted_prob = np.take_along_axis(prob, order, axis=1)
    top_p = np.array([[0.3], [0.95], [1.0], [0.5]], "float32")
    top_k = np.array([[9], [3], [1], [20]], "int64")
    u = RNG.random((6, 1)).astype("float32")
    rows = np.array([[0], [1], [2], [3], [3], [0]], "int64")
    fn = lambda p, i, tp, tk, u, r: op.sample_top_p_top_k_from_sorted_prob(p, i, tp, tk, u, r)
    arrays = {
        "p": sorted_prob,
        "i": order.astype("int64"),
        "tp": top_p,
        "tk": top_k,
        "u": u,
        "r": rows,
    }
    got = _run(fn, _specs(**arrays), *arrays.values())
    running, cut = _nucleus_cut(sorted_prob, top_p, top_k)
    total = running[np.arange(4), cut][:, None]
    pos = _first_passing((running / total)[rows[:, 0]], u[:, 0])
    np.testing.assert_array_equal(got, order[rows[:, 0], pos[:, 0]][:, None])
    assert got[2, 0] == order[2, 0]  # top_k = 1: always the most likely token


def test_renormalize_top_p_top_k_matches_numpy():
    raw = RNG.random((3, 8)).astype("float32")
    prob = raw / raw.sum(axis=1, keepdims=True)
    sorted_prob = -np.sort(-prob, axis=1)
    top_p = np.array([[0.4], [0.99], [1.0]], "float32")
    top_k = np.array([[8], [2], [100]], "int64")
    fn = lambda p, s, tp, tk: op.renormalize_top_p_top_k_prob(p, s, tp, tk)
    arrays = {"p": prob, "s": sorted_prob, "tp": top_p, "tk": top_k}
    got = _run(fn, _specs(**arrays), *arrays.values())
    _, cut = _nucleus_cut(sorted_prob, top_p, top_k)
    threshold = sorted_prob[np.arange(3), cut][:, None]
    kept = np.where(prob >= threshold, prob, 0)
    np.testing.assert_allclose(got, kept / kept.sum(axis=1, keepdims=True), rtol=1e-6)
    assert (got[1] > 0).sum() == 2  # top_k = 2 keeps two tokens


def test_sampling_refuses_mixed_float_dtypes():
    specs = {
        "p": spec.Tensor((2, 3), "float32"),
        "s": spec.Tensor((2, 3), "float32"),
        "tp": spec.Tensor((2, 1), "float16"),
        "tk": spec.Tensor((2, 1), "int64"),
    }
    with pytest.raises(DTypeError, match="must share one float dtype"):
        fn = lambda p, s, tp, tk: op.renormalize_top_p_top_k_prob(p, s, tp, tk)
        _Fn(fn).export_tvm({"forward": specs})


def test_multinomial_relax_op_refuses_integer_prob():
    p = relax.Var("p", relax.TensorStructInfo((2, 3), "int32"))
    u = relax.Var("u", relax.TensorStructInfo((2, 1), "float32"))
    i = relax.Var("i", relax.TensorStructInfo((2, 1), "int64"))
    bb = relax.BlockBuilder()
    with (
        pytest.raises(MiniTVMError, match="prob has dtype int32; it must be a float"),
        bb.function("main", [p, u, i]),
    ):
        bb.emit(relax.op.multinomial_from_uniform(p, u, i))


@pytest.mark.parametrize("num_parameters", [1, 3])
def test_prelu_module_matches_torch_semantics(num_parameters):
    model = nn.PReLU(num_parameters)
    mod, params = model.export_tvm({"forward": {"x": spec.Tensor((2, 3, 4), "float32")}})
    assert [name for name, _ in params] == ["weight"]
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    w = np.array([0.25, -0.5, 3.0][:num_parameters], "float32")
    got = vm["forward"](tvm.runtime.tensor(x), tvm.runtime.tensor(w)).numpy()
    slope = np.broadcast_to(w, (3,))[None, :, None]
    np.testing.assert_allclose(got, np.where(x > 0, x, slope * x), rtol=1e-6)


def test_prelu_module_refuses_a_bad_parameter_count():
    with pytest.raises(MiniTVMError, match="num_parameters must be a positive int"):
        nn.PReLU(0)
