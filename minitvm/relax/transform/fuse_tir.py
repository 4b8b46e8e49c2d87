"""FuseTIR: turn every primitive relax Function (made by FuseOps) into ONE PrimFunc.

The PrimFuncs its `call_tir`s call are inlined in order under one root block: their buffer
params are renamed to the fused function's params (inputs, then the output), each
intermediate tensor becomes an `alloc_buffer` of the root block, and every loop, block,
iterator and local buffer gets a fresh definition (a PrimFunc called twice is copied twice).
A scalar constant FuseOps left inside the group is bound into its callee as an immediate
(fuse_scalars.py). Calls of the primitive function become a single `call_tir`; the primitive functions, and
the PrimFuncs only they called, leave the module. Two primitive functions that fuse into
structurally equal PrimFuncs share the first one's, and a primitive function equal to one
fused before (a repeated layer of a model or of its training step) is not fused again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...arith.analyzer import Analyzer
from ...arith.block_indices import simplify_block_indices
from ...error import MiniTVMError, ShapeError
from ...ir.dtype import DataType
from ...ir.module import GlobalVar, IRModule
from ...ir.structural import structural_equal, structural_hash
from ...tir.buffer import Buffer, decl_buffer
from ...tir.expr import IntImm
from ...tir.expr import Var as TirVar
from ...tir.function import PrimFunc
from ...tir.functor import Mutator, post_order_visit, substitute
from ...tir.op import const
from ...tir.stmt import Block, BlockRealize, For, seq
from ..expr import Call, Function, SeqExpr, ShapeExpr, Var, VarBinding
from ..functor import ExprMutator, ExprVisitor
from ..op.base import call_tir
from ..struct_info import ShapeStructInfo, TensorStructInfo
from .annotate_op_pattern import OP_PATTERN_ATTR, func_pattern
from .fuse_scalars import ScalarMemo, inlinable_scalars


class _Names:
    """Unique block and buffer names inside the fused function (`T_add`, `T_add_1`, ...)."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, name: str) -> str:
        out, k = name, 0
        while out in self.used:
            k += 1
            out = f"{name}_{k}"
        self.used.add(out)
        return out


class _Inline(Mutator):
    """Copy a callee's body: params → given buffers, shape vars → given dims, every definition fresh."""

    def __init__(
        self, buffers: dict[int, Buffer], dims: dict[int, Any], names: _Names, blocks: _Names
    ):
        super().__init__()
        self.buffers, self.vars, self.names, self.blocks = buffers, dims, names, blocks

    def visit_Var(self, v: TirVar) -> Any:
        return self.vars.get(id(v), v)

    def visit_Buffer(self, buf: Buffer) -> Buffer:
        mapped = self.buffers.get(id(buf))
        if mapped is None:  # a buffer local to the callee: a fresh copy
            shape = tuple(self.visit(d) for d in buf.shape)
            name = self.names(buf.name)
            mapped = buf.replace(data=TirVar(name, buf.data.dtype), shape=shape, name=name)
            self.buffers[id(buf)] = mapped
        return mapped

    def visit_For(self, loop: For) -> For:
        self.vars[id(loop.loop_var)] = TirVar(loop.loop_var.name, loop.loop_var.dtype)
        return self.generic_visit(loop)

    def visit_Block(self, block: Block) -> Block:
        for iv in block.iter_vars:
            self.vars[id(iv.var)] = TirVar(iv.var.name, iv.var.dtype)
        return self.generic_visit(block).replace(name_hint=self.blocks(block.name_hint))


def call_dims(
    callee: PrimFunc, shapes: Sequence[tuple], tir_vars: Sequence[Any], where: str
) -> dict[int, Any]:
    """The callee's shape vars and scalar params in the caller's terms, for tensors of `shapes`
    (inputs, then the output) and the call's `tir_vars`."""
    cparams = callee.buffer_params()
    if len(cparams) != len(shapes):
        raise MiniTVMError(
            f"FuseTIR: {where}: it takes {len(cparams)} buffers but is called with "
            f"{len(shapes) - 1} inputs and 1 output"
        )
    scalars = [p for p in callee.params if p not in callee.buffer_map]
    if len(scalars) != len(tir_vars):
        raise MiniTVMError(
            f"FuseTIR: {where}: it takes {len(scalars)} scalar param(s) but the call passes "
            f"{len(tir_vars)} tir_vars"
        )
    dims: dict[int, Any] = {id(p): v for p, v in zip(scalars, tir_vars)}
    for cbuf, shape in zip(cparams, shapes):
        if len(cbuf.shape) != len(shape):
            raise MiniTVMError(
                f"FuseTIR: {where}: buffer '{cbuf.name}' has {len(cbuf.shape)} dims but the "
                f"tensor passed to it has {len(shape)}; the call_tir's struct info does not "
                "match the PrimFunc"
            )
        for d, t in zip(cbuf.shape, shape):
            if isinstance(d, TirVar):
                dims.setdefault(id(d), t)
    _check_dims(cparams, shapes, dims, where)
    return dims


