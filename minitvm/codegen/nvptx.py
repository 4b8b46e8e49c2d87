"""PTX from device-kernel PrimFuncs through LLVM's NVPTX back end (in llvmlite; no CUDA toolkit).

The CPU code generator (codegen/llvm.py) emits every expression and statement; this
subclass adds what differs on the GPU: thread scopes read `llvm.nvvm.read.ptx.sreg.*`,
"shared" Allocates are addrspace(3) globals (reached through generic pointers, which
LLVM's address-space inference turns back into ld/st.shared), "local" ones are per-thread
stack slots, `tvm_storage_sync` is `llvm.nvvm.barrier0` (bar.sync), a failed check traps
(the launch then fails instead of writing wrong values), and each kernel is a `ptx_kernel`
wrapper around the emitted body. Math without a PTX instruction uses float32 polynomials
(exp, erf, sigmoid, shared with the CPU) or PTX's approximate instructions.
"""

from __future__ import annotations

import math
import re

import llvmlite.binding as llvm
from llvmlite import ir

from ..error import BuildError
from ..ir.dtype import DataType
from ..target import Target
from ..target.target import _initialize_all_targets
from ..tir.expr import Call, IntImm, IterVar, StringImm
from ..tir.function import PrimFunc
from ..tir.stmt import Allocate, AttrStmt, Evaluate, Stmt
from . import llvm_intrinsics as intr
from .llvm import CodeGenLLVM, _optimize, _verified
from .llvm_types import I32, PTR, cast_value, constant, llvm_type, mem_type
from .opencl import constant_size, storage_scope

TRIPLE = "nvptx64-nvidia-cuda"
_SREG = {
    f"{scope}.{axis}": f"llvm.nvvm.read.ptx.sreg.{reg}.{axis}"
    for scope, reg in (("blockIdx", "ctaid"), ("threadIdx", "tid"))
    for axis in "xyz"
}


# largest extents a launch can have (CUDA's limits): blocks along any grid axis, threads per block
_SREG_LIMIT = {"blockIdx": 2**31 - 1, "threadIdx": 1025}


def _one_lane(body):
    """A float32 rule written for vectors (codegen/llvm_intrinsics.py) applied to a scalar: the
    scalar is splat to two lanes and lane 0 is the result."""

    def rule(cg: CodeGenNVPTX, vals: list, t: DataType):
        out = body(cg, cg.splat(vals[0], 2), t.with_lanes(2))
        return cg.builder.extract_element(out, ir.Constant(I32, 0))

    return rule


def _nvvm(name: str, pre: float = 1.0, post: float = 1.0):
    """`post * name(pre * x)` with a float32 NVVM approximate instruction."""

    def rule(cg: CodeGenNVPTX, vals: list, t: DataType):
        b, f32 = cg.builder, ir.FloatType()
        x = vals[0] if pre == 1.0 else b.fmul(vals[0], ir.Constant(f32, pre))
        fn = cg.module.globals.get(name) or ir.Function(
            cg.module, ir.FunctionType(f32, [f32]), name
        )
        y = b.call(fn, [x])
        return y if post == 1.0 else b.fmul(y, ir.Constant(f32, post))

    return rule


_vector_exp = intr.vector_exp
_vector_erf = intr.vector_erf


def _sigmoid(cg, vals, t):
    b = cg.builder
    e = _one_lane(_vector_exp)(cg, [b.fneg(vals[0])], t)
    return b.fdiv(constant(t, 1.0), b.fadd(constant(t, 1.0), e))


