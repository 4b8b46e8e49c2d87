"""VM code generation: a relax Function becomes a flat list of VM instructions (JSON-able).

Registers hold values (tensors, tuples, shapes); parameters are registers 0..n-1. Symbolic
dims live in a per-function heap `h` (slot per tir Var), bound by `MatchTensor` from the
parameters; every shape and size is Python source over `h` (see _shape_code.py).

Instructions (a list: name first):
  MatchTensor  reg, name, dtype, ndim, dims, at   dims: int | ["bind", slot] | ["check", src];
                                                   at: "param" (checked when a new input-shape
                                                   signature is seen) or "body" (every call)
  MatchShape   reg, name, ndim, dims, at           a shape value (R.Shape), dims as above
  MatchPrim    reg, name, dim, at                  an int scalar (R.Prim(value=n)), dim as above
  MatchTuple   reg, name, length, at               a tuple of `length` items (its items are then
                                                   taken with GetItem and matched one by one)
  AllocStorage sid, size_src                       a byte buffer of the memory plan
  AllocTensor  dst, sid, offset, shape_srcs, dtype sid -1: a fresh tensor per call
  LoadConst    dst, index
  LoadImm      dst, value                          a str (R.str, R.dtype), float
                                                   (R.prim_value(2.0)) or None (an argument
                                                   left out) constant, passed on as it is
  CallTIR      func, arg_regs, scalar_srcs         destination-passing: outputs are arg regs
  CallPacked   func, arg_regs                      a registered function (tvm.get_global_func)
  CallBuiltin  dst, func, arg_regs                 a registered function that returns its
                                                   result (vm.builtin.*: objects, views)
  Call         dst, func, arg_regs                 another relax function
  MakeTuple    dst, regs          GetItem dst, src, index          Move dst, src
  MakeShape    dst, srcs          MakeScalar dst, src
  If           cond_reg, else_pc  Goto pc          Ret reg
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import BuildError
from ...ir.module import GlobalVar, IRModule
from ...ir.structural import structural_equal
from ...tir.expr import FloatImm, IntImm
from ...tir.expr import Var as TirVar
from .. import expr as rx
from ..op.memory import VM_BUILTINS as MEMORY_VM_BUILTINS
from ..struct_info import PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo
from ..transform.static_plan_block_memory import (
    PLAN_ATTR,
    analyze_liveness,
    flat_bindings,
    is_dps_call,
    out_sinfos,
    tensor_bytes,
)
from ._shape_code import to_source


class _Constants:
    """The executable's constant pool, shared by all functions (deduplicated by identity)."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self._index: dict[int, int] = {}

    def add(self, c: rx.Constant) -> int:
        key = id(c.data)
        if key not in self._index:
            self._index[key] = len(self.arrays)
            self.arrays.append(np.array(c.data.numpy(), order="C"))  # keeps 0-d
        return self._index[key]


