"""TensorIR scheduling: `tvm.tir.Schedule` and its block/loop primitives."""

from ...error import ScheduleError
from .schedule import Schedule
from .trace import BlockRV, Instruction, LoopRV, Trace

__all__ = ["Schedule", "BlockRV", "LoopRV", "Trace", "Instruction", "ScheduleError"]
