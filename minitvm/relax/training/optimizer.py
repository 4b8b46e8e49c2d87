"""Optimizers as graph programs: SGD, momentum SGD (dampening, Nesterov), Adam; weight decay.

Two forms of the same update, chosen by what `init` receives:

* TVM's (`relax.training.optimizer`): `opt.init(params)` with relax Vars (one dtype, static
  shapes) sets `opt.param_list`, `opt.dtype` and `opt.state`, a tuple of NDArrays starting with
  the step count (int64); `opt.get_function()` is the relax function named after the optimizer,

      SGD(params: R.Tuple(...), gradients: R.Tuple(...), optim_states: R.Tuple(...))
          -> (params_new, optim_states_new)

  and `SetupTrainer` puts it in the trainer module as `optimizer`.
* minitvm's flat form: `opt.init(shapes)` (shapes, arrays or TensorStructInfos) and
  `get_function()` / `get_flat_function()`

      main(p_1..p_n, g_1..g_n, s_1..s_m) -> (p'_1..p'_n, s'_1..s'_m)

  with `state_init()` (SGD: none; momentum: velocities; Adam: step, moments). `opt.compile()`
  runs it in place (`InPlaceUpdate`, inplace.py); the training library inlines it in its step.

    opt = SGD(0.1).init([x, y])                 # relax Vars: TVM's form
    new_params, opt.state = vm["SGD"](params, grads, opt.state)
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from ...error import TVMError
from ...runtime import NDArray, nd
from .. import op as R
from ..block_builder import BlockBuilder
from ..expr import Expr, Function, Tuple, TupleGetItem, Var, const
from ..struct_info import TensorStructInfo, TupleStructInfo
from .inplace import InPlaceUpdate


class OptimizerError(TVMError, ValueError):
    """Parameters an optimizer cannot update (not Vars, not float tensors, mixed dtypes, twice)."""


def _sinfo(p: Any) -> TensorStructInfo:
    if isinstance(p, Var):
        return p.struct_info
    if isinstance(p, np.ndarray | NDArray):
        return TensorStructInfo(tuple(p.shape), str(p.dtype))
    if isinstance(p, TensorStructInfo):
        return p
    return TensorStructInfo(tuple(p), "float32")


def _one_minus(x: float) -> float:
    """1 - x computed on the decimal digits of x, so 1 - 0.85 is 0.15 (not 0.15000000000000002)
    and float64 optimizers get the constant a user would write."""
    return float(Decimal(1) - Decimal(repr(float(x))))


def _shape(s: TensorStructInfo) -> tuple[int, ...]:
    return tuple(int(d) for d in s.shape)


class Optimizer:
    """Base: subclasses give their state (`_state_specs`, `_tvm_state`) and update rules
    (`_update` for the flat form, `_tvm_update` for TVM's). `Optimizer("Name")` (TVM's
    spelling for a subclass's name) or `Optimizer(lr)`."""

    name = "optimizer"

    def __init__(self, name_or_lr: str | float | None = None) -> None:
        if isinstance(name_or_lr, str):
            self.name, self.lr = name_or_lr, 0.0
        else:
            self.lr = float(name_or_lr) if name_or_lr is not None else 0.0
        self.param_sinfo: list[TensorStructInfo] | None = None
        self.param_list: list[Var] | None = None
        self.dtype: str | None = None
        self.state: tuple | None = None

    # ----------------------------------------------------------------- init
    def init(self, params: Any) -> Optimizer:
        """relax Var(s): TVM's form (sets param_list, dtype, state); shapes, arrays or
        TensorStructInfos: the flat form (float tensors of known shape)."""
        items = list(params) if isinstance(params, list | tuple) else [params]
        self.param_list, self.state, self.dtype = None, None, None
        if any(isinstance(p, Expr) for p in items):
            self._set_params_and_dtype(items)
            self.param_sinfo = [p.struct_info for p in items]
            self.state = tuple(nd.array(a) for a in self._tvm_state())
            return self
        self.param_sinfo = [_sinfo(p) for p in items]
        for k, s in enumerate(self.param_sinfo):
            if s.shape is None or s.dtype is None or not s.dtype.is_float:
                raise OptimizerError(
                    f"{self.name}: parameter {k} must be a float tensor of known shape, got {s}"
                )
        return self

    def _set_params_and_dtype(self, params: list) -> None:
        seen: set[int] = set()
        dtype = None
        for p in params:
            if not isinstance(p, Var):
                raise OptimizerError(f"{self.name}: parameter {p!r} is not a relax Var")
            s = p.struct_info
            if not isinstance(s, TensorStructInfo) or s.dtype is None or not s.dtype.is_float:
                raise OptimizerError(
                    f"{self.name}: parameter '{p.name_hint}' is {s}; optimizers update float "
                    "tensors only"
                )
            if s.shape is None or any(
                not isinstance(d, int) and not hasattr(d, "value") for d in s.shape
            ):
                raise OptimizerError(
                    f"{self.name}: parameter '{p.name_hint}' has no static shape ({s}); the "
                    "optimizer state needs one"
                )
            if dtype is not None and str(s.dtype) != dtype:
                raise OptimizerError(
                    f"{self.name}: parameter '{p.name_hint}' has dtype {s.dtype}, the earlier ones "
                    f"{dtype}; all parameters of one optimizer share a dtype"
                )
            if id(p) in seen:
                raise OptimizerError(f"{self.name}: parameter '{p.name_hint}' appears twice")
            seen.add(id(p))
            dtype = str(s.dtype)
        self.param_list, self.dtype = list(params), dtype

    def _require_init(self) -> list[TensorStructInfo]:
        if self.param_sinfo is None:
            raise TVMError(
                f"{self.name}: Please call init() for the optimizer before calling get_function() "
                "(call .init(params) with the parameters first)"
            )
        return self.param_sinfo

    # ----------------------------------------------------------------- subclasses
    def _state_specs(self) -> list[TensorStructInfo]:
        return []

    def _update(
        self, bb: BlockBuilder, params: list, grads: list, state: list
    ) -> tuple[list, list]:
        raise NotImplementedError

    def _tvm_state(self) -> list[np.ndarray]:
        return [np.zeros((), "int64")]

    def _tvm_update(
        self, bb: BlockBuilder, params: list, grads: list, state: Var
    ) -> tuple[list, list]:
        raise NotImplementedError

    # ----------------------------------------------------------------- functions
    def state_init(self) -> list[np.ndarray]:
        """Initial state values of the flat form (zeros)."""
        self._require_init()
        return [np.zeros(_shape(s), dtype=s.dtype.numpy_dtype()) for s in self._state_specs()]

    def get_function(self) -> Function:
        """The update as a relax function: TVM's form after init(Vars), else the flat form."""
        if self.param_list is not None:
            return self._get_tvm_function()
        return self.get_flat_function()

    def get_flat_function(self) -> Function:
        """The flat form `main(*params, *grads, *states) -> (*params', *states')`."""
        sinfos = self._require_init()
        params = [Var(f"p{k}", s) for k, s in enumerate(sinfos)]
        grads = [Var(f"g{k}", s) for k, s in enumerate(sinfos)]
        state = [Var(f"s{k}", s) for k, s in enumerate(self._state_specs())]
        bb = BlockBuilder()
        with bb.function("main", params + grads + state):
            with bb.dataflow():
                new_params, new_state = self._update(bb, params, grads, state)
                out = bb.emit_output(Tuple(tuple(new_params) + tuple(new_state)))
            bb.emit_func_output(out)
        return bb.get()["main"]

    def _get_tvm_function(self) -> Function:
        sinfos = [p.struct_info for p in self.param_list]
        state_sinfo = TupleStructInfo(tuple(_sinfo(a) for a in self.state))
        param_var = Var("params", TupleStructInfo(tuple(sinfos)))
        grad_var = Var("gradients", TupleStructInfo(tuple(sinfos)))
        state_var = Var("optim_states", state_sinfo)
        bb = BlockBuilder()
        with bb.function(self.name, [param_var, grad_var, state_var]):
            with bb.dataflow():
                new_params, new_state = self._tvm_update(bb, param_var, grad_var, state_var)
                params_new = bb.emit_output(Tuple(tuple(new_params)), "params_new")
                states_new = bb.emit_output(Tuple(tuple(new_state)), "optim_states_new")
            bb.emit_func_output(Tuple((params_new, states_new)))
        func = bb.get()[self.name]
        return (
            func
            if "global_symbol" in (func.attrs or {})
            else func.with_attr("global_symbol", self.name)
        )

    def compile(self, target: str = "llvm") -> InPlaceUpdate:
        """The in-place update step of the flat form (see `InPlaceUpdate`)."""
        return InPlaceUpdate(self, target)

    # ----------------------------------------------------------------- TVM-form helpers
    def _c(self, v: float) -> Expr:
        return const(v, self.dtype)

    def _step(self, bb: BlockBuilder, state: Var) -> Var:
        steps = bb.emit(TupleGetItem(state, 0), "num_steps")
        return bb.emit(R.add(steps, const(1, "int64")), "num_steps_new")

    def _unpack(self, bb: BlockBuilder, params: Var, grads: Var, i: int) -> tuple[str, Var, Var]:
        name = self.param_list[i].name_hint
        p = bb.emit(TupleGetItem(params, i), name)
        g = bb.emit(TupleGetItem(grads, i), name + "_grad")
        return name, p, g

    def _decayed(self, bb: BlockBuilder, name: str, p: Var, g: Var, weight_decay: float) -> Var:
        if not weight_decay:
            return g
        return bb.emit(R.add(bb.emit(R.multiply(self._c(weight_decay), p)), g), name + "_grad_new")


def _c(x: Any, v: float) -> Any:
    return const(v, str(x.struct_info.dtype))


class SGD(Optimizer):
    """p' = p - lr * (g + weight_decay * p); TVM-form state: (num_steps,)."""

    name = "SGD"

    def __init__(self, lr: float, weight_decay: float = 0.0) -> None:
        super().__init__(lr)
        self.weight_decay = float(weight_decay)

    def _update(self, bb, params, grads, state):
        out = []
        for p, g in zip(params, grads):
            if self.weight_decay:
                g = R.add(g, R.multiply(p, _c(p, self.weight_decay)))
            out.append(bb.emit(R.subtract(p, R.multiply(g, _c(p, self.lr)))))
        return out, []

    def _tvm_update(self, bb, params, grads, state):
        new_state = [self._step(bb, state)]
        new_params = []
        for i in range(len(self.param_list)):
            name, p, g = self._unpack(bb, params, grads, i)
            g = self._decayed(bb, name, p, g, self.weight_decay)
            step = bb.emit(R.multiply(self._c(self.lr), g))
            new_params.append(bb.emit(R.subtract(p, step), name + "_new"))
        return new_params, new_state


class MomentumSGD(Optimizer):
    """g += weight_decay * p; v' = momentum * v + (1 - dampening) * g; p' = p - lr * v'
    (Nesterov: p' = p - lr * (g + momentum * v')), PyTorch's and TVM's form.
    TVM-form state: (num_steps, v_1..v_n); flat form: (v_1..v_n)."""

    name = "MomentumSGD"

    def __init__(
        self,
        lr: float,
        momentum: float = 0.9,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        super().__init__(lr)
        self.momentum, self.weight_decay = float(momentum), float(weight_decay)
        self.dampening, self.nesterov = float(dampening), bool(nesterov)

    def _state_specs(self):
        return list(self._require_init())

    def _update(self, bb, params, grads, state):
        new_p, new_v = [], []
        for p, g, v in zip(params, grads, state):
            if self.weight_decay:
                g = R.add(g, R.multiply(p, _c(p, self.weight_decay)))
            damped = R.multiply(g, _c(g, 1.0 - self.dampening)) if self.dampening else g
            v2 = bb.emit(R.add(R.multiply(v, _c(v, self.momentum)), damped))
            new_v.append(v2)
            d = R.add(g, R.multiply(v2, _c(v, self.momentum))) if self.nesterov else v2
            new_p.append(bb.emit(R.subtract(p, R.multiply(d, _c(p, self.lr)))))
        return new_p, new_v

    def _tvm_state(self):
        return [np.zeros((), "int64")] + [
            np.zeros(_shape(p.struct_info), self.dtype) for p in self.param_list
        ]

    def _tvm_update(self, bb, params, grads, state):
        new_state = [self._step(bb, state)]
        new_params = []
        for i in range(len(self.param_list)):
            name, p, g = self._unpack(bb, params, grads, i)
            v = bb.emit(TupleGetItem(state, i + 1), name + "_v")
            g = self._decayed(bb, name, p, g, self.weight_decay)
            decayed_v = bb.emit(R.multiply(self._c(self.momentum), v))
            damped = bb.emit(R.multiply(self._c(_one_minus(self.dampening)), g)) if self.dampening else g
            v_new = bb.emit(R.add(decayed_v, damped), name + "_v_new")
            direction = v_new
            if self.nesterov:
                ahead = bb.emit(R.multiply(self._c(self.momentum), v_new))
                direction = bb.emit(R.add(g, ahead), name + "_g_nest")
            step = bb.emit(R.multiply(self._c(self.lr), direction))
            new_params.append(bb.emit(R.subtract(p, step), name + "_new"))
            new_state.append(v_new)
        return new_params, new_state


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction and L2 weight decay (g += weight_decay * p).
    `Adam(lr, betas=(0.9, 0.999), eps, weight_decay)` (TVM's signature); `beta1=`/`beta2=`
    keywords (and a float second argument) are minitvm's older spelling.
    TVM-form state: (num_steps, beta1**t, beta2**t, m_1..m_n, v_1..v_n); flat: (t, m.., v..)."""

    name = "Adam"

    def __init__(
        self,
        lr: float = 1e-3,
        betas: Sequence[float] | float = (0.9, 0.999),
        eps: float | None = None,
        weight_decay: float | None = None,
        *older: float,
        beta1: float | None = None,
        beta2: float | None = None,
    ) -> None:
        super().__init__(lr)
        if isinstance(betas, int | float):  # the older layout (lr, beta1, beta2, eps, weight_decay)
            b2, eps, weight_decay = ([eps, weight_decay, *older] + [None] * 3)[:3]
            b1, b2 = betas, 0.999 if b2 is None else b2
        elif older:
            raise OptimizerError(
                f"Adam: too many arguments {older}; use Adam(lr, betas, eps, weight_decay)"
            )
        else:
            b1, b2 = tuple(betas)
        self.beta1 = float(beta1 if beta1 is not None else b1)
        self.beta2 = float(beta2 if beta2 is not None else b2)
        self.eps = 1e-8 if eps is None else float(eps)
        self.weight_decay = 0.0 if weight_decay is None else float(weight_decay)

    def _state_specs(self):
        sinfos = self._require_init()
        return [TensorStructInfo((), sinfos[0].dtype)] + list(sinfos) + list(sinfos)

    def _update(self, bb, params, grads, state):
        n = len(params)
        t, ms, vs = state[0], state[1 : n + 1], state[n + 1 :]
        t2 = bb.emit(R.add(t, _c(t, 1.0)))
        corr1 = bb.emit(R.subtract(_c(t, 1.0), R.power(_c(t, self.beta1), t2)))
        corr2 = bb.emit(R.subtract(_c(t, 1.0), R.power(_c(t, self.beta2), t2)))
        new_p, new_m, new_v = [], [], []
        for p, g, m, v in zip(params, grads, ms, vs):
            if self.weight_decay:
                g = R.add(g, R.multiply(p, _c(p, self.weight_decay)))
            m2 = bb.emit(
                R.add(R.multiply(m, _c(m, self.beta1)), R.multiply(g, _c(g, 1 - self.beta1)))
            )
            v2 = bb.emit(
                R.add(
                    R.multiply(v, _c(v, self.beta2)),
                    R.multiply(R.multiply(g, g), _c(g, 1 - self.beta2)),
                )
            )
            mhat = R.divide(m2, corr1)
            vhat = R.divide(v2, corr2)
            step = R.divide(R.multiply(mhat, _c(p, self.lr)), R.add(R.sqrt(vhat), _c(p, self.eps)))
            new_p.append(bb.emit(R.subtract(p, step)))
            new_m.append(m2)
            new_v.append(v2)
        return new_p, [t2] + new_m + new_v

    def _tvm_state(self):
        zeros = [np.zeros(_shape(p.struct_info), self.dtype) for p in self.param_list]
        one = np.ones((), self.dtype)
        return [np.zeros((), "int64"), one, one.copy(), *zeros, *[z.copy() for z in zeros]]

    def _tvm_update(self, bb, params, grads, state):
        n = len(self.param_list)
        new_state: list = [None] * (3 + 2 * n)
        new_state[0] = self._step(bb, state)
        b1 = bb.emit(R.multiply(bb.emit(TupleGetItem(state, 1)), self._c(self.beta1)), "beta1_prod")
        b2 = bb.emit(R.multiply(bb.emit(TupleGetItem(state, 2)), self._c(self.beta2)), "beta2_prod")
        new_state[1], new_state[2] = b1, b2
        new_params = []
        for i in range(n):
            name, p, g = self._unpack(bb, params, grads, i)
            m = bb.emit(TupleGetItem(state, 3 + i), name + "_m")
            v = bb.emit(TupleGetItem(state, 3 + n + i), name + "_v")
            g = self._decayed(bb, name, p, g, self.weight_decay)
            m1 = bb.emit(R.multiply(self._c(self.beta1), m))
            m2 = bb.emit(R.multiply(self._c(_one_minus(self.beta1)), g))
            m_new = bb.emit(R.add(m1, m2), name + "_m_new")
            v1 = bb.emit(R.multiply(self._c(self.beta2), v))
            gg = bb.emit(R.multiply(g, g))
            v2 = bb.emit(R.multiply(self._c(_one_minus(self.beta2)), gg))
            v_new = bb.emit(R.add(v1, v2), name + "_v_new")
            m_hat = bb.emit(R.divide(m_new, bb.emit(R.subtract(self._c(1.0), b1))), name + "_m_hat")
            v_hat = bb.emit(R.divide(v_new, bb.emit(R.subtract(self._c(1.0), b2))), name + "_v_hat")
            denom = bb.emit(R.add(bb.emit(R.sqrt(v_hat)), self._c(self.eps)))
            step = bb.emit(R.multiply(self._c(self.lr), bb.emit(R.divide(m_hat, denom))))
            new_params.append(bb.emit(R.subtract(p, step), name + "_new"))
            new_state[3 + i], new_state[3 + n + i] = m_new, v_new
        return new_params, new_state


__all__ = ["SGD", "Adam", "InPlaceUpdate", "MomentumSGD", "Optimizer", "OptimizerError"]
