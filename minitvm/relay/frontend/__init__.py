"""Classic TVM's model importers (`relay.frontend.from_onnx`, `relay.frontend.from_pytorch`),
thin front ends onto the relax importers: one importer per format, one pipeline behind them.

Each returns `(mod, params)` as TVM's did, where `mod` holds the imported "main" as a relax
function (minitvm's Relay is itself a front end onto relax). `relay.build`,
`relay.create_executor` and the graph executor take it as they take a Relay module; Relay's own
passes do not apply to it.
"""

from .onnx import from_onnx
from .pytorch import from_pytorch

__all__ = ["from_onnx", "from_pytorch"]
