"""GPU modules from SplitHostDevice output: kernels to OpenCL C or PTX, host functions to data.

`build_device_module(mod, target)` takes an IRModule of host PrimFuncs (bodies of asserts,
lets and `tvm_call_packed(kernel, *args, *launch_extents)` calls) and device kernels
(attr "calling_conv" 2), and returns a runtime DeviceModule: each host function becomes a
host program (runtime/device_module.py) run behind the same argument checks as CPU
functions (its FuncInfo), which evaluates the launch extents from the symbolic sizes and
launches the kernels in order.
"""

from __future__ import annotations

import re

from .. import tir
from ..error import BuildError
from ..ir.module import IRModule
from ..runtime.device_module import DeviceModule
from ..target import Target
from ..target.kinds import gpu_kinds, kind_spec
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.names import ATTR_IS_GLOBAL_FUNC, ATTR_KERNEL_LAUNCH_PARAMS, TVM_CALL_PACKED, is_call
from .llvm_funcinfo import SHAPE_SYNTAX, signature_info
from .opencl import C_COMPARISONS, THREAD_QUERIES, build_opencl


def is_device_kernel(func: PrimFunc) -> bool:
    """Whether `func` is a device kernel of SplitHostDevice's output (not a host function)."""
    return func.attrs.get("calling_conv") == 2 or bool(func.attrs.get(ATTR_IS_GLOBAL_FUNC))


def build_device_module(mod: IRModule, target: Target | str) -> DeviceModule:
    """Code-generate every kernel of `mod` for `target` ("opencl" or "cuda") and wrap its host
    functions as checked launchers; the result runs on tvm.opencl(k) / tvm.cuda(k) arrays."""
    target = Target(target) if isinstance(target, str) else target
    kind = kind_spec(target.kind.name).codegen  # the device code flavour: OpenCL C or PTX
    if kind is None:
        raise BuildError(
            f"build_device_module: target '{target}' is not a GPU target with a device code "
            f"generator; GPU kinds built here: {', '.join(sorted(gpu_kinds()))}"
        )
    funcs = [f for f in mod.functions.values() if isinstance(f, PrimFunc)]
    by_name = {f.attrs["global_symbol"]: f for f in funcs if is_device_kernel(f)}
    # kernel symbols become C/PTX identifiers ("fused.add_kernel" -> "fused_add_kernel")
    symbols = _identifiers(list(by_name))
    kernels = [f.with_attr("global_symbol", symbols[name]) for name, f in by_name.items()]
    hosts = [f for f in funcs if not is_device_kernel(f)]
    if not hosts:
        raise BuildError("build_device_module: the module has no host function to call the kernels")
    if kind == "opencl":
        data = _data_params(hosts, symbols)
        source, infos, extensions = build_opencl(kernels, data)
        for info in infos:
            info["extensions"] = sorted(extensions)
    else:
        from .nvptx import build_ptx

        source, infos = build_ptx(kernels, target)
    programs = [_HostLowering(f, by_name, symbols).program() for f in hosts]
    entry = hosts[0].attrs.get("global_symbol") if len(hosts) == 1 else None
    return DeviceModule(kind, str(target), source, infos, programs, entry)


def _identifiers(names: list[str]) -> dict[str, str]:
    """A distinct C identifier for each kernel symbol."""
    out, taken = {}, set()
    for name in names:
        base = re.sub(r"\W", "_", name, flags=re.ASCII)
        base = base if base and not base[0].isdigit() else f"k_{base}"
        ident, k = base, 0
        while ident in taken:
            k += 1
            ident = f"{base}_{k}"
        taken.add(ident)
        out[name] = ident
    return out