def _check_dims(cparams: list[Buffer], shapes: Sequence[tuple], dims: dict, where: str) -> None:
    """Every callee buffer dim, in the caller's terms, provably equals the tensor's: inside
    a fused kernel no runtime check stands between the calls (unfused, the VM checks them)."""
    ana = None
    for cbuf, shape in zip(cparams, shapes):
        for k, (d, t) in enumerate(zip(cbuf.shape, shape)):
            if isinstance(d, IntImm) and isinstance(t, IntImm) and d.value == t.value:
                continue  # a static dim equal to the tensor's (most of a model): nothing to prove
            got = substitute(d, lambda v: dims.get(id(v)))
            ana = ana or Analyzer()
            if not ana.can_prove_equal(got, t):
                raise ShapeError(
                    f"FuseTIR: {where}: dim {k} of buffer '{cbuf.name}' is {d}, which is {got} "
                    f"with this call's tensors and tir_vars, but the tensor passed to it has "
                    f"{t}; make the call's out_sinfo and tir_vars agree with the PrimFunc's "
                    "buffers"
                )


def _unbound_vars(
    params: list[Buffer], allocs: list[Buffer], bindings: list[VarBinding]
) -> list[TirVar]:
    """Vars in the buffers' shapes or the calls' tir_vars that no param buffer has as a plain dim."""
    plain = {id(d) for buf in params for d in buf.shape if isinstance(d, TirVar)}
    found: dict[int, TirVar] = {}

    def note(n: Any) -> None:
        if isinstance(n, TirVar) and id(n) not in plain:
            found.setdefault(id(n), n)

    for buf in [*params, *allocs]:
        for d in buf.shape:
            post_order_visit(d, note)
    for b in bindings:
        for e in b.value.args[2:]:
            post_order_visit(e, note)
    return list(found.values())


def _tensor_sinfo(var: Var, where: str) -> TensorStructInfo:
    sinfo = var.struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or sinfo.dtype is None:
        raise MiniTVMError(
            f"FuseTIR: {where}: '{var.name_hint}' has struct info {sinfo}; fused functions take "
            "tensors of known shape and dtype"
        )
    return sinfo


def _bindings(name: str, func: Function) -> list[VarBinding]:
    body = func.body
    ok = (
        isinstance(body, SeqExpr)
        and len(body.blocks) == 1
        and body.body is body.blocks[0].bindings[-1].var
    )
    bindings = list(body.blocks[0].bindings) if ok else []
    for b in bindings:
        value = b.value
        if not (
            isinstance(b, VarBinding)
            and isinstance(value, Call)
            and getattr(value.op, "name", None) == "relax.call_tir"
        ):
            ok = False
    if not ok:
        raise MiniTVMError(
            f"FuseTIR: primitive function '{name}' is not a chain of call_tir bindings ending "
            "in its result; run LegalizeOps before FuseOps"
        )
    return bindings


