"""`Trainer`: runs a SetupTrainer module on the VM and keeps parameters, model states and the
optimizer state (TVM's `relax.training.Trainer`), plus checkpoints (`save_checkpoint` /
`load_checkpoint`: .npz or .safetensors, never pickle).

    train_mod = SetupTrainer(MSELoss(reduction="sum"), SGD(0.001), [pred_sinfo, target_sinfo])(mod)
    vm = relax.VirtualMachine(relax.build(train_mod, "llvm"), tvm.cpu())
    trainer = Trainer(train_mod, vm, tvm.cpu())
    trainer.xaiver_uniform_init_params()
    loss = trainer.update([x], [y])
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...error import TVMError
from ...ir.module import IRModule
from ...runtime import NDArray, nd
from .checkpoint import CheckpointError, check_arrays_match, load_checkpoint, save_checkpoint

CHECKPOINT_KIND = "minitvm-relax-trainer"


class TrainerError(TVMError, ValueError):
    """Wrong inputs, parameters or states given to a Trainer."""


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, list | tuple) else [x]


class Trainer:
    """Runs `backbone` (predict), `backbone_loss_adjoint` + `optimizer` (update) of a trainer
    module built by SetupTrainer; `zero_init_param_state` zero-fills parameters and states."""

    BACKBONE_FUNC: str = "backbone"
    BACKBONE_LOSS_FUNC: str = "backbone_loss"
    ADJOINT_FUNC: str = "backbone_loss_adjoint"
    OPTIMIZER_FUNC: str = "optimizer"

    def __init__(
        self, train_mod: IRModule, vm: Any, device: Any, zero_init_param_state: bool = True
    ) -> None:
        attrs = train_mod.attrs or {}
        missing = [
            k for k in ("optim_state", "input_num", "param_num", "state_num") if k not in attrs
        ]
        if missing or self.ADJOINT_FUNC not in train_mod:
            raise TrainerError(
                f"Trainer: the module lacks {missing or [self.ADJOINT_FUNC]}; pass the result of "
                "relax.training.SetupTrainer(...)(backbone_module)"
            )
        self.mod = train_mod
        self.vm, self.device = vm, device
        self._optim_state = [nd.array(d.numpy(), device) for d in attrs["optim_state"]]
        self._input_num = int(attrs["input_num"])
        self._param_num = int(attrs["param_num"])
        self._state_num = int(attrs["state_num"])
        params = train_mod[self.ADJOINT_FUNC].params
        k = self._input_num
        self._param_vars = list(params[k : k + self._param_num])
        self._state_vars = list(params[k + self._param_num : k + self._param_num + self._state_num])
        self._params: list[NDArray | None] = [None] * self._param_num
        self._states: list[NDArray | None] = [None] * self._state_num
        self._param_name_to_pos = {p.name_hint: i for i, p in enumerate(self._param_vars)}
        self._state_name_to_pos = {s.name_hint: i for i, s in enumerate(self._state_vars)}
        if zero_init_param_state:
            self.zero_init_params()
            self.zero_init_states()

    # ----------------------------------------------------------------- values
    @staticmethod
    def _get_shape_list(var: Any) -> list[int]:
        shape = var.struct_info.shape
        if shape is None or not all(isinstance(d, int) or hasattr(d, "value") for d in shape):
            raise TrainerError(f"Trainer: '{var.name_hint}' has no static shape; load its value")
        return [int(d) for d in shape]

    def _array(self, value: Any) -> NDArray:
        return nd.array(
            value.numpy() if isinstance(value, NDArray) else np.asarray(value), self.device
        )

    def xaiver_uniform_init_params(self) -> None:
        """Glorot/Xavier-uniform parameters: U(-a, a), a = sqrt(6 / sum(shape)) (TVM's rule)."""
        self._params = []
        for p in self._param_vars:
            shape = self._get_shape_list(p)
            bound = np.sqrt(6.0 / np.sum(shape))
            values = bound * np.random.uniform(-1.0, 1.0, shape)
            self._params.append(nd.array(values.astype(str(p.struct_info.dtype)), self.device))

    def zero_init_params(self) -> None:
        """All parameters zero (static shapes needed)."""
        self._params = [
            nd.array(np.zeros(self._get_shape_list(p), str(p.struct_info.dtype)), self.device)
            for p in self._param_vars
        ]

    def zero_init_states(self) -> None:
        """All model states zero (static shapes needed)."""
        self._states = [
            nd.array(np.zeros(self._get_shape_list(s), str(s.struct_info.dtype)), self.device)
            for s in self._state_vars
        ]

    def _load(self, values: Any, current: list, names: dict, vars_: list, what: str) -> list:
        if isinstance(values, list | tuple):
            if len(values) != len(current):
                raise TrainerError(
                    f"Trainer: {len(values)} {what}s given, the model has {len(current)}"
                )
            pairs = list(enumerate(values))
        elif isinstance(values, Mapping):
            unknown = [k for k in values if k not in names]
            if unknown:
                raise TrainerError(
                    f"Trainer: no {what} named {unknown}; the model's are {list(names)}"
                )
            pairs = [(names[k], v) for k, v in values.items()]
        else:
            raise TrainerError(
                f"Trainer: {what}s must be a list or a dict, got {type(values).__name__}"
            )
        out = list(current)
        for i, v in pairs:
            arr = self._array(v)
            want = vars_[i].struct_info
            if want.shape is not None and tuple(arr.shape) != tuple(int(d) for d in want.shape):
                raise TrainerError(
                    f"Trainer: {what} '{vars_[i].name_hint}' needs shape "
                    f"{tuple(int(d) for d in want.shape)}, got {tuple(arr.shape)}"
                )
            out[i] = arr
        return out

    def load_params(self, params: Any) -> None:
        """Parameter values from a list (in order) or a dict (by the backbone's param names)."""
        self._params = self._load(
            params, self._params, self._param_name_to_pos, self._param_vars, "parameter"
        )

    def load_states(self, states: Any) -> None:
        """Model-state values from a list (in order) or a dict (by name)."""
        self._states = self._load(
            states, self._states, self._state_name_to_pos, self._state_vars, "state"
        )

    def export_params(self) -> dict[str, NDArray]:
        """{parameter name: NDArray}."""
        return {k: self._params[i] for k, i in self._param_name_to_pos.items()}

    def export_states(self) -> dict[str, NDArray]:
        """{model-state name: NDArray}."""
        return {k: self._states[i] for k, i in self._state_name_to_pos.items()}

    def _check_inited(self) -> None:
        for what, values in (("parameter", self._params), ("model state", self._states)):
            idx = next((i for i, v in enumerate(values) if v is None), -1)
            if idx != -1:
                raise TVMError(
                    f"Trainer: the {idx}-th {what} is not initialized before training or inference; "
                    "call load_params / zero_init_params / xaiver_uniform_init_params"
                )

    # ----------------------------------------------------------------- running
    def _inputs(self, input_instances: Any, targets: Any = None) -> list:
        self._check_inited()
        inputs = _as_list(input_instances)
        if len(inputs) != self._input_num:
            raise TrainerError(
                f"Trainer: {len(inputs)} inputs given, the backbone takes {self._input_num}"
            )
        tail = [] if targets is None else [self._array(t) for t in _as_list(targets)]
        return [self._array(i) for i in inputs] + list(self._params) + list(self._states) + tail

    def predict(self, *input_instances: Any) -> Any:
        """The backbone's prediction (states it returns are dropped)."""
        res = self.vm[self.BACKBONE_FUNC](*self._inputs(list(input_instances)))
        if self._state_num:
            res = res[: -self._state_num]
            if len(res) == 1:
                res = res[0]
        return res

    def update(self, input_instances: Any, targets: Any) -> NDArray:
        """One step: loss and gradients, then the optimizer; returns the loss."""
        ret, grads = self.vm[self.ADJOINT_FUNC](*self._inputs(input_instances, targets))
        if self._state_num:
            self._states = list(ret[1:])
            ret = ret[0]
        new_params, new_state = self.vm[self.OPTIMIZER_FUNC](
            tuple(self._params), tuple(grads), tuple(self._optim_state)
        )
        self._params, self._optim_state = list(new_params), list(new_state)
        return ret

    def profile_adjoint(self, input_instances: Any, targets: Any) -> Any:
        """The VM's per-kernel profile of one adjoint call (`VirtualMachine.profile`)."""
        return self.vm.profile(self.ADJOINT_FUNC, *self._inputs(input_instances, targets))

    # ----------------------------------------------------------------- checkpoints
    def _named_arrays(self) -> dict[str, Any]:
        arrays = {f"param.{k}": v for k, v in self.export_params().items()}
        arrays.update({f"state.{k}": v for k, v in self.export_states().items()})
        arrays.update({f"optim.{i}": v for i, v in enumerate(self._optim_state)})
        return arrays

    def save_checkpoint(self, path: str | os.PathLike) -> Path:
        """Parameters, model states and optimizer state to `path` (.npz, or .safetensors)."""
        self._check_inited()
        meta = {"kind": CHECKPOINT_KIND, "version": 1, "params": list(self._param_name_to_pos)}
        return save_checkpoint(path, self._named_arrays(), meta)

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore what `save_checkpoint` wrote (same model and optimizer), so training goes
        on exactly where it stopped."""
        arrays, meta = load_checkpoint(path)
        if meta.get("kind") != CHECKPOINT_KIND or meta.get("version") != 1:
            raise CheckpointError(f"checkpoint '{path}' was not written by relax.training.Trainer")
        expected: dict[str, Any] = {}
        for prefix, vars_ in (("param.", self._param_vars), ("state.", self._state_vars)):
            for v in vars_:
                expected[prefix + v.name_hint] = (self._get_shape_list(v), str(v.struct_info.dtype))
        expected.update({f"optim.{i}": v for i, v in enumerate(self._optim_state)})
        check_arrays_match(path, arrays, expected)
        self._params = [self._array(arrays["param." + v.name_hint]) for v in self._param_vars]
        self._states = [self._array(arrays["state." + v.name_hint]) for v in self._state_vars]
        self._optim_state = [
            self._array(arrays[f"optim.{i}"]) for i in range(len(self._optim_state))
        ]


__all__ = ["Trainer", "TrainerError"]
