"""`SetupTrainer(loss, optimizer, loss_args)`: a backbone module becomes a trainer module
(TVM's `relax.training.SetupTrainer`, an IRModule pass).

The input module has a function `backbone(inputs.., params.., states..)` (one dataflow block,
returning the prediction, then the updated states) and integer attributes `param_num` and
`state_num`. The output module adds

    backbone_loss(inputs.., params.., states.., targets..) -> loss (or (loss, states..))
    backbone_loss_adjoint(same) -> (backbone_loss's result, (grad of each param,))
    optimizer(params tuple, grads tuple, optimizer state tuple) -> (params', state')

and the attributes `input_num` and `optim_state` (the optimizer's initial state); with
`legalize=True` (the default) the ops are lowered by LegalizeOps, ready for `relax.build`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ir.module import IRModule
from ...ir.transform import module_pass
from ..expr import Function, Tuple
from .loss import Loss
from .optimizer import Optimizer
from .utils import TrainingSetupError, append_loss


def _int_attr(mod: IRModule, key: str) -> int:
    value = (mod.attrs or {}).get(key)
    if isinstance(value, bool) or not (isinstance(value, int) or hasattr(value, "value")):
        raise TrainingSetupError(
            f"SetupTrainer: the backbone module needs an integer attribute {key!r}, e.g. "
            f'I.module_attrs({{"param_num": 1, "state_num": 0}})'
        )
    return int(getattr(value, "value", value))


@module_pass(opt_level=0, name="SetupTrainer")
class SetupTrainer:
    """Transform a backbone module into a trainer module (see the module docstring)."""

    BACKBONE_FUNC: str = "backbone"
    BACKBONE_LOSS_FUNC: str = "backbone_loss"
    ADJOINT_FUNC: str = "backbone_loss_adjoint"
    OPTIMIZER_FUNC: str = "optimizer"
    PARAM_NUM_ATTR_KEY: str = "param_num"
    STATE_NUM_ATTR_KEY: str = "state_num"

    def __init__(
        self, loss: Loss, optimizer: Optimizer, loss_args: Sequence[Any], legalize: bool = True
    ) -> None:
        self._loss, self._optimizer = loss, optimizer
        self._loss_args, self._legalize = list(loss_args), legalize

    def _check_well_formed(self, mod: IRModule) -> tuple[int, int]:
        if self.BACKBONE_FUNC not in mod or not isinstance(mod[self.BACKBONE_FUNC], Function):
            raise TrainingSetupError(
                f"SetupTrainer: the module has no relax function named {self.BACKBONE_FUNC!r}"
            )
        func = mod[self.BACKBONE_FUNC]
        nparam = _int_attr(mod, self.PARAM_NUM_ATTR_KEY)
        nstate = _int_attr(mod, self.STATE_NUM_ATTR_KEY)
        if nparam < 0 or nstate < 0 or len(func.params) < nparam + nstate:
            raise TrainingSetupError(
                f"SetupTrainer: backbone has {len(func.params)} parameters, fewer than "
                f"param_num ({nparam}) + state_num ({nstate})"
            )
        if nstate > 0:
            out = getattr(func.body, "body", None)
            if not isinstance(out, Tuple) or len(out.fields) <= nstate:
                raise TrainingSetupError(
                    f"SetupTrainer: with state_num={nstate} the backbone must return a tuple of "
                    "the prediction(s) followed by the updated states"
                )
        return nparam, nstate

    def transform_module(self, mod: IRModule, ctx: Any = None) -> IRModule:
        """Transform the backbone module into a trainer module."""
        from ..transform import DecomposeOpsForInference, Gradient, LegalizeOps

        nparam, nstate = self._check_well_formed(mod)
        loss_func = self._loss(*self._loss_args)
        mod = append_loss(
            mod,
            self.BACKBONE_FUNC,
            loss_func,
            self._loss.num_backbone_outputs,
            self.BACKBONE_LOSS_FUNC,
        )
        mod = DecomposeOpsForInference(self.BACKBONE_FUNC)(mod)
        ninput = len(mod[self.BACKBONE_FUNC].params) - nparam - nstate
        params = list(mod[self.BACKBONE_LOSS_FUNC].params[ninput : ninput + nparam])
        mod = Gradient(self.BACKBONE_LOSS_FUNC, require_grads=params, target_index=0)(mod)
        self._optimizer.init(params)
        mod[self.OPTIMIZER_FUNC] = self._optimizer.get_function().with_attr(
            "global_symbol", self.OPTIMIZER_FUNC
        )
        mod = mod.with_attr("input_num", ninput).with_attr("optim_state", self._optimizer.state)
        if self._legalize:
            mod = LegalizeOps()(mod)
        return mod


__all__ = ["SetupTrainer"]
