"""`relay.frontend.from_pytorch`: a TorchScript module (`torch.jit.trace` / `torch.jit.script`)
imported through torch's own TorchScript-to-ExportedProgram converter and then
`relax.frontend.torch.from_exported_program`, so both share one converter table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...error import FrontendError
from ._common import rename_inputs, split_params


def _input_infos(input_infos: Any, default_dtype: str, where: str) -> list[tuple[str, tuple, str]]:
    """[(name, shape, dtype)] from TVM's forms: [(name, shape)], [(name, (shape, dtype))]."""
    if not isinstance(input_infos, Sequence) or isinstance(input_infos, str) or not input_infos:
        raise FrontendError(
            f"{where}: input_infos must be a list of (name, shape) or (name, (shape, dtype)), "
            f"got {input_infos!r:.80}"
        )
    out = []
    for i, info in enumerate(input_infos):
        if not (isinstance(info, Sequence) and len(info) == 2 and isinstance(info[0], str)):
            raise FrontendError(f"{where}: input_infos[{i}] = {info!r:.80} is not (name, shape)")
        name, spec = info
        dtype = default_dtype
        if (
            isinstance(spec, Sequence) and len(spec) == 2 and isinstance(spec[1], str)
            and isinstance(spec[0], Sequence)
        ):  # fmt: skip
            spec, dtype = spec
        try:
            shape = tuple(int(d) for d in spec)
        except (TypeError, ValueError):
            raise FrontendError(
                f"{where}: input '{name}' has shape {spec!r:.80}; give a list of ints "
                "(symbolic dims are not supported through TorchScript; use "
                "relax.frontend.torch.from_exported_program with torch.export.Dim)"
            ) from None
        if any(d < 0 for d in shape):
            raise FrontendError(f"{where}: input '{name}' has a negative dim in {shape}")
        out.append((name, shape, dtype))
    return out


def from_pytorch(
    script_module: Any,
    input_infos: Any,
    custom_convert_map: Mapping[str, Any] | None = None,
    default_dtype: str = "float32",
    use_parser_friendly_name: bool = False,
    keep_quantized_weight: bool = False,
    export_renamed_c_graph_path: str | None = None,
    preserve_pytorch_scopes: bool = False,
) -> tuple[Any, dict]:
    """Import a TorchScript module: `mod, params = relay.frontend.from_pytorch(traced,
    [("input0", (1, 3, 224, 224))])`.

    Main takes the inputs under the names in `input_infos`, then the weights; `params` maps
    the weights' names to their values (`relay.build(mod, params=params)` binds them).
    `custom_convert_map` takes aten op names as `from_exported_program` does ("relu.default").
    """
    import torch

    where = "relay.frontend.from_pytorch"
    if not isinstance(script_module, torch.jit.ScriptModule):
        raise FrontendError(
            f"{where}: expected a TorchScript module (torch.jit.trace(model, example).eval()), "
            f"got {type(script_module).__name__}; for an nn.Module use "
            "relax.frontend.torch.from_exported_program(torch.export.export(model, args))"
        )
    for option, value in (
        ("keep_quantized_weight", keep_quantized_weight),
        ("export_renamed_c_graph_path", export_renamed_c_graph_path),
        ("preserve_pytorch_scopes", preserve_pytorch_scopes),
    ):
        if value:
            raise FrontendError(f"{where}: {option} is not supported; leave it unset")
    infos = _input_infos(input_infos, default_dtype, where)
    try:
        examples = tuple(
            torch.zeros(shape, dtype=getattr(torch, dtype)) for _, shape, dtype in infos
        )
    except (AttributeError, TypeError) as err:
        raise FrontendError(f"{where}: an input dtype is not a torch dtype ({err})") from None
    ep = _to_exported_program(script_module, examples, where)
    from ...relax.frontend.torch import from_exported_program

    mod = from_exported_program(
        ep, keep_params_as_input=True, custom_convert_map=custom_convert_map,
        unwrap_unit_return_tuple=True,
    )  # fmt: skip
    mod, params = split_params(mod, len(infos), where)
    return rename_inputs(mod, [n for n, _, _ in infos], where), params


def _to_exported_program(script_module: Any, examples: tuple, where: str) -> Any:
    """torch's own converter (TorchScript graph -> ExportedProgram); its failures, and a module
    the example inputs do not fit, become one FrontendError."""
    import logging
    import warnings

    import torch

    try:
        from torch._export.converter import TS2EPConverter
    except ImportError as err:
        raise FrontendError(
            f"{where}: this torch has no TorchScript converter ({err}); export the nn.Module "
            "with torch.export and use relax.frontend.torch.from_exported_program"
        ) from None
    quiet = logging.getLogger("torch._export")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = TS2EPConverter(script_module, examples).convert()
            # the converter leaves dims dynamic (Dim.AUTO); input_infos fixes them, so the
            # converted program is exported once more with the example shapes
            return torch.export.export(ep.module(), examples)
    except Exception as err:  # noqa: BLE001 - torch raises many types here; named below
        raise FrontendError(
            f"{where}: torch could not convert the TorchScript module with inputs of shapes "
            f"{[tuple(e.shape) for e in examples]} ({type(err).__name__}: "
            f"{str(err).splitlines()[0][:200] if str(err) else ''}); check input_infos"
        ) from None
    finally:
        quiet.setLevel(level)
