"""Tensor IR: expressions, statements, buffers, PrimFuncs, the visitor/mutator and ops."""

from ..error import ScheduleError  # noqa: F401  (tvm.tir.ScheduleError, as TVM's tests spell it)
from . import op
from .buffer import Buffer, decl_buffer
from .expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, BinaryOpExpr, Broadcast, BufferLoad, Call, Cast, CmpOpExpr,
    Div, FloatImm, FloorDiv, FloorMod, IntImm, IterType, IterVar, Let, Max, Min, Mod, Mul, Not, Op,
    Or, PrimExpr, Ramp, Range, Select, SizeVar, StringImm, Sub, Var, as_expr, cast, make_const,
)
from .expr import AnyDim as Any  # tvm.tir.Any(): a dim known at run time (not tir.any)
from .function import PrimFunc
from .index_map import IndexMap
from .functor import Mutator, Visitor, post_order_visit, pre_order_visit, substitute
from .op import (
    abs, acos, all, any, asin, atan, atan2, bitwise_and, bitwise_not, bitwise_or, bitwise_xor,
    call_extern, call_intrin, ceil, const, copysign, cos,
    cosh, div, equal, erf, exp, exp2, exp10, floor, floordiv, floormod, fma, fmod, if_then_else,
    indexdiv, indexmod, infinity, isfinite, isinf, isnan, likely, log, log1p, log2, log10, max,
    max_value, min, min_value, nearbyint, pow, power, round, rsqrt, select, sigmoid, sin, sinh,
    shift_left, shift_right, sqrt, tan, tanh, trace, trunc, truncdiv, truncmod, reinterpret, vscale,
)
from .stmt import (
    Allocate, AllocateConst, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer,
    Evaluate, For, ForKind, IfThenElse, LetStmt, MatchBufferRegion, SeqStmt, Stmt, While, seq,
)
from . import printer  # registers the TVMScript printer
from . import stmt_functor  # tvm.tir.stmt_functor (ir_transform, post_order_visit, substitute)
from . import ir_builder
from .packed import call_packed
from .builtin import *  # TVM's builtins: tir.tvm_struct_get, tir.ptx_mma, ...
from .tensor_intrin_base import TensorIntrin  # tensorize's intrinsics (tvm.tir.TensorIntrin)
from .schedule import BlockRV, LoopRV, Schedule  # the TensorIR scheduler (tvm.tir.Schedule)
from .schedule import ScheduleState, StmtSRef
from .schedule.block_dependence_info import BlockDependenceInfo
from .data_layout import BijectiveLayout, Layout, bijective_layout, layout
from .._lazy import alias_module as _alias_module

_alias_module(__name__ + ".block_scope", __name__ + ".schedule.block_scope")  # tvm.tir.block_scope

# TVM 0.24 (`tvm.tirx`) calls blocks "schedulable blocks": the same node classes
SBlock = Block
SBlockRealize = BlockRealize


def build(mod, target=None, pipeline="default"):
    """`tvm.tir.build(mod, target)` (TVM 0.20+; `tvm.tirx.build` in 0.24): compile a PrimFunc or
    an IRModule of PrimFuncs to a runtime Module, as `tvm.build` does (target default "llvm")."""
    from ..driver import build as _build
    from ..error import ArgumentError

    if pipeline not in ("default", None):
        raise ArgumentError(
            f"tir.build: pipeline {pipeline!r} is not one minitvm has; only the default TIR "
            "lowering pipeline exists (leave pipeline='default')"
        )
    return _build(mod, target="llvm" if target is None else target)