def fuse_primitive(
    mod: IRModule, name: str, func: Function, memo: ScalarMemo | None = None
) -> PrimFunc:
    """The one PrimFunc computing the primitive relax Function `func` (`memo`: scalar
    bindings of the callees worked out before, shared by the calls of one pass)."""
    memo = memo or ScalarMemo()
    bindings = _bindings(name, func)
    names, block_names = _Names(), _Names()
    params: list[TirVar] = []
    buffer_map: dict[TirVar, Buffer] = {}
    tensors: dict[Var, Buffer] = {}

    def new_buffer(var: Var, base: str) -> Buffer:
        sinfo = _tensor_sinfo(var, f"function '{name}'")
        return decl_buffer(sinfo.shape, str(sinfo.dtype), names(base))

    for p in func.params:
        if isinstance(p.struct_info, ShapeStructInfo):  # FuseOps' tir_vars param
            continue
        buf = new_buffer(p, p.name_hint)
        param = TirVar(buf.name, DataType("handle"))
        params.append(param)
        buffer_map[param] = buf
        tensors[p] = buf
    allocs: list[Buffer] = []
    bodies = []
    for k, b in enumerate(bindings):
        gv, args = b.value.args[:2]
        callee = mod[gv]
        if not isinstance(callee, PrimFunc):
            raise MiniTVMError(f"FuseTIR: '{name}' calls {gv.name_hint}, which is not a PrimFunc")
        where = f"function '{name}', call of {gv.name_hint}"
        scalars = inlinable_scalars(callee, args.fields, memo)  # as FuseOps left them inside
        if scalars:
            callee = memo.bind(callee, scalars)
        cparams = callee.buffer_params()
        out_buf = new_buffer(b.var, cparams[-1].name if cparams else "out")
        if k == len(bindings) - 1:
            param = TirVar(out_buf.name, DataType("handle"))
            params.append(param)
            buffer_map[param] = out_buf
        else:
            allocs.append(out_buf)
        targets = [out_buf if arg is b.var else tensors.get(arg) for arg in [*args.fields, b.var]]
        for k, (arg, target) in enumerate(zip(args.fields, targets)):
            if target is None and k not in scalars:
                raise MiniTVMError(
                    f"FuseTIR: {where}: argument {arg!r} is neither a param of the primitive "
                    "function nor an earlier result in it"
                )
        tir_vars = b.value.args[2].values if len(b.value.args) > 2 else ()
        shapes = [() if t is None else t.shape for t in targets]  # () for a bound scalar
        dims = call_dims(callee, shapes, tir_vars, where)
        buffers = {id(cbuf): t for cbuf, t in zip(cparams, targets) if t is not None}
        tensors[b.var] = out_buf
        inliner = _Inline(buffers, dims, names, block_names)
        body = callee.body
        if isinstance(body, BlockRealize) and not body.block.iter_vars:  # the root block
            allocs.extend(inliner.visit(buf) for buf in body.block.alloc_buffers)
            body = body.block.body
        bodies.append(inliner.visit(body))
    root = Block((), (), (), "root", seq(*bodies), alloc_buffers=tuple(allocs))
    # the caller's vars that the fused buffers and the inlined scalars use but no fused param
    # has as a plain dim: scalar params, passed as the fused call's tir_vars
    params += _unbound_vars(list(buffer_map.values()), allocs, bindings)
    prim = PrimFunc(
        tuple(params),
        BlockRealize((), const(True, "bool"), root),
        None,
        buffer_map,
        {"tir.noalias": True},
    )
    # the digits a reshape splits its flat offset into fold back under the block domains,
    # before inlining carries the divisions into a consumer's inner loop
    prim = simplify_block_indices(prim)
    return prim.with_attr(OP_PATTERN_ATTR, int(func_pattern(prim)))


class _CallSites(ExprMutator):
    def __init__(self, fused: dict[GlobalVar, tuple]):
        super().__init__()
        self.fused = fused

    def visit_call(self, call: Call):
        call = super().visit_call(call)
        hit = self.fused.get(call.op) if isinstance(call.op, GlobalVar) else None
        if hit is None:
            return call
        prim_gv, ret, scalars, shape_vars = hit
        tensors = [a for a in call.args if not isinstance(a, ShapeExpr)]
        tir_vars = _call_tir_vars(scalars, shape_vars, call)
        return call_tir(prim_gv, tensors, ret, tir_vars or None)


def _call_tir_vars(scalars: list[TirVar], shape_vars: tuple, call: Call) -> list[Any]:
    """The fused PrimFunc's scalar params in the caller's terms: a var of FuseOps' shape
    param (`shape_vars`) takes the value the call passes for it, any other is the caller's."""
    passed = [a for a in call.args if isinstance(a, ShapeExpr)]
    table = {id(v): e for v, e in zip(shape_vars, passed[0].values)} if passed else {}
    return [table.get(id(v), v) for v in scalars]


