"""`AppendLoss`: a backbone function followed by a loss function, as one new function
(TVM's `relax.training.utils.AppendLoss`).

    backbone(inputs.., params.., states..) -> (pred_1..pred_k, rest..)     one DataflowBlock
    loss(pred_1..pred_k, targets..) -> scalar                            one DataflowBlock
    =>  backbone_loss(inputs.., params.., states.., targets..) -> loss   (or (loss, rest..))

The first `num_backbone_outputs` results of the backbone feed the loss's first parameters
(their struct infos must agree); the loss's other parameters are appended to the backbone's.
"""

from __future__ import annotations

from ...error import TVMError
from ...ir.module import IRModule
from ...ir.structural import structural_equal
from ...ir.transform import Pass
from ..block_builder import BlockBuilder
from ..expr import DataflowBlock, Function, MatchCast, SeqExpr, Tuple, Var
from ..functor import substitute_vars
from ..op.call_tir_grad import register_te_gradient
from ..struct_info import TensorStructInfo


class TrainingSetupError(TVMError, ValueError):
    """A backbone or loss function that AppendLoss / SetupTrainer cannot combine."""


def _one_block(func: Function, what: str) -> DataflowBlock:
    body = func.body
    if (
        not isinstance(body, SeqExpr)
        or len(body.blocks) != 1
        or not isinstance(body.blocks[0], DataflowBlock)
    ):
        raise TrainingSetupError(
            f"AppendLoss: the {what} function must hold exactly one dataflow block (R.dataflow()) "
            "and return from it"
        )
    for b in body.blocks[0].bindings:
        if isinstance(b, MatchCast):
            raise TrainingSetupError(
                f"AppendLoss: the {what} function has a match_cast (to '{b.var.name_hint}'); "
                "use static or parameter-defined shapes"
            )
    return body.blocks[0]


def _outputs(func: Function) -> list[Var]:
    out = func.body.body
    fields = list(out.fields) if isinstance(out, Tuple) else [out]
    if not all(isinstance(f, Var) for f in fields):
        raise TrainingSetupError(
            "AppendLoss: the backbone must return a variable or a flat tuple of variables, got "
            f"{out!r}"
        )
    return fields


def append_loss(
    mod: IRModule,
    func_name: str,
    loss_function: Function,
    num_backbone_outputs: int = 1,
    new_func_name: str | None = None,
) -> IRModule:
    """The module with `new_func_name` (default `func_name + "_loss"`) added (see the module doc)."""
    if func_name not in mod:
        raise TrainingSetupError(f"AppendLoss: the module has no function {func_name!r}")
    backbone = mod[func_name]
    block = _one_block(backbone, "backbone")
    loss_block = _one_block(loss_function, "loss")
    outs = _outputs(backbone)
    k = int(num_backbone_outputs)
    if not 0 < k <= len(outs) or k > len(loss_function.params):
        raise TrainingSetupError(
            f"AppendLoss: num_backbone_outputs={k}, but the backbone returns {len(outs)} values "
            f"and the loss takes {len(loss_function.params)} parameters"
        )
    for i, (o, p) in enumerate(zip(outs[:k], loss_function.params[:k])):
        if not structural_equal(o.struct_info, p.struct_info):
            raise TrainingSetupError(
                f"AppendLoss: backbone output {i} is {o.struct_info}, but loss parameter "
                f"'{p.name_hint}' is {p.struct_info}; they must agree"
            )
    loss_out = loss_function.body.body
    sinfo = loss_out.struct_info
    if not isinstance(loss_out, Var) or not isinstance(sinfo, TensorStructInfo) or sinfo.ndim != 0:
        raise TrainingSetupError(
            f"AppendLoss: the loss must return a scalar (shape ()) variable, got {sinfo}; reduce "
            "it with R.sum or R.mean"
        )
    rest = outs[k:]
    # Fresh parameters: a Var may be defined in one function of a module only (well_formed).
    params = [Var(p.name_hint, p.struct_info) for p in backbone.params]
    extra = [Var(p.name_hint, p.struct_info) for p in loss_function.params[k:]]
    bb = BlockBuilder(mod)
    name = new_func_name or f"{func_name}_loss"
    with bb.function(name, [*params, *extra]):
        with bb.dataflow():
            vmap: dict = dict(zip(backbone.params, params))
            for b in block.bindings:
                emit = bb.emit_output if any(b.var is r for r in rest) else bb.emit
                vmap[b.var] = emit(substitute_vars(b.value, vmap), b.var.name_hint)
            lmap: dict = {p: vmap.get(o, o) for p, o in zip(loss_function.params, outs[:k])}
            lmap.update(zip(loss_function.params[k:], extra))
            for b in loss_block.bindings:
                emit = bb.emit_output if b.var is loss_out else bb.emit
                lmap[b.var] = emit(substitute_vars(b.value, lmap), b.var.name_hint)
        result = [lmap[loss_out]] + [vmap.get(r, r) for r in rest]
        bb.emit_func_output(Tuple(tuple(result)) if rest else result[0])
    return bb.get()


def AppendLoss(
    func_name: str,
    loss_function: Function,
    num_backbone_outputs: int = 1,
    new_func_name: str | None = None,
) -> Pass:
    """Pass: append `loss_function` to the backbone `func_name` (see `append_loss`)."""
    return Pass(
        lambda mod: append_loss(mod, func_name, loss_function, num_backbone_outputs, new_func_name),
        "AppendLoss",
    )


__all__ = ["AppendLoss", "TrainingSetupError", "append_loss", "register_te_gradient"]