def _data_params(hosts: list[PrimFunc], symbols: dict[str, str]) -> dict[str, set[int]]:
    """Kernel symbol -> positions of its scalar params that some launch feeds from a host
    scalar param no buffer dim pins (data, whose uses as indices the kernel must check)."""
    from .llvm import _dim_vars  # the CPU build's rule for which scalars are sizes

    found: dict[str, set[int]] = {symbols[s]: set() for s in symbols}
    for host in hosts:
        buffers = list(host.buffer_map.values())
        scalars = {id(p) for p in host.params if p not in host.buffer_map}
        data = scalars - {id(v) for v in _dim_vars(buffers)}

        def visit(n, data=data) -> None:
            if not is_call(n, TVM_CALL_PACKED):
                return
            if (
                not (n.args and isinstance(n.args[0], tir.StringImm))
                or n.args[0].value not in symbols
            ):
                return
            for k, a in enumerate(n.args[1:]):
                if _var_ids(a) & data:
                    found[symbols[n.args[0].value]].add(k)

        post_order_visit(host.body, visit)
    return found


def _var_ids(e: tir.PrimExpr) -> set[int]:
    ids: set[int] = set()
    post_order_visit(e, lambda x: ids.add(id(x)) if isinstance(x, tir.Var) else None)
    return ids


def _stored_vars(kernel: PrimFunc) -> set[int]:
    """ids of the buffer vars `kernel` stores to (or hands to a call: counted as written)."""
    stored: set[int] = set()

    def visit(n) -> None:
        if isinstance(n, tir.BufferStore):
            stored.add(id(n.buffer.data))
        elif isinstance(n, tir.Call):
            stored.update(id(a) for a in n.args if isinstance(a, tir.Var) and a.dtype.is_handle)

    post_order_visit(kernel.body, visit)
    return stored


