"""PyTorch importers: `from_fx` (torch.fx GraphModule) and `from_exported_program` (torch.export).

Both emit only relax.op calls inside one dataflow block of "main", so every graph pass and
the default schedules apply to imported models.
"""

from .exported_program_translator import from_exported_program
from .fx_translator import from_fx

__all__ = ["from_exported_program", "from_fx"]