def _tanh(cg, vals, t):
    # tanh x = sign(x) (1 - e) / (1 + e) with e = exp(-2|x|); below |x| < 0.004 the cancellation
    # in 1 - e would cost digits, and x - x^3/3 is exact to float32 there
    b = cg.builder
    f32 = ir.FloatType()
    fabs = intr.declare_intrinsic(cg.module, "llvm.fabs", f32, [f32])
    ax = b.call(fabs, [vals[0]])
    e = _one_lane(_vector_exp)(cg, [b.fmul(ax, ir.Constant(f32, -2.0))], t)
    big = b.fdiv(b.fsub(ir.Constant(f32, 1.0), e), b.fadd(ir.Constant(f32, 1.0), e))
    small = b.fsub(ax, b.fmul(b.fmul(ax, b.fmul(ax, ax)), ir.Constant(f32, 1 / 3)))
    mag = b.select(b.fcmp_ordered("<", ax, ir.Constant(f32, 0.004)), small, big)
    sign = intr.declare_intrinsic(cg.module, "llvm.copysign", f32, [f32, f32])
    return b.call(sign, [mag, vals[0]])


_LOG2E, _LN2 = 1 / math.log(2), math.log(2)
# float32 math that the CPU rules would send to libm (absent on the GPU)
_F32_RULES = {
    "tir.exp": _one_lane(_vector_exp),
    "tir.erf": _one_lane(_vector_erf),
    "tir.sigmoid": _sigmoid,
    "tir.tanh": _tanh,
    "tir.exp2": _nvvm("llvm.nvvm.ex2.approx.f"),
    "tir.exp10": _nvvm("llvm.nvvm.ex2.approx.f", pre=math.log2(10)),
    "tir.log": _nvvm("llvm.nvvm.lg2.approx.f", post=_LN2),
    "tir.log2": _nvvm("llvm.nvvm.lg2.approx.f"),
    "tir.log10": _nvvm("llvm.nvvm.lg2.approx.f", post=math.log10(2)),
    "tir.sin": _nvvm("llvm.nvvm.sin.approx.f"),
    "tir.cos": _nvvm("llvm.nvvm.cos.approx.f"),
}
# what PTX does in hardware for every float width (the CPU rules emit these LLVM intrinsics)
_NATIVE = frozenset(
    [
        "tir.sqrt",
        "tir.rsqrt",
        "tir.fabs",
        "tir.floor",
        "tir.ceil",
        "tir.round",
        "tir.nearbyint",
        "tir.trunc",
        "tir.fma",
        "tir.copysign",
        "tir.isnan",
        "tir.isinf",
        "tir.isfinite",
        "tir.likely",
        "tir.if_then_else",
        "tir.bitwise_and",
        "tir.bitwise_or",
        "tir.bitwise_xor",
        "tir.bitwise_not",
        "tir.shift_left",
        "tir.shift_right",
        "tir.reinterpret",
        "tir.tvm_thread_invariant",
        "tir.fmod",
    ]
)


