"""Reading an ONNX file and importing it with `relax.frontend.onnx.from_onnx`, with errors that
name the file and say what to do."""

from __future__ import annotations

from typing import Any

from ..error import MiniTVMError
from ._common import UsageError, existing_file, shape_text

# Why a torch.export file is refused rather than loaded: torch.export.load unpickles parts of
# the archive (its own docstring: never load one from an untrusted source), and a command that
# reads files given on the command line must not run code from them.
PT2_REFUSED = (
    "{path}: torch.export (.pt2) files are read with pickle, which can run code from the file, "
    "so `minitvm` does not load them; export the model to ONNX (torch.onnx.export) or import "
    "it in Python with relax.frontend.torch.from_exported_program"
)


def import_onnx_module(what: str) -> Any:
    """The `onnx` package, or a clear error saying how to install it."""
    try:
        import onnx
    except ImportError as err:
        raise UsageError(f"{what} needs the onnx package; `pip install minitvm[onnx]`") from err
    return onnx


def load_model(path: str) -> Any:
    """The checked `onnx.ModelProto` in `path`."""
    if path.endswith(".pt2"):
        raise UsageError(PT2_REFUSED.format(path=f"'{path}'"))
    existing_file(path, "model")
    import_onnx_module(f"reading '{path}'")
    from ..relax.frontend.onnx import load_model as load_onnx

    # protobuf parses the untrusted bytes; onnx's C++ checker runs in a child process, where a
    # crash on a damaged file becomes this error instead of killing the command
    try:
        model = load_onnx(path, check=True)
    except MiniTVMError as err:
        text = str(err).strip()
        first = text.splitlines()[0] if text else type(err).__name__
        raise MiniTVMError(
            f"'{path}' is not a valid ONNX model ({first}); re-export it, or check it with "
            "onnx.checker.check_model"
        ) from err
    if not model.graph.node:
        raise MiniTVMError(f"'{path}' is not a valid ONNX model (its graph has no nodes)")
    return model


def graph_inputs(model: Any) -> dict[str, tuple[int | str, ...]]:
    """The model's real inputs (initializers excluded) -> declared shape (str for named or
    unknown dims)."""
    weights = {t.name for t in model.graph.initializer}
    out = {}
    for inp in model.graph.input:
        if inp.name in weights:
            continue
        dims = inp.type.tensor_type.shape.dim
        out[inp.name] = tuple(
            d.dim_value if d.HasField("dim_value") else d.dim_param or "?" for d in dims
        )
    return out


def check_shapes(path: str, declared: dict, shapes: dict[str, tuple[int, ...]]) -> None:
    """Every --input-shapes name is an input of the model, of its rank and static dims; the
    first (batch) dim may be given another size, as with tvmc and onnxruntime users' models
    exported at batch 1."""
    for name, shape in shapes.items():
        if name not in declared:
            raise UsageError(
                f"--input-shapes: '{path}' has no input '{name}'; its inputs are "
                f"{_describe(declared)}"
            )
        want = declared[name]
        bad = len(want) != len(shape) or any(
            type(w) is int and w > 0 and w != s for w, s in list(zip(want, shape))[1:]
        )
        if want and bad:
            raise UsageError(
                f"--input-shapes: input '{name}' of '{path}' has shape {shape_text(want)}, "
                f"given {shape_text(shape)}; give {len(want)} dims matching its fixed ones "
                "(only the first, the batch, may differ)"
            )


def import_model(
    path: str, model: Any, shapes: dict[str, tuple[int, ...]], keep_params: bool = False
) -> Any:
    """The relax IRModule of `model`: weights bound as constants, or with `keep_params` as
    parameters after the inputs, their values in main's attr "params" (TVM's convention)."""
    try:
        from ..relax.frontend.onnx import from_onnx
    except ImportError as err:
        raise MiniTVMError(
            f"importing '{path}': this minitvm has no ONNX importer ({err})"
        ) from err
    try:
        return from_onnx(model, shape_dict=shapes or None, keep_params_in_input=keep_params)
    except MiniTVMError as err:
        raise MiniTVMError(f"importing '{path}': {err}") from err


def graph_outputs(model: Any) -> list[str]:
    """The names of the model's outputs, in order."""
    return [out.name for out in model.graph.output]


def _describe(declared: dict) -> str:
    return ", ".join(f"'{n}' {shape_text(s)}" for n, s in declared.items()) or "(none)"
