"""Optimizers as relax functions: numpy references over several steps, in-place updates."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax
from minitvm.error import MiniTVMError
from minitvm.relax.training import SGD, Adam, MomentumSGD
from minitvm.runtime import nd

SHAPES = [(3, 4), (4,)]


def np_sgd(lr, wd=0.0):
    def step(ps, gs, state):
        return [p - lr * (g + wd * p) for p, g in zip(ps, gs)], state

    return step


def np_momentum(lr, mu, wd=0.0):
    def step(ps, gs, state):
        vs = [mu * v + g + wd * p for p, g, v in zip(ps, gs, state)]
        return [p - lr * v for p, v in zip(ps, vs)], vs

    return step


def np_adam(lr, b1, b2, eps):
    def step(ps, gs, state):
        n = len(ps)
        t, ms, vs = state[0] + 1, state[1 : n + 1], state[n + 1 :]
        ms = [b1 * m + (1 - b1) * g for m, g in zip(ms, gs)]
        vs = [b2 * v + (1 - b2) * g * g for v, g in zip(vs, gs)]
        new = [
            p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
            for p, m, v in zip(ps, ms, vs)
        ]
        return new, [t] + ms + vs

    return step


CASES = [
    (lambda: SGD(0.1), np_sgd(0.1), 0),
    (lambda: SGD(0.05, weight_decay=0.01), np_sgd(0.05, 0.01), 0),
    (lambda: MomentumSGD(0.1, 0.9), np_momentum(0.1, 0.9), len(SHAPES)),
    (lambda: MomentumSGD(0.1, 0.5, weight_decay=0.1), np_momentum(0.1, 0.5, 0.1), len(SHAPES)),
    (lambda: Adam(0.01, 0.9, 0.999, 1e-8), np_adam(0.01, 0.9, 0.999, 1e-8), 1 + 2 * len(SHAPES)),
]


def _data(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype("float32") for s in SHAPES]


@pytest.mark.parametrize("make,ref,n_state", CASES)
def test_function_matches_numpy(make, ref, n_state):
    """The relax function (reference evaluator) against numpy, state threaded over 4 steps."""
    opt = make().init(SHAPES)
    func = opt.get_function()
    assert len(func.params) == 2 * len(SHAPES) + n_state
    ps, state = _data(0), opt.state_init()
    want_ps, want_state = [p.astype(np.float64) for p in ps], [s.astype(np.float64) for s in state]
    for k in range(4):
        gs = _data(k + 1)
        out = relax.eval_ref.evaluate(func, *ps, *gs, *state)
        ps, state = list(out[: len(SHAPES)]), list(out[len(SHAPES) :])
        want_ps, want_state = ref(want_ps, gs, want_state)
        for got, want in zip(ps + state, want_ps + want_state):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make,ref,n_state", CASES)
def test_in_place_update_matches_numpy(make, ref, n_state):
    """The compiled step writes into the parameters' own NDArrays, over 5 steps."""
    opt = make().init(SHAPES)
    step = opt.compile()
    params = [nd.array(p) for p in _data(0)]
    buffers = [p.numpy() for p in params]  # to check the storage is the same afterwards
    ptrs = [p._data.ctypes.data for p in params]
    want_ps = [p.astype(np.float64) for p in buffers]
    want_state = [s.astype(np.float64) for s in opt.state_init()]
    for k in range(5):
        gs = _data(k + 1)
        step(params, [nd.array(g) for g in gs])
        want_ps, want_state = ref(want_ps, gs, want_state)
    for p, ptr, want in zip(params, ptrs, want_ps):
        assert p._data.ctypes.data == ptr
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-5, atol=1e-6)
    for s, want in zip(step.state, want_state):
        np.testing.assert_allclose(s.numpy(), want, rtol=1e-5, atol=1e-6)
    # every parameter is updated directly in its own storage (no copy back)
    assert {("param", i) for i in range(len(SHAPES))} <= set(step.inplace)
    assert step.copies == []


def test_sgd_is_one_fused_kernel_per_param():
    step = SGD(0.1).init(SHAPES).compile()
    assert step.num_kernels == len(SHAPES)


def test_errors():
    with pytest.raises(MiniTVMError, match=r"call \.init\(params\)"):
        SGD(0.1).get_function()
    with pytest.raises(MiniTVMError, match="must be a float tensor"):
        SGD(0.1).init([np.zeros(3, dtype="int32")])
    step = SGD(0.1).init(SHAPES).compile()
    with pytest.raises(MiniTVMError, match="expected 2 params and grads"):
        step([nd.array(_data(0)[0])], [])
