"""The example NPU's fusion patterns, one table row per offloaded op (names as in TVM).

Rows are registered general first and fused last: `get_patterns_with_prefix` returns the latest
registered first, so `matmul + relu` is matched before a lone `matmul` or `relu` takes either.
"""

from __future__ import annotations

from .....ir.op import Op
from ....transform._dpl import is_op, wildcard
from ....transform.fuse_ops_by_pattern import FusionPattern, PatternCheckContext
from ...pattern_registry import register_patterns

# (pattern name, op chain from the input outwards, number of tensor inputs of the first op)
_ROWS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("example_npu.add", ("relax.add",), 2),
    ("example_npu.multiply", ("relax.multiply",), 2),
    ("example_npu.subtract", ("relax.subtract",), 2),
    ("example_npu.divide", ("relax.divide",), 2),
    ("example_npu.relu", ("relax.nn.relu",), 1),
    ("example_npu.sigmoid", ("relax.sigmoid",), 1),
    ("example_npu.tanh", ("relax.tanh",), 1),
    ("example_npu.gelu", ("relax.nn.gelu",), 1),
    ("example_npu.softmax", ("relax.nn.softmax",), 1),
    ("example_npu.batch_norm", ("relax.nn.batch_norm",), 5),
    ("example_npu.max_pool2d", ("relax.nn.max_pool2d",), 1),
    ("example_npu.avg_pool2d", ("relax.nn.avg_pool2d",), 1),
    ("example_npu.dense", ("relax.matmul",), 2),
    ("example_npu.matmul", ("relax.matmul",), 2),
    ("example_npu.conv1d", ("relax.nn.conv1d",), 2),
    ("example_npu.conv2d", ("relax.nn.conv2d",), 2),
    ("example_npu.depthwise_conv2d", ("relax.nn.conv2d",), 2),
    ("example_npu.matmul_relu_fused", ("relax.matmul", "relax.nn.relu"), 2),
    ("example_npu.conv2d_relu_fused", ("relax.nn.conv2d", "relax.nn.relu"), 2),
)


def _is_grouped(context: PatternCheckContext) -> bool:
    """Depthwise (grouped) convolutions only; plain ones stay with `example_npu.conv2d`."""
    return int(context.matched_expr.attrs.get("groups", 1)) > 1


def _accepts(context: PatternCheckContext) -> bool:
    """The emulated NPU takes every dtype and size the host can run."""
    return True


_CHECKS = {"example_npu.depthwise_conv2d": _is_grouped}


def _pattern(name: str, chain: tuple[str, ...], n_inputs: int) -> FusionPattern:
    inputs = [wildcard() for _ in range(n_inputs)]
    annotations = {"input": inputs[0]}
    if n_inputs > 1:
        annotations["weight"] = inputs[1]
    node = is_op(chain[0])(*inputs)
    for op in chain[1:]:
        annotations[chain[0].split(".")[-1]] = node
        node = is_op(op)(node)
    annotations["root"] = node
    return FusionPattern(name, node, annotations, _CHECKS.get(name, _accepts))


register_patterns(
    [_pattern(*row) for row in _ROWS if all(op in Op.list_op_names() for op in row[1])]
)