class CodeGenNVPTX(CodeGenLLVM):
    """Fills one NVPTX module with the kernels of a list of device-kernel PrimFuncs."""

    def __init__(self, tm: llvm.TargetMachine, arch: str) -> None:
        super().__init__(tm, arch, "")
        self._fn_strings = {"target-cpu": arch}

    def add_kernel(self, func: PrimFunc) -> dict:
        """Emit `func` as a `ptx_kernel`; return its metadata (name, params, launch params)."""
        name = func.attrs.get("global_symbol")
        if not name:
            raise BuildError("a device kernel PrimFunc has no attrs['global_symbol']")
        self.func_name = name
        self._noalias = bool(func.attrs.get("tir.noalias", True))
        self._errors, self.known_align, self.extents = [], {}, {}
        self.data_vars, self.shape_vars = set(), set()
        params = [(p, PTR if p.dtype.is_handle else llvm_type(p.dtype)) for p in func.params]
        compute = self.emit_kernel_function(name + ".body", params, lambda _: self.stmt(func.body))
        compute.attributes.add("alwaysinline")
        kernel = ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [t for _, t in params]), name
        )
        kernel.calling_convention = "ptx_kernel"
        self.set_function_attributes(kernel)
        for arg, (p, ty) in zip(kernel.args, params):
            arg.name = p.name
            if ty is PTR and self._noalias:
                arg.add_attribute("noalias")
        b = ir.IRBuilder(kernel.append_basic_block("entry"))
        b.call(compute, list(kernel.args))
        b.ret_void()
        infos = [{"name": p.name, "kind": "buffer" if p.dtype.is_handle else "scalar",
                  "dtype": "handle" if p.dtype.is_handle else str(p.dtype)}
                 for p in func.params]  # fmt: skip
        return {"name": name, "params": infos,
                "launch_params": list(func.attrs.get("tir.kernel_launch_params", ()))}  # fmt: skip

    # --- what differs from the CPU -----------------------------------------------------------
    def expr(self, e):
        if isinstance(e, Call):  # the CPU's rule table holds its own _call, not this override
            return self._call(e)
        return super().expr(e)

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, AttrStmt) and s.attr_key == "thread_extent":
            return self._thread_scope(s)
        if isinstance(s, Allocate):
            return self._allocate(s)
        if isinstance(s, Evaluate) and _is_call(s.value, "tir.tvm_storage_sync"):
            return self._barrier(s.value)
        return super().stmt(s)

    def _thread_scope(self, s: AttrStmt) -> None:
        iv = s.node
        tag = iv.thread_tag if isinstance(iv, IterVar) else ""
        if tag not in _SREG:
            raise BuildError(f"building kernel '{self.func_name}': thread scope '{tag}' is not "
                             f"one of {', '.join(_SREG)}")  # fmt: skip
        fn = self.module.globals.get(_SREG[tag]) or ir.Function(
            self.module, ir.FunctionType(I32, []), _SREG[tag]
        )
        raw = self.builder.call(fn, [], name=tag.replace(".", "_"))
        # the launch guarantees [0, extent): LLVM then knows index math cannot wrap or go negative
        hi = s.value.value if isinstance(s.value, IntImm) else _SREG_LIMIT[tag[:-2]]
        raw.set_metadata(
            "range", self.module.add_metadata([ir.Constant(I32, 0), ir.Constant(I32, hi)])
        )
        self.set_range(raw, 0, hi - 1)
        value = cast_value(self.builder, raw, DataType("int32"), iv.var.dtype)
        self.bind(iv.var, value)
        self.stmt(s.body)
        self.unbind(iv.var)

    def _allocate(self, s: Allocate) -> None:
        scope = storage_scope(s.buffer_var, s.annotations)
        size = constant_size(s, self.func_name, scope)
        elem = mem_type(s.dtype.element_of())
        if scope in ("shared", "shared.dyn"):  # sizes are constants here: the same memory
            gv = ir.GlobalVariable(self.module, ir.ArrayType(elem, max(size, 1)),
                                   self.unique_symbol(s.buffer_var.name), addrspace=3)  # fmt: skip
            gv.linkage = "internal"
            gv.align = 16
            gv.initializer = ir.Constant(gv.value_type, ir.Undefined)
            ptr = self.builder.addrspacecast(gv, PTR, name=s.buffer_var.name)
        elif scope == "local":
            ptr = self.entry_alloca(elem, s.buffer_var.name, max(size, 1))
        else:
            raise BuildError(
                f"building kernel '{self.func_name}': allocation '{s.buffer_var.name}' is in "
                f"scope '{scope}'; a kernel can allocate only 'shared' or 'local' memory"
            )
        self.known_align[s.buffer_var] = 16
        self.extents[s.buffer_var] = (tuple(s.extents), s.dtype)
        self.bind(s.buffer_var, ptr)
        self.stmt(s.body)
        self.unbind(s.buffer_var)

    def _barrier(self, call: Call) -> None:
        scope = call.args[0].value if call.args and isinstance(call.args[0], StringImm) else "?"
        if scope not in ("shared", "shared.dyn", "global", "global.shared"):
            raise BuildError(f"building kernel '{self.func_name}': tvm_storage_sync('{scope}') "
                             "has no PTX barrier")  # fmt: skip
        name = "llvm.nvvm.barrier0"
        fn = self.module.globals.get(name) or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), []), name
        )
        self.builder.call(fn, [])

    def fail_unless(self, ok: ir.Value, message: str) -> None:
        """A failed check traps: the launch fails (reported by the driver), nothing is written."""
        b = self.builder
        fail, cont = self.new_block("trap"), self.new_block("ok")
        b.cbranch(ok, cont, fail)
        b.position_at_end(fail)
        trap = self.module.globals.get("llvm.trap") or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), []), "llvm.trap"
        )
        b.call(trap, [])
        b.unreachable()
        b.position_at_end(cont)

    def _call(self, e: Call) -> ir.Value:
        name = getattr(e.op, "name", None)
        if isinstance(e.op, str):
            raise BuildError(f"building kernel '{self.func_name}': the kernel calls extern "
                             f"'{e.op}'; GPU kernels cannot call host functions")  # fmt: skip
        if name in _NATIVE or name not in intr.INTRINSICS or not e.dtype.is_float:
            return super()._call(e)
        work = intr._math_dtype(e.dtype)
        rule = _F32_RULES.get(name)
        if work != DataType("float32") or rule is None:
            raise BuildError(
                f"building kernel '{self.func_name}': {name.removeprefix('tir.')} of "
                f"{e.dtype} has no PTX lowering in minitvm (scalar float32 only; there is "
                "no libdevice here); compute it in float32"
            )
        vals = [cast_value(self.builder, self.expr(a), a.dtype, work) for a in e.args]
        return cast_value(self.builder, rule(self, vals, work), work, e.dtype)


