"""Dataflow blocks for a function imported without them (it holds a run-time If).

relax keeps control flow out of dataflow blocks, and FuseOps fuses inside dataflow blocks only;
so each maximal run of bindings between two Ifs (in the function body and in every branch)
becomes a DataflowBlock, and a variable of the run that nothing after the run uses becomes a
DataflowVar. What the If, later runs or the result read stays a Var.
"""

from __future__ import annotations

from ...expr import BindingBlock, DataflowBlock, DataflowVar, Function, If, SeqExpr, Var
from ...functor import ExprMutator, used_vars


def with_dataflow_blocks(func: Function) -> Function:
    """`func` with its If-free runs of bindings grouped into dataflow blocks."""
    return func.replace(body=_regroup(func.body))


def _regroup(seq: SeqExpr) -> SeqExpr:
    runs: list[tuple[bool, list]] = []  # (is a dataflow run, its bindings)
    for block in seq.blocks:
        for b in block.bindings:
            if isinstance(b.value, If):
                branches = (_regroup(b.value.true_branch), _regroup(b.value.false_branch))
                value = b.value.replace(true_branch=branches[0], false_branch=branches[1])
                runs.append((False, [b.replace(value=value)]))
            elif runs and runs[-1][0]:
                runs[-1][1].append(b)
            else:
                runs.append((True, [b]))
    later: set[Var] = set(used_vars(seq.body))
    rename = ExprMutator()
    for is_run, bindings in reversed(runs):
        if is_run:
            for b in bindings:
                if b.var not in later:
                    rename.var_map[b.var] = DataflowVar(b.var.name_hint, b.var.struct_info)
        for b in bindings:
            later |= used_vars(b.value)
    blocks = []
    for is_run, bindings in runs:
        new = tuple(
            b.replace(var=rename.var_map.get(b.var, b.var), value=rename.visit_expr(b.value))
            for b in bindings
        )
        blocks.append(DataflowBlock(new) if is_run else BindingBlock(new))
    return SeqExpr(tuple(blocks), seq.body)