def _referenced(mod: IRModule) -> set[str]:
    class _Refs(ExprVisitor):
        def __init__(self) -> None:
            self.names: set[str] = set()

        def visit_global_var(self, gv: GlobalVar) -> None:
            self.names.add(gv.name_hint)

    refs = _Refs()
    for _, func in mod.functions_items():
        if isinstance(func, Function):
            refs.visit_expr(func)
    return refs.names


class _Index:
    """Values by the structure of a key node (structural hash, confirmed by structural_equal),
    so that equal IR met twice is worked on once."""

    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.index: dict[int, list[tuple[Any, Any]]] = {}

    def find(self, node: Any, accept: Any = None) -> tuple[list, Any]:
        """(the bucket of `node`, the value of an equal node added before, that `accept` takes
        when given, or None)."""
        bucket = self.index.setdefault(structural_hash(node, self.map_free_vars), [])
        for other, value in bucket:
            if (accept is None or accept(value)) and structural_equal(
                other, node, self.map_free_vars
            ):
                return bucket, value
        return bucket, None


def _symbolic_vars(func: Function) -> tuple[TirVar, ...]:
    """The symbolic vars `func` names, in order of first appearance."""
    found: dict[int, TirVar] = {}
    post_order_visit(func, lambda n: found.setdefault(id(n), n) if isinstance(n, TirVar) else None)
    return tuple(found.values())


def _fuse_group(
    mod: IRModule,
    gv: GlobalVar,
    func: Function,
    seen: tuple[_Index, _Index, ScalarMemo],
    out: IRModule,
) -> tuple[GlobalVar, list[TirVar]]:
    """The fused PrimFunc's GlobalVar for the primitive function `func` and its scalar params.

    A group fused before under another name (a repeated layer: the same callees on tensors of
    the same struct info over the very same symbolic vars) is not fused again: it fuses into
    the same PrimFunc, with the same scalar params. (Relax functions also compare equal when
    their struct info names other vars alike, `n` in one and `m` in the other; those are
    fused each, as their scalar params differ.) Fused PrimFuncs equal up to their free vars
    share the first one's, as BlockBuilder.add_func shares identical PrimFuncs, so that
    DefaultSchedule and lowering see the kernel once."""
    groups, twins, memo = seen
    names = _symbolic_vars(func)

    def same_vars(hit: tuple) -> bool:
        return len(hit[2]) == len(names) and all(a is b for a, b in zip(hit[2], names))

    bucket, hit = groups.find(func, same_vars)
    if hit is not None:
        return hit[0], hit[1]
    prim = fuse_primitive(mod, gv.name_hint, func, memo)
    same, prim_gv = twins.find(prim)
    if prim_gv is None:
        prim_gv = GlobalVar(gv.name_hint)
        same.append((prim, prim_gv))
        out[prim_gv] = prim
    # this function's own scalar vars (a shared twin's are others, in the same order)
    scalars = [p for p in prim.params if p not in prim.buffer_map]
    bucket.append((func, (prim_gv, scalars, names)))
    return prim_gv, scalars


def fuse_tir(mod: IRModule) -> IRModule:
    """Replace each primitive relax Function and its calls by one fused PrimFunc."""
    out = IRModule(attrs=mod.attrs)
    fused: dict[GlobalVar, tuple] = {}
    callees: set[str] = set()
    # relax groups, fused PrimFuncs (equal up to their free vars), callees' bound scalars
    seen = (_Index(map_free_vars=False), _Index(map_free_vars=True), ScalarMemo())
    for gv, func in mod.functions_items():
        if isinstance(func, Function) and func.attrs.get("Primitive"):
            prim_gv, scalars = _fuse_group(mod, gv, func, seen, out)
            shapes = [
                p.struct_info for p in func.params if isinstance(p.struct_info, ShapeStructInfo)
            ]
            shape_vars = shapes[0].values if shapes else ()
            fused[gv] = (prim_gv, func.ret_struct_info, scalars, shape_vars)
            callees.update(b.value.args[0].name_hint for b in _bindings(gv.name_hint, func))
        else:
            out[gv] = func
    if not fused:
        return mod
    for gv, func in out.functions_items():
        if isinstance(func, Function):
            new = _CallSites(fused).visit_function(func)
            if new is not func:
                out[gv] = new
    used = _referenced(out)
    for name in callees - used:
        out.remove(name)
    return out


__all__ = ["call_dims", "fuse_primitive", "fuse_tir"]
