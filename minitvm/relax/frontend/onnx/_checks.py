"""Checks of the graph and the caller's arguments that from_onnx makes before converting.

A model file is untrusted data: each rule here turns something a converter would trip over
(a foreign exception, or a silently wrong program) into a FrontendError naming the part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ....error import FrontendError


def check_ssa(graph: Any) -> None:
    """Every value has one producer: a graph input, an initializer or one node output."""
    from .onnx_frontend import node_label

    producer: dict[str, str] = {}
    for info in graph.input:
        if info.name in producer:
            raise FrontendError(f"from_onnx: graph input {info.name!r} is declared twice")
        producer[info.name] = "a graph input"
    initializers: set[str] = set()
    for tensor in graph.initializer:
        if tensor.name in initializers:
            raise FrontendError(f"from_onnx: initializer {tensor.name!r} is defined twice")
        initializers.add(tensor.name)
        producer[tensor.name] = "an initializer"  # one that is also an input is its default
    for index, node in enumerate(graph.node):
        for name in node.output:
            if not name:
                continue
            if name in producer:
                raise FrontendError(
                    f"from_onnx: {node_label(node, index)} writes {name!r}, which is "
                    f"already {producer[name]}; an ONNX graph gives every value one producer "
                    "(rename one of them)"
                )
            producer[name] = f"the output of {node_label(node, index)}"


def checked_shape_dict(shape_dict: Any, graph_inputs: list) -> dict[str, tuple]:
    """shape_dict with each dim an int >= 0 or a str (a symbolic dim), of the model's rank."""
    if shape_dict is None:
        return {}
    if not isinstance(shape_dict, Mapping):
        raise FrontendError(
            f"from_onnx: shape_dict must map input names to shapes, got {type(shape_dict).__name__}"
        )
    from ._sequence import is_sequence_input

    declared = {i.name: i for i in graph_inputs}
    out = {}
    for name, shape in shape_dict.items():
        if is_sequence_input(declared[name]):
            out[name] = _sequence_shapes(name, shape)
            continue
        if isinstance(shape, str | bytes) or not hasattr(shape, "__iter__"):
            raise FrontendError(
                f"from_onnx: shape_dict[{name!r}] = {shape!r} is not a sequence of dims; give a "
                "tuple such as (1, 3, 224, 224)"
            )
        dims = tuple(shape)
        for d in dims:
            is_int = isinstance(d, int | np.integer) and not isinstance(d, bool | np.bool_)
            if not (isinstance(d, str) and d.isidentifier()) and not (is_int and d >= 0):
                raise FrontendError(
                    f"from_onnx: shape_dict[{name!r}] = {dims!r} has the dim {d!r}; each dim must "
                    "be an int >= 0, or a name (a str identifier) for a dynamic dim"
                )
        ttype = declared[name].type.tensor_type
        if ttype.HasField("shape") and len(ttype.shape.dim) != len(dims):
            raise FrontendError(
                f"from_onnx: shape_dict[{name!r}] = {dims!r} has rank {len(dims)}, the model "
                f"declares input {name!r} with rank {len(ttype.shape.dim)}"
            )
        out[name] = tuple(d if isinstance(d, str) else int(d) for d in dims)
    return out


def _checked_dims(name: str, dims: tuple) -> tuple:
    for d in dims:
        is_int = isinstance(d, int | np.integer) and not isinstance(d, bool | np.bool_)
        if not (isinstance(d, str) and d.isidentifier()) and not (is_int and d >= 0):
            raise FrontendError(
                f"from_onnx: shape_dict[{name!r}] has the dim {d!r}; each dim must be an int "
                ">= 0, or a name (a str identifier) for a dynamic dim"
            )
    return tuple(d if isinstance(d, str) else int(d) for d in dims)


def _sequence_shapes(name: str, shapes: Any) -> tuple:
    """shape_dict's entry for a sequence input: one shape per item (its length is fixed)."""
    if isinstance(shapes, str | bytes) or not hasattr(shapes, "__iter__"):
        shapes = None
    else:
        shapes = list(shapes)
    if shapes is None or any(
        isinstance(s, str | bytes) or not hasattr(s, "__iter__") for s in shapes
    ):
        raise FrontendError(
            f"from_onnx: shape_dict[{name!r}] must list one shape per item of the sequence "
            "input, e.g. [(2, 3), (4, 3)] (an empty list for an empty sequence)"
        )
    return tuple(_checked_dims(name, tuple(s)) for s in shapes)


def tensor_array(onnx: Any, tensor: Any, what: str | None = None) -> np.ndarray:
    """A TensorProto's value as a numpy array; never reads a file (external data is refused)."""
    from .onnx_frontend import onnx_dtype

    what = what or f"initializer {tensor.name!r}"
    if tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data):
        raise FrontendError(
            f"from_onnx: {what} keeps its data in an external file, which from_onnx does not "
            "read; load the model with minitvm.relax.frontend.onnx.load_model(path), which "
            "reads external data from the model's folder only"
        )
    if tensor.HasField("segment"):
        raise FrontendError(f"from_onnx: {what} is a segment of a tensor, which is unsupported")
    if any(d < 0 for d in tensor.dims):
        raise FrontendError(f"from_onnx: {what} has negative dims {list(tensor.dims)}")
    dtype = onnx_dtype(tensor.data_type)
    try:
        array = onnx.numpy_helper.to_array(tensor)
    except Exception as err:  # onnx raises what numpy raises for bytes that do not fit
        raise FrontendError(
            f"from_onnx: {what} ({dtype}, dims {list(tensor.dims)}) holds data that does not "
            f"match its dims and type ({type(err).__name__}: {err}); the file is damaged"
        ) from err
    return np.array(array, copy=True)


# INT attributes the ONNX spec defines as 0 or 1 (ONNX Runtime reads other values its own way,
# so a model carrying one would run with a meaning nobody wrote down)
FLAG_ATTRIBUTES = frozenset(
    {
        "align_corners", "allowzero", "ceil_mode", "center_point_box", "count_include_pad",
        "detect_negative", "detect_positive", "exclude_outside", "exclusive", "fmod",
        "keepdims", "largest", "noop_with_empty_axes", "reverse", "saturate",
        "select_last_index", "sorted", "training_mode", "transA", "transB", "upper",
    }
)  # fmt: skip


def check_attributes(node: Any, schema: Any, where: str) -> None:
    """Refuse attributes the op's schema does not define (onnx.checker refuses them too; the
    importer would otherwise ignore them) and 0/1 flags with any other value."""
    from ....error import OpAttributeInvalid

    defined = set(schema.attributes)
    unknown = sorted({a.name for a in node.attribute} - defined)
    if unknown:
        raise OpAttributeInvalid(
            f"{where}: attribute(s) {unknown} are not defined for {node.op_type} at opset "
            f"{schema.since_version}+ (it has {sorted(defined) or 'none'}); the model is "
            "malformed (onnx.checker refuses it too)"
        )
    for a in node.attribute:
        if a.name in FLAG_ATTRIBUTES and a.type == 2 and a.i not in (0, 1):  # 2: INT
            raise OpAttributeInvalid(
                f"{where}: attribute {a.name!r} is {a.i}; the ONNX spec allows 0 or 1"
            )