class FunctionCodegen:
    """Compiles one relax Function into its VM program dict."""

    def __init__(self, name: str, func: rx.Function, prim_names: dict, consts: _Constants):
        self.name, self.func, self.prim_names, self.consts = name, func, prim_names, consts
        self.code: list[list] = []
        self.regs: dict[rx.Var, int] = {}
        self.num_regs = 0
        self.slots: dict[TirVar, int] = {}
        self.param_dims: set[int] = set()
        self.storages: list[str] = []
        plan = dict(func.attrs.get(PLAN_ATTR, {}) or {})
        self.plan = {(b, o): sid for b, o, sid in plan.get("tensors", ())}
        self.plan_sizes = list(plan.get("storages", ()))
        self.binding_index: dict[int, int] = {}

    # ------------------------------------------------------------------ helpers
    def new_reg(self) -> int:
        self.num_regs += 1
        return self.num_regs - 1

    def emit(self, *ins: Any) -> int:
        self.code.append(list(ins))
        return len(self.code) - 1

    def src(self, e: Any) -> str:
        return to_source(e, self.slots, f"relax function '{self.name}'")

    def match(self, reg: int, name: str, sinfo: Any, at: str) -> None:
        """Check the value in `reg` against `sinfo`, binding the symbolic dims it defines."""
        if isinstance(sinfo, TensorStructInfo):
            dtype = str(sinfo.dtype) if sinfo.dtype is not None else None
            ndim = sinfo.ndim if sinfo.shape is None else len(sinfo.shape)
            dims = self.dims(sinfo.shape, at)
            self.emit("MatchTensor", reg, name, dtype, ndim, dims, at)
        elif isinstance(sinfo, TupleStructInfo):  # a tuple of that length, each item checked
            self.emit("MatchTuple", reg, name, len(sinfo.fields), "body")
            for i, field in enumerate(sinfo.fields):
                item = self.new_reg()
                self.emit("GetItem", item, reg, i)
                self.match(item, f"{name}[{i}]", field, "body")
        elif isinstance(sinfo, ShapeStructInfo):  # R.Shape(["n"]): binds n from the value
            self.emit("MatchShape", reg, name, sinfo.ndim, self.dims(sinfo.values, at), at)
        elif isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
            if not str(sinfo.dtype).startswith(("int", "uint")):
                return  # a float scalar defines no dim
            self.emit("MatchPrim", reg, name, self.dims((sinfo.value,), at)[0], at)

    def dims(self, values: Any, at: str) -> list | None:
        """Each dim as an int, ["bind", slot] (its first sight defines the var) or ["check", src]."""
        if values is None:
            return None
        dims: list = []
        for d in values:
            if isinstance(d, IntImm):
                dims.append(d.value)
            elif isinstance(d, TirVar) and d not in self.slots:
                self.slots[d] = len(self.slots)
                if at == "param":
                    self.param_dims.add(self.slots[d])
                dims.append(["bind", self.slots[d]])
            else:
                dims.append(["check", self.src(d)])
        return dims

    # ------------------------------------------------------------------ functions
    def run(self) -> dict:
        func = self.func
        for p in func.params:
            self.regs[p] = self.new_reg()
        for p in func.params:
            self.match(self.regs[p], p.name_hint, p.struct_info, "param")
        renumber = {}
        for old_sid, size in enumerate(self.plan_sizes):
            try:
                text = self.src(size)
            except BuildError:  # sized by a dim bound later (match_cast): allocate per call
                continue
            renumber[old_sid] = len(self.storages)
            self.storages.append(text)
            self.emit("AllocStorage", renumber[old_sid], text)
        self.plan = {k: renumber[s] for k, s in self.plan.items() if s in renumber}
        for i, b in enumerate(flat_bindings(func)):
            self.binding_index[id(b)] = i
        out = self.expr(func.body)
        if _annotation_adds(func.body.struct_info, func.ret_struct_info):
            # the return annotation promises more than the body is known to be (an R.Object
            # returned as R.Tensor((m, n))): checked on every call, as a match_cast would be
            self.match(out, "return value", func.ret_struct_info, "body")
        self.emit("Ret", out)
        return {
            "name": self.name,
            "params": [p.name_hint for p in func.params],
            "num_regs": self.num_regs,
            "dims": [v.name for v in self.slots],
            "storages": self.storages,
            "stats": self.stats(),
            "code": self.code,
        }

    def stats(self) -> dict:
        live = analyze_liveness(self.func)
        inter = [a for a in live.allocations if not a.is_output]
        sizes = [self.src(tensor_bytes(a.sinfo, a.var.name_hint)) for a in inter]
        planned = [(a.binding, a.out) in self.plan for a in inter]
        allocated = self.storages + [s for s, p in zip(sizes, planned) if not p]
        return {
            "num_intermediates": len(inter),
            "num_outputs": len(live.allocations) - len(inter),
            "num_storages": len(self.storages),
            "planned": bool(self.plan),
            "intermediate_bytes": " + ".join(sizes) or "0",
            "allocated_bytes": " + ".join(allocated) or "0",
        }

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Any) -> int:
        """Compile `e`; the register holding its value."""
        if isinstance(e, rx.Var):
            if e not in self.regs:
                raise BuildError(
                    f"relax function '{self.name}': variable '{e.name_hint}' is used before it is bound"
                )
            return self.regs[e]
        if isinstance(e, rx.SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    self.binding(b)
            return self.expr(e.body)
        handler = _EXPR_RULES.get(type(e))
        if handler is None:
            raise BuildError(
                f"relax function '{self.name}': the VM cannot run a {type(e).__name__}"
            )
        return handler(self, e, None)

    def binding(self, b: Any) -> None:
        value = b.value
        if isinstance(b, rx.MatchCast):
            reg = self.expr(value)
            self.match(reg, b.var.name_hint, b.struct_info, "body")
            self.regs[b.var] = reg
            return
        if isinstance(value, rx.Var):  # an alias: same register
            self.regs[b.var] = self.expr(value)
            return
        handler = _EXPR_RULES.get(type(value))
        if handler is None:
            self.regs[b.var] = self.expr(value)
            return
        self.regs[b.var] = handler(self, value, b)

    def const(self, c: rx.Constant, _b: Any) -> int:
        dst = self.new_reg()
        self.emit("LoadConst", dst, self.consts.add(c))
        return dst

    def string(self, s: rx.StringImm, _b: Any) -> int:
        dst = self.new_reg()
        self.emit("LoadImm", dst, s.value)
        return dst

    def dtype(self, d: rx.DataTypeImm, _b: Any) -> int:
        dst = self.new_reg()
        self.emit("LoadImm", dst, str(d.value))
        return dst

    def omitted_or_expr(self, e: Any) -> int:
        """An op argument's register; an empty tuple (TVM's argument left out) becomes None."""
        if isinstance(e, rx.Tuple) and not e.fields:
            dst = self.new_reg()
            self.emit("LoadImm", dst, None)
            return dst
        return self.expr(e)

    def shape(self, s: rx.ShapeExpr, _b: Any) -> int:
        dst = self.new_reg()
        self.emit("MakeShape", dst, [self.src(d) for d in s.values])
        return dst

    def prim_value(self, p: rx.PrimValue, _b: Any) -> int:
        dst = self.new_reg()
        if isinstance(p.value, FloatImm):  # shape code is integer arithmetic only
            self.emit("LoadImm", dst, float(p.value.value))
            return dst
        self.emit("MakeScalar", dst, self.src(p.value))
        return dst

    def tuple_(self, t: rx.Tuple, _b: Any) -> int:
        regs = [self.expr(f) for f in t.fields]
        dst = self.new_reg()
        self.emit("MakeTuple", dst, regs)
        return dst

    def get_item(self, g: rx.TupleGetItem, _b: Any) -> int:
        src = self.expr(g.tuple_value)
        dst = self.new_reg()
        self.emit("GetItem", dst, src, g.index)
        return dst

    def if_(self, e: rx.If, _b: Any) -> int:
        cond = self.expr(e.cond)
        dst = self.new_reg()
        branch = self.emit("If", cond, -1)
        self.emit("Move", dst, self.expr(e.true_branch))
        goto = self.emit("Goto", -1)
        self.code[branch][2] = len(self.code)
        self.emit("Move", dst, self.expr(e.false_branch))
        self.code[goto][1] = len(self.code)
        return dst

    def call(self, call: rx.Call, b: Any) -> int:
        if is_dps_call(call):
            return self.dps_call(call, b)
        if isinstance(call.op, rx.Op) and call.op.name == "relax.call_tir_inplace":
            return self.inplace_call(call)
        if isinstance(call.op, GlobalVar):
            args = [self.expr(a) for a in call.args]
            dst = self.new_reg()
            self.emit("Call", dst, call.op.name_hint, args)
            return dst
        if isinstance(call.op, rx.ExternFunc):  # a registered function returning its result
            args = [self.expr(a) for a in call.args]
            dst = self.new_reg()
            self.emit("CallBuiltin", dst, call.op.global_symbol, args)
            return dst
        if isinstance(call.op, rx.Op) and call.op.name in BUILTIN_OPS:
            args = [self.omitted_or_expr(a) for a in call.args]
            dst = self.new_reg()
            self.emit("CallBuiltin", dst, BUILTIN_OPS[call.op.name], args)
            return dst
        if isinstance(call.op, rx.Op) and call.op.name in _PACKED_OPS:
            # the purity the op vouches for matters to passes only; the VM calls the function
            args = [self.expr(a) for a in call.args[1:]]
            dst = self.new_reg()
            self.emit("CallBuiltin", dst, call.args[0].global_symbol, args)
            return dst
        what = call.op.name if isinstance(call.op, rx.Op) else type(call.op).__name__
        if what == "relax.call_py_func":
            raise BuildError(
                f"relax function '{self.name}': R.call_py_func calls a Python method of the "
                "module; build and run it through relax.BasePyModule (an @I.ir_module class "
                "deriving from BasePyModule), not relax.build"
            )
        raise BuildError(
            f"relax function '{self.name}': the VM cannot run {what} directly; lower high-level "
            "ops with relax.transform.LegalizeOps() (relax.build does) or use call_tir"
        )

    def dps_call(self, call: rx.Call, b: Any) -> int:
        callee = call.args[0]
        args = [self.expr(a) for a in _fields(call.args[1])]
        index = self.binding_index.get(id(b)) if b is not None else None
        outs = []
        for j, s in enumerate(out_sinfos(call)):
            dst = self.new_reg()
            sid = self.plan.get((index, j), -1) if index is not None else -1
            if s.shape is None or s.dtype is None:
                raise BuildError(
                    f"relax function '{self.name}': output {j} of a call of "
                    f"{_callee_name(callee)} needs a known shape and dtype, got {s}"
                )
            self.emit("AllocTensor", dst, sid, 0, [self.src(d) for d in s.shape], str(s.dtype))
            outs.append(dst)
        if isinstance(callee, GlobalVar):
            scalars = [self.src(v) for v in call.args[2].values] if len(call.args) > 2 else []
            self.emit("CallTIR", self.prim_names[callee.name_hint], args + outs, scalars)
        elif isinstance(callee, rx.ExternFunc):
            name = callee.global_symbol
            if name in self.prim_names:  # a PrimFunc of this module, called by name
                self.emit("CallTIR", self.prim_names[name], args + outs, [])
            else:
                self.emit("CallPacked", name, args + outs)
        else:
            raise BuildError(f"relax function '{self.name}': cannot call {callee!r}")
        if isinstance(call.sinfo_args[0], TensorStructInfo):
            return outs[0]
        dst = self.new_reg()
        self.emit("MakeTuple", dst, outs)
        return dst

    def inplace_call(self, call: rx.Call) -> int:
        """call_tir_inplace: output i is input `inplace_indices[i]` updated by the kernel, -1 a
        fresh output. The kernel updates a VM-allocated copy of that input (copied in by
        vm.builtin.copy_into), since a kernel never writes the caller's tensors (verify.py);
        the result is what TVM computes, and the input keeps its value."""
        args = [self.expr(a) for a in _fields(call.args[1])]
        outs = []
        for index, s in zip(call.attrs["inplace_indices"], out_sinfos(call), strict=True):
            if s.shape is None or s.dtype is None:
                raise BuildError(
                    f"relax function '{self.name}': output of call_tir_inplace of "
                    f"{_callee_name(call.args[0])} needs a known shape and dtype, got {s}"
                )
            dst = self.new_reg()
            self.emit("AllocTensor", dst, -1, 0, [self.src(d) for d in s.shape], str(s.dtype))
            if index != -1:
                self.emit("CallPacked", "vm.builtin.copy_into", [args[index], dst])
                args[index] = dst
            outs.append(dst)
        fresh = [r for r, i in zip(outs, call.attrs["inplace_indices"]) if i == -1]
        scalars = [self.src(v) for v in call.args[2].values] if len(call.args) > 2 else []
        self.emit("CallTIR", self.prim_names[call.args[0].name_hint], args + fresh, scalars)
        if isinstance(call.sinfo_args[0], TensorStructInfo):
            return outs[0]
        dst = self.new_reg()
        self.emit("MakeTuple", dst, outs)
        return dst


_PACKED_OPS = ("relax.call_pure_packed", "relax.call_inplace_packed")

# ops the VM runs as a registered builtin, argument for argument (importing the table also
# registers the ops, so relax.op.memory.view exists wherever relax does)
BUILTIN_OPS = dict(MEMORY_VM_BUILTINS)


def _annotation_adds(known: Any, promised: Any) -> bool:
    """Whether the struct info `promised` says something about a value that `known` does not
    imply (conservative: True unless every promised dtype, rank and dim is already known)."""
    if isinstance(promised, TensorStructInfo):
        if not isinstance(known, TensorStructInfo):
            return True
        if promised.dtype is not None and str(promised.dtype) != str(known.dtype or ""):
            return True
        if promised.ndim is not None and promised.ndim >= 0 and promised.ndim != known.ndim:
            return True
        if promised.shape is None:
            return False
        return known.shape is None or not structural_equal(
            tuple(known.shape), tuple(promised.shape)
        )
    if isinstance(promised, TupleStructInfo):
        if not isinstance(known, TupleStructInfo) or len(known.fields) != len(promised.fields):
            return True
        return any(_annotation_adds(k, p) for k, p in zip(known.fields, promised.fields))
    if isinstance(promised, ShapeStructInfo):
        if not isinstance(known, ShapeStructInfo) or promised.ndim not in (-1, None, known.ndim):
            return True
        return promised.values is not None and (
            known.values is None
            or not structural_equal(tuple(known.values), tuple(promised.values))
        )
    return False  # R.Object, R.Prim, callables: nothing the VM checks at a return


def _fields(args: Any) -> tuple:
    return args.fields if isinstance(args, rx.Tuple) else (args,)


def _callee_name(callee: Any) -> str:
    return getattr(callee, "name_hint", None) or getattr(callee, "global_symbol", repr(callee))


_EXPR_RULES = {
    rx.Constant: FunctionCodegen.const,
    rx.ShapeExpr: FunctionCodegen.shape,
    rx.StringImm: FunctionCodegen.string,
    rx.DataTypeImm: FunctionCodegen.dtype,
    rx.PrimValue: FunctionCodegen.prim_value,
    rx.Tuple: FunctionCodegen.tuple_,
    rx.TupleGetItem: FunctionCodegen.get_item,
    rx.If: FunctionCodegen.if_,
    rx.Call: FunctionCodegen.call,
}


def vm_codegen(mod: IRModule, prim_names: dict) -> tuple[dict, list[np.ndarray]]:
    """The VM program of every relax function of `mod` and the constant pool.

    `prim_names` maps each PrimFunc's name in the module to its symbol in the native module."""
    consts = _Constants()
    functions = {}
    for gv, func in mod.functions_items():
        if isinstance(func, rx.Function):
            functions[gv.name_hint] = FunctionCodegen(gv.name_hint, func, prim_names, consts).run()
    if not functions:
        raise BuildError("relax.build: the module has no relax function to run")
    return {"format": "minitvm-vm", "version": 1, "functions": functions}, consts.arrays
