"""`relay.frontend.from_onnx`: TVM's classic signature onto `relax.frontend.onnx.from_onnx`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...error import FrontendError
from ._common import split_params


def from_onnx(
    model: Any,
    shape: Mapping[str, Any] | None = None,
    dtype: str | Mapping[str, str] = "float32",
    opset: int | None = None,
    freeze_params: bool = True,
    convert_config: Mapping[str, Any] | None = None,
    export_node_renamed_model_path: str | None = None,
) -> tuple[Any, dict]:
    """Import an onnx.ModelProto: `mod, params = relay.frontend.from_onnx(model, shape_dict)`.

    `shape` fixes input shapes by input name (a str dim stays symbolic), `dtype` gives the
    inputs' dtype (one for all, or per name). With `freeze_params=True` (TVM's default) the
    initializers become constants and `params` is empty; with False they are inputs of main
    after the model's, named as in the model, and `params` maps those names to their values
    (`relay.build(mod, params=params)` binds them). Inputs keep the model's names, so
    `set_input` takes them as ONNX spells them.
    """
    from ...relax.frontend.onnx import from_onnx as relax_from_onnx

    if convert_config:
        raise FrontendError(
            f"relay.frontend.from_onnx: convert_config options {sorted(convert_config)} are not "
            "supported; leave convert_config unset"
        )
    if export_node_renamed_model_path is not None:
        raise FrontendError(
            "relay.frontend.from_onnx: export_node_renamed_model_path is not supported (nodes "
            "keep their names); leave it unset"
        )
    if not isinstance(freeze_params, bool):
        raise FrontendError(
            f"relay.frontend.from_onnx: freeze_params must be True or False, got {freeze_params!r}"
        )
    mod = relax_from_onnx(
        model,
        shape_dict=shape,
        dtype_dict=dtype,
        opset=opset,
        keep_params_in_input=not freeze_params,
        sanitize_input_names=False,
    )
    if freeze_params:
        return mod, {}
    initializers = {t.name for t in model.graph.initializer}
    n_inputs = sum(1 for i in model.graph.input if i.name not in initializers)
    return split_params(mod, n_inputs, "relay.frontend.from_onnx")
