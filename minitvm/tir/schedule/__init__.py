"""TensorIR scheduling: `tvm.tir.Schedule` and its block/loop primitives."""

from ...error import ScheduleError
from ..expr import Var as ExprRV  # a sampled value is a tir.Var, as in TVM
from . import state  # noqa: F401  tvm.tir.schedule.state (CachedFlags)
from .block_scope import BlockScope, Dependency, DepKind
from .instruction import BlockRV, Instruction, InstructionKind, LoopRV
from .instruction import BlockRV as SBlockRV  # TVM 0.24 name
from .schedule import Schedule
from .state import ScheduleState, StmtSRef
from .trace import Trace

__all__ = [
    "BlockRV",
    "BlockScope",
    "DepKind",
    "Dependency",
    "ExprRV",
    "Instruction",
    "InstructionKind",
    "LoopRV",
    "SBlockRV",
    "Schedule",
    "ScheduleError",
    "ScheduleState",
    "StmtSRef",
    "Trace",
]