class _HostLowering:
    """Turns one host PrimFunc into a host program (JSON data)."""

    def __init__(self, func: PrimFunc, kernels: dict, symbols: dict) -> None:
        self.func, self.kernels, self.symbols = func, kernels, symbols
        self.name = func.attrs.get("global_symbol") or "main"
        info, sym_vars = signature_info(func.with_attr("global_symbol", self.name)
                                        if "global_symbol" not in func.attrs else func)  # fmt: skip
        self.info = info
        self.names: dict[int, str] = {id(v): f"v{i}" for i, v in enumerate(sym_vars)}
        self.positions: dict[int, int] = {}  # handle var (param or its buffer's data) -> position
        self.scalars: dict[int, int] = {}  # scalar param -> position
        for k, p in enumerate(func.params):
            buf = func.buffer_map.get(p)
            if buf is not None:
                self.positions[id(p)] = self.positions[id(buf.data)] = k
            else:
                self.scalars[id(p)] = k
                if p.dtype.is_int or p.dtype.is_uint:
                    self.names[id(p)] = f"a{k}"
        self.steps: list = []
        self.written: set[int] = set()  # positions of buffer params some kernel stores to
        self.workspaces: dict[
            int, int
        ] = {}  # buffer var of a global buffer between kernels -> slot

    def program(self) -> dict:
        self.stmt(self.func.body)
        self.info["writes"] = sorted(self.written)
        return {"info": self.info, "steps": self.steps}

    def fail(self, what: str) -> BuildError:
        return BuildError(f"building '{self.name}' for the GPU: {what}")

    def stmt(self, s: tir.Stmt) -> None:
        while True:
            if isinstance(s, tir.SeqStmt):
                for x in s.seq:
                    self.stmt(x)
                return
            if isinstance(s, tir.AssertStmt):
                self.steps.append(["assert", self.condition(s.condition), s.message])
            elif isinstance(s, tir.LetStmt):
                local = f"l{len(self.names)}"
                self.steps.append(["let", local, self.expr(s.value)])
                self.names[id(s.var)] = local
            elif isinstance(s, tir.Evaluate):
                self.evaluate(s.value)
                return
            elif isinstance(s, tir.Allocate):
                # the device memory of a stage between kernels, allocated for each call
                size = " * ".join([self.expr(e) for e in s.extents] + [str(s.dtype.bytes)])
                self.steps.append(["alloc", len(self.workspaces), f"({size})"])
                self.workspaces[id(s.buffer_var)] = len(self.workspaces)
            elif not isinstance(s, (tir.AttrStmt, tir.DeclBuffer)):
                raise self.fail(
                    f"the host function holds a {type(s).__name__}; after SplitHostDevice it may "
                    "hold only kernel launches, asserts, lets and buffers between kernels"
                )
            s = s.body

    def evaluate(self, v: tir.PrimExpr) -> None:
        if isinstance(v, tir.IntImm):
            return
        if not is_call(v, TVM_CALL_PACKED):
            raise self.fail(f"the host statement `{v}` is not a kernel launch (tvm_call_packed)")
        if not v.args or not isinstance(v.args[0], tir.StringImm):
            raise self.fail(f"the launch `{v}` does not name its kernel")
        symbol = v.args[0].value
        kernel = self.kernels.get(symbol)
        if kernel is None:
            raise self.fail(f"it launches kernel '{symbol}', which the module does not define")
        tags = list(kernel.attrs.get(ATTR_KERNEL_LAUNCH_PARAMS, ()))
        n_args = len(v.args) - 1 - len(tags)
        if n_args != len(kernel.params):
            raise self.fail(
                f"the launch of '{symbol}' passes {n_args} arguments and {len(tags)} extents; "
                f"the kernel takes {len(kernel.params)} parameters"
            )
        args = [self.kernel_arg(a, p) for a, p in zip(v.args[1 : 1 + n_args], kernel.params)]
        stored = _stored_vars(kernel)
        self.written |= {a[1] for a, p in zip(args, kernel.params) if a[0] == "buffer"
                         and id(p) in stored}  # fmt: skip
        extents = dict(zip(tags, v.args[1 + n_args :]))
        unknown = [t for t in tags if t not in THREAD_QUERIES]
        if unknown:
            raise self.fail(f"kernel '{symbol}' has launch parameters {unknown}; "
                            f"known: {', '.join(THREAD_QUERIES)}")  # fmt: skip
        grid = [self.expr(extents.get(f"blockIdx.{a}", tir.IntImm("int32", 1))) for a in "xyz"]
        block = [self.expr(extents.get(f"threadIdx.{a}", tir.IntImm("int32", 1))) for a in "xyz"]
        self.steps.append(["launch", self.symbols[symbol], args, grid, block])

    def kernel_arg(self, a: tir.PrimExpr, param: tir.Var) -> list:
        if param.dtype.is_handle:
            if isinstance(a, tir.Var) and id(a) in self.workspaces:
                return ["workspace", self.workspaces[id(a)]]
            if not (isinstance(a, tir.Var) and id(a) in self.positions):
                raise self.fail(f"kernel argument `{a}` for buffer '{param.name}' is not a "
                                "buffer parameter of the host function")  # fmt: skip
            return ["buffer", self.positions[id(a)]]
        if isinstance(a, tir.Var) and id(a) in self.scalars:
            return ["scalar", self.scalars[id(a)], str(param.dtype)]
        if not (param.dtype.is_int or param.dtype.is_uint):
            raise self.fail(f"kernel argument `{a}` for float parameter '{param.name}' must be "
                            "a scalar parameter of the host function")  # fmt: skip
        return ["expr", self.expr(a), str(param.dtype)]

    def expr(self, e: tir.PrimExpr) -> str:
        if isinstance(e, tir.IntImm):
            return str(e.value) if e.value >= 0 else f"(-{-e.value})"
        if isinstance(e, tir.Var):
            if id(e) not in self.names:
                raise self.fail(f"the launch uses '{e.name}', which is neither a symbolic dim, "
                                "an int scalar parameter nor a let of the host function")  # fmt: skip
            return self.names[id(e)]
        if isinstance(e, tir.Cast) and (e.dtype.is_int or e.dtype.is_uint):
            return self.expr(e.value)
        rule = SHAPE_SYNTAX.get(type(e))
        if rule is None:
            raise self.fail(f"the host expression `{e}` uses {type(e).__name__}, which launch "
                            "sizes cannot use; write sizes with + - * // % min max")  # fmt: skip
        text = rule(self.expr(e.a), self.expr(e.b))
        return text if text.startswith(("min(", "max(")) else f"({text})"

    def condition(self, c: tir.PrimExpr) -> list:
        if isinstance(c, tir.And):
            return self.condition(c.a) + self.condition(c.b)
        op = C_COMPARISONS.get(type(c))
        if op is None:
            raise self.fail(f"the host assert `{c}` is not a conjunction of comparisons")
        return [[self.expr(c.a), op, self.expr(c.b)]]