def _is_call(v, name: str) -> bool:
    return isinstance(v, Call) and getattr(v.op, "name", None) == name


def _target_machine(arch: str) -> llvm.TargetMachine:
    _initialize_all_targets()
    try:
        return llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, features="", opt=3)
    except RuntimeError as err:
        raise BuildError(
            f"LLVM's NVPTX back end is not available in this llvmlite ({err})"
        ) from err


def build_ptx(kernels: list[PrimFunc], target: Target) -> tuple[str, list[dict]]:
    """PTX text of `kernels` for `target.arch` and their metadata."""
    arch = target.arch
    tm = _target_machine(arch)
    cg = CodeGenNVPTX(tm, arch)
    infos = [cg.add_kernel(k) for k in kernels]
    mod = _verified(str(cg.module), [i["name"] for i in infos])
    _optimize(mod, tm, 3, cpu=False)
    _check_declarations(mod, infos)
    return tm.emit_assembly(mod), infos


# LLVM intrinsics the NVPTX back end selects to instructions. Any other declaration would be a
# library call, which NVPTX cannot make: LLVM would abort the process in instruction selection.
_SELECTABLE = re.compile(
    r"llvm\.(nvvm\..*|fma|fmuladd|sqrt|fabs|floor|ceil|trunc|rint|nearbyint|roundeven|round|"
    r"copysign|minnum|maxnum|minimum|maximum|smin|smax|umin|umax|abs|ctpop|ctlz|cttz|expect|"
    r"trap|assume|lifetime\..*|memcpy|memmove|memset|fshl|fshr|is\.fpclass|bswap|"
    r"experimental\.noalias\.scope\.decl|exp2)(\..*)?"
)


def _check_declarations(mod: llvm.ModuleRef, infos: list[dict]) -> None:
    for fn in mod.functions:
        if fn.is_declaration and not _SELECTABLE.fullmatch(fn.name):
            raise BuildError(
                f"building kernels {[i['name'] for i in infos]} for CUDA: the code needs "
                f"'{fn.name}', which has no PTX instruction and no library here (no libdevice); "
                "use float32 math the GPU code generator supports (exp, log, sin, cos, tanh, "
                "erf, sigmoid, sqrt, ...)"
            )
