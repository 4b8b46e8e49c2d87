"""`tvm.script.ir_builder`: build IR with frames instead of parsing text (`base`: IRBuilder and
frames, `ir`: the IRModule frame)."""

from . import base, ir
from .base import IRBuilder, IRBuilderFrame

__all__ = ["IRBuilder", "IRBuilderFrame", "base", "ir"]
