"""Folding a node whose inputs are all known at import time, within bounds.

A model is untrusted: a 12-byte ConstantOfShape, Expand, Tile or Range can ask for gigabytes,
and onnx's reference evaluator (which folds most nodes) loops in Python for some ops. So the
output of every fold is measured before it is computed (ONNX shape inference on the node, its
small inputs given by value), and a node over the limits is left to run at run time, where the
converter emits relax ops for it. A later node that needs such a value at import time is
refused by `Context.known`, naming the node and the size.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....error import FrontendError
from . import _ops, _shape
from ._helpers import MAX_IMPORT_ENTRIES
from ._shape import SymTensor

FOLD_LIMIT = MAX_IMPORT_ENTRIES  # elements one folded node may produce (64 MiB of float32)
FOLD_BUDGET = 2**26  # elements all folded nodes of one import may produce together
SMALL = 2**12  # results this small fold even past the budget: shape arithmetic stays known
_BY_VALUE = 2**12  # inputs shape inference is given by value (shapes, repeats, pads are small)
_SHAPE_RULE_INPUTS = 2**10  # shape rules compute on Python objects: shape-sized tensors only
_EINSUM_WORK = 2**26  # index-space points the evaluator's einsum may visit

# ops whose reference implementation loops in Python per element: (most output elements, most
# input elements) folded; measured at 3 us (scatter/gather-nd) to 4 ms (GridSample) an element
_SLOW = (2**16, 2**18)
_VERY_SLOW = (2**8, 2**12)
_WORK_LIMITS = {
    **dict.fromkeys(("ScatterElements", "Scatter", "ScatterND", "GatherND"), _SLOW),
    **dict.fromkeys(
        (
            "Conv", "ConvInteger", "ConvTranspose", "QLinearConv", "DeformConv", "Col2Im",
            "MaxPool", "AveragePool", "LpPool", "MaxRoiPool", "RoiAlign", "GridSample",
            "AffineGrid", "Resize", "Upsample", "LSTM", "GRU", "RNN", "NonMaxSuppression",
            "MaxUnpool", "STFT", "LRN", "GlobalLpPool",
        ),
        _VERY_SLOW,
    ),
}  # fmt: skip
# ops whose output size follows their input values: folded only when inference sizes them
_SIZE_FROM_VALUES = frozenset(
    {
        "ConstantOfShape", "Expand", "Tile", "Range", "Resize", "Upsample", "Pad", "OneHot",
        "CenterCropPad", "Col2Im", "MaxUnpool", "MelWeightMatrix", "STFT", "DFT", "EyeLike",
        "BlackmanWindow", "HannWindow", "HammingWindow", "TfIdfVectorizer", "Multinomial",
    }
)  # fmt: skip


def fold(ctx: Any, node: Any, inputs: list, attrs: dict) -> list | None:
    """The node's outputs when all its inputs are known and the result is small enough to
    build at import; None leaves the node to its converter (run time)."""
    present = [v for v in inputs if v is not None]
    if not all(isinstance(v, np.ndarray | SymTensor) for v in present):
        return None
    sizes = [int(np.prod(v.shape, dtype=np.int64)) for v in present]
    rule = _shape.RULES.get(node.op_type)
    if rule is not None and _shape.applies(present) and sum(sizes) <= _SHAPE_RULE_INPUTS:
        outputs = rule(ctx, inputs, attrs)
        if outputs is not None:
            return outputs
    if any(isinstance(v, SymTensor) for v in present):
        return None
    why = _too_big(ctx, node, inputs, attrs, sizes)
    if why is not None:
        ctx.fold_refused = why
        return None
    outputs = reference_eval(ctx, node, inputs)
    ctx.folded_elements += sum(o.size for o in outputs)
    return outputs


def _too_big(ctx: Any, node: Any, inputs: list, attrs: dict, sizes: list[int]) -> str | None:
    """Why folding this node is refused (its size or work), or None to fold it."""
    out = estimate_elements(ctx, node, inputs)
    if out is None:
        if node.op_type in _SIZE_FROM_VALUES or sum(sizes) > SMALL:
            return "its output size could not be inferred before computing it"
        out = sum(sizes)
    if out > FOLD_LIMIT:
        return f"its output would have {out} elements (limit {FOLD_LIMIT} for one node)"
    if out > SMALL and ctx.folded_elements + out > FOLD_BUDGET:
        return (
            f"its output ({out} elements) would take the constants folded so far past "
            f"{FOLD_BUDGET} elements"
        )
    limits = _WORK_LIMITS.get(node.op_type)
    if limits is not None and (out > limits[0] or sum(sizes) > limits[1]):
        return (
            f"onnx's evaluator computes {node.op_type} element by element; it folds up to "
            f"{limits[0]} outputs from {limits[1]} inputs (this is {out} from {sum(sizes)})"
        )
    if node.op_type == "Einsum" and _einsum_work(attrs, inputs) > _EINSUM_WORK:
        return f"its einsum would visit more than {_EINSUM_WORK} index points"
    return None


def estimate_elements(ctx: Any, node: Any, inputs: list) -> int | None:
    """Elements of all the node's outputs by ONNX shape inference, before running it; a dim
    inference leaves open (NonZero's count) is bounded by the largest input; None when
    inference gives no shape or an op sized by its input values keeps an open dim."""
    from .onnx_frontend import _require_onnx

    if node.op_type == "Range":  # ONNX's inference leaves Range's length open for floats
        return _range_length(inputs)
    onnx = _require_onnx()
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    names = [n for n, v in zip(node.input, inputs) if n]
    values = [v for v in inputs if v is not None]
    by_value = [v.size <= _BY_VALUE for v in values]
    graph = helper.make_graph(
        [node],
        "estimate",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            for n, v, small in zip(names, values, by_value)
            if not small
        ],
        [
            helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None)
            for n in node.output
            if n
        ],
        initializer=[
            numpy_helper.from_array(v, n) for n, v, small in zip(names, values, by_value) if small
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ctx.opset)])
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, ValueError, TypeError, RuntimeError):
        return None  # the node's checker refused it: no estimate (the evaluator would fail too)
    open_dim = max([v.size for v in values] + [1])
    total = 0
    for out in inferred.graph.output:
        ttype = out.type.tensor_type
        if not out.type.HasField("tensor_type") or not ttype.HasField("shape"):
            return None
        dims = []
        for d in ttype.shape.dim:
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            elif node.op_type in _SIZE_FROM_VALUES:
                return None
            else:
                dims.append(open_dim)
        total += math.prod(dims)
    return total


def _range_length(inputs: list) -> int | None:
    """Range's output length, max(ceil((limit - start) / delta), 0), from its three scalar
    inputs; None when they are not three finite scalars with a nonzero delta."""
    if len(inputs) != 3 or any(v is None or v.size != 1 for v in inputs):
        return None
    start, limit, delta = (float(np.asarray(v).reshape(())) for v in inputs)
    if not all(math.isfinite(x) for x in (start, limit, delta)) or delta == 0:
        return None
    return max(math.ceil((limit - start) / delta), 0)


def _einsum_work(attrs: dict, inputs: list) -> int:
    """Points of the einsum's whole index space: the evaluator's loop visits each once."""
    equation = str(attrs.get("equation", "")).replace(" ", "").split("->")[0]
    sizes: dict[str, int] = {}
    for term, value in zip(equation.split(","), inputs):
        letters = [c for c in term if c.isalpha()]
        if value is None or "..." in term or len(letters) != value.ndim:
            return math.prod(max(v.size, 1) for v in inputs if v is not None)
        for c, n in zip(letters, value.shape):
            sizes[c] = max(sizes.get(c, 1), int(n))
    return math.prod(sizes.values())


def reference_eval(ctx: Any, node: Any, inputs: list) -> list:
    """Run one node with onnx's reference evaluator on known inputs."""
    from .onnx_frontend import _require_onnx

    onnx = _require_onnx()
    from onnx.reference import ReferenceEvaluator

    helper = onnx.helper
    feeds = {name: value for name, value in zip(node.input, inputs) if name}
    graph = helper.make_graph(
        [node],
        "fold",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            for n, v in feeds.items()
        ],
        [
            helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None)
            for n in node.output
            if n
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ctx.opset)])
    try:
        outs = ReferenceEvaluator(model).run(None, feeds)
    except Exception as err:  # the evaluator raises anything; report it as a model error
        raise FrontendError(
            f"folding this node on its constant inputs failed ({type(err).__name__}: {err}); "
            "check the node's attributes and input shapes"
        ) from err
    return [np.asarray(o) for o in outs]


def never_folds(node: Any) -> bool:
    """Ops the importer always converts: control flow, randomness, sequences, other domains."""
    from .onnx_frontend import _DEFAULT_DOMAINS

    return node.op_type in _ops.NEVER_FOLD or node.domain not in _DEFAULT_DOMAINS
