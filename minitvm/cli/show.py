"""`minitvm show MODEL.onnx` (the imported relax program) or `minitvm show model.tar` (summary)."""

from __future__ import annotations

import argparse
import json
import sys

from ._common import parse_input_shapes, shape_text

EPILOG = """\
examples:
  minitvm show model.onnx                                  # the relax program the importer makes
  minitvm show model.onnx --input-shapes data:1,3,224,224
  minitvm show model.tar                                   # inputs, source, kernels, memory
  minitvm show model.tar --vm                              # plus the VM program
"""


DESCRIPTION = (
    "MODEL.onnx: import it and print the relax program (TVMScript). "
    "MODEL.tar (from `minitvm compile`): print its metadata and the executable's summary."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="an .onnx model or a compiled artifact")
    p.add_argument("--input-shapes", action="append", metavar="NAME:SHAPE", help="for .onnx")
    p.add_argument("--vm", action="store_true", help="for an artifact: print the VM program too")


def run(args: argparse.Namespace) -> int:
    from . import artifact

    if args.model.endswith((".onnx", ".pt2")):
        return _show_onnx(args)
    art = artifact.load(args.model)
    meta = {k: v for k, v in art.meta.items() if k != "inputs"}
    out = sys.stdout
    out.write(f"artifact '{art.path}'\n")
    for inp in art.inputs:
        renamed = inp["source_name"] != inp["name"]
        alias = f" (in the source model: '{inp['source_name']}')" if renamed else ""
        out.write(f"  input '{inp['name']}'{alias}: {shape_text(inp['shape'])} {inp['dtype']}\n")
    out.write(json.dumps(meta, indent=1) + "\n")
    out.write(art.exe.stats() + "\n")
    if args.vm:
        out.write(art.exe.as_text() + "\n")
    return 0


def _show_onnx(args: argparse.Namespace) -> int:
    from ..relax.frontend import detach_params
    from . import _onnx

    shapes = parse_input_shapes(args.input_shapes)
    model = _onnx.load_model(args.model)
    _onnx.check_shapes(args.model, _onnx.graph_inputs(model), shapes)
    # weights as parameters, so the program prints their names and shapes, not their values
    mod = _onnx.import_model(args.model, model, shapes, keep_params=True)
    mod, params = detach_params(mod)
    weights = params.get("main", [])
    sys.stdout.write(mod.script() + "\n")
    sys.stdout.write(
        f"# {len(weights)} weight array(s), {sum(w.numpy().nbytes for w in weights) / 1e6:.2f} MB, "
        "are main's parameters after the inputs\n"
    )
    return 0
