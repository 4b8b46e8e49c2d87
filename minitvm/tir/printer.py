"""TVMScript printer for TIR: expressions print as Python, PrimFuncs as `@T.prim_func` source.

The dialect is the one `minitvm.script` parses, so `from_source(func.script())` gives back a
structurally equal function. `func.script(highlight={stmt: "message"})` (or a list of nodes)
marks those statements' lines with `# <--- here` for error messages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..ir.module import BaseFunc, IRModule
from ..ir.node import Node, register_printer
from ..ir.structural import structural_equal
from .analysis.blocks import contains_block
from .analysis.region import infer_access_regions
from .buffer import Buffer
from .expr import (
    IntImm,
    IterType,
    IterVar,
    PrimExpr,
    Range,
    SizeVar,
    Var,
)
from .function import PrimFunc
from .functor import Visitor, allows_deep_recursion, post_order_visit
from .printer_expr import _ExprPrinter, _Names, _q, _range_end, _sanitize
from .stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    MatchBufferRegion,
    SeqStmt,
    Stmt,
    While,
    regions_over_sources,
)

INDENT = "    "
HEADER_T = "# from minitvm.script import tir as T"
HEADER_I = "# from minitvm.script import ir as I"

_FOR_KIND_NAME = {
    ForKind.SERIAL: "T.serial",
    ForKind.PARALLEL: "T.parallel",
    ForKind.VECTORIZED: "T.vectorized",
    ForKind.UNROLLED: "T.unroll",
    ForKind.THREAD_BINDING: "T.thread_binding",
}
_AXIS_KIND = {
    IterType.DataPar: ("S", "T.axis.spatial"),
    IterType.CommReduce: ("R", "T.axis.reduce"),
    IterType.Ordered: ("", "T.axis.scan"),
    IterType.Opaque: ("", "T.axis.opaque"),
}
_BUFFER_DEFAULTS = {
    "strides": (),
    "storage_scope": "global",
    "data_alignment": 64,
    "offset_factor": 1,
    "axis_separators": (),
}
_BUFFER_KWARG = {
    "strides": "strides",
    "elem_offset": "elem_offset",
    "storage_scope": "scope",
    "data_alignment": "align",
    "offset_factor": "offset_factor",
    "axis_separators": "axis_separators",
}


# ----------------------------------------------------------------------------- names


# ----------------------------------------------------------------------------- expressions


# ----------------------------------------------------------------------------- statements


def _regions_equal(a: tuple, b: tuple) -> bool:
    if len(a) != len(b):
        return False
    return all(x.buffer is y.buffer and structural_equal(x.region, y.region) for x, y in zip(a, b))


# ----------------------------------------------------------------------------- statements


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.dtype.is_bool and e.value == 1


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _buffer_is_plain(buf: Buffer) -> bool:
    return all(getattr(buf, f) == v for f, v in _BUFFER_DEFAULTS.items()) and (
        isinstance(buf.elem_offset, IntImm)
        and buf.elem_offset.value == 0
        and buf.elem_offset.dtype == "int32"
    )


class _FreeVars(Visitor):
    """Vars used but defined nowhere in a function: symbolic shapes and other free sizes."""

    def __init__(self) -> None:
        self.seen: dict[int, Var] = {}
        self.defined: set[int] = set()

    def visit_Var(self, v: Var) -> None:
        self.seen.setdefault(id(v), v)

    def _binding(self, n: For | IterVar | LetStmt | Allocate | AllocateConst) -> None:
        """A loop, iterator, let or allocation defines its variable (its `_def_fields`)."""
        self.defined.update(id(getattr(n, f)) for f in type(n)._def_fields)
        self.generic_visit(n)

    visit_For = visit_IterVar = visit_LetStmt = visit_Allocate = visit_AllocateConst = _binding

    def visit_Buffer(self, b: Buffer) -> None:
        self.defined.add(id(b.data))
        self.generic_visit(b)

    def visit_MatchBufferRegion(self, m: MatchBufferRegion) -> None:
        own = (m.buffer.elem_offset, *m.buffer.strides)
        self.defined.update(id(v) for v in own if isinstance(v, Var))
        self.generic_visit(m)

    def free(self) -> list[Var]:
        return [v for k, v in self.seen.items() if k not in self.defined]


class TIRPrinter(_ExprPrinter):
    """Prints TIR statements and PrimFuncs as TVMScript lines."""

    def __init__(self, names: _Names | None = None, highlight: Any = None) -> None:
        super().__init__(names)
        self.lines: list[str] = []
        self.depth = 0
        self.marks = _normalize_marks(highlight)
        self.loops: dict[int, For] = {}

    # -- output
    def emit(self, text: str, node: Any = None) -> None:
        line = INDENT * self.depth + text
        if node is not None and id(node) in self.marks:
            msg = self.marks[id(node)][1]
            line += "  # <--- here" + (f": {msg}" if msg else "")
        self.lines.append(line)

    def body(self, s: Stmt | None) -> None:
        self.depth += 1
        if s is None:
            self.emit("pass")
        else:
            self.stmt(s)
        self.depth -= 1

    def stmt(self, s: Any) -> None:
        # iterate SeqStmt and let-like chains instead of recursing on them
        work = [s]
        while work:
            cur = work.pop()
            if isinstance(cur, SeqStmt):
                work.extend(reversed(cur.seq))
                continue
            for klass in type(cur).__mro__:
                fn = _STMT_TABLE.get(klass)
                if fn is not None:
                    nxt = fn(self, cur)
                    if nxt is not None:
                        work.append(nxt)
                    break
            else:
                self.emit(f"# unprintable {type(cur).__name__}", cur)

    # -- statements (each returns a trailing statement printed at the same depth, or None)
    def _store(self, s: BufferStore) -> None:
        self.emit(
            f"{self.names.get(s.buffer)}[{self.indices(s.indices)}] = {self.expr(s.value)}", s
        )

    def _evaluate(self, s: Evaluate) -> None:
        self.emit(f"T.evaluate({self.expr(s.value)})", s)

    def _if(self, s: IfThenElse) -> None:
        self.emit(f"if {self.expr(s.condition)}:", s)
        self.body(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.body(s.else_case)

    def _while(self, s: While) -> None:
        self.emit(f"while {self.expr(s.condition)}:", s)
        self.body(s.body)

    def _let_stmt(self, s: LetStmt) -> Stmt:
        value = self.expr(s.value)
        name = self.names.fresh(s.var, s.var.name)
        self.emit(f"{name}: T.{s.var.dtype} = {value}", s)
        return s.body

    def _assert(self, s: AssertStmt) -> Stmt:
        self.emit(f"assert {self.expr(s.condition)}, {_q(s.message)}", s)
        return s.body

    def _attr(self, s: AttrStmt) -> Stmt | None:
        if _is_launch(s):
            return self._launch(s)
        self.emit(f"with T.attr({self._value(s.node)}, {_q(s.attr_key)}, {self.expr(s.value)}):", s)
        self.body(s.body)

    def _launch(self, s: AttrStmt) -> Stmt:
        """`tx = T.launch_thread("threadIdx.x", n)`; a var launched again: `T.launch_thread(tx, n)`."""
        var = s.node.var
        known = self.names.by_id.get(id(var))
        if known is not None and known in self.names.used:
            self.emit(f"T.launch_thread({known}, {self.expr(s.value)})", s)
        else:
            name = self.names.fresh(var, var.name)
            self.emit(f"{name} = T.launch_thread({_q(s.node.thread_tag)}, {self.expr(s.value)})", s)
        return s.body

    def _allocate_const(self, s: AllocateConst) -> Stmt:
        name = self.names.fresh(s.buffer_var, s.buffer_var.name)
        data = "[" + ", ".join(_number(v) for v in s.data) + "]"
        extents = "[" + ", ".join(self.expr(e) for e in s.extents) + "]"
        extra = f", annotations={self._value(dict(s.annotations))}" if s.annotations else ""
        self.emit(f'{name} = T.allocate_const({data}, "{s.dtype}", {extents}{extra})', s)
        return s.body

    def _allocate(self, s: Allocate) -> Stmt:
        decl = _allocated_decl(s)
        if decl is not None:  # TVM's one-line form; other uses of the pointer print as `B.data`
            name = self.names.get(decl.buffer)
            self.names.by_id[id(s.buffer_var)] = f"{name}.data"
            self.names.keep.append(s.buffer_var)
            self.emit(f"{name} = {self.buffer_decl('T.decl_buffer', decl.buffer)}", s)
            declared = _declared_buffers(decl.body) | {id(decl.buffer)}
            for buf in _buffers_over(s.buffer_var, decl.body):
                if id(buf) not in declared:
                    self.emit(
                        f"{self.names.get(buf)} = {self.buffer_decl('T.Buffer', buf, data=True)}"
                    )
            return decl.body
        declared = _declared_buffers(s.body)
        views = [b for b in _buffers_over(s.buffer_var, s.body) if id(b) not in declared]
        for buf in views:  # buffers keep their own names; the pointer gets a suffix if needed
            self.names.get(buf)
        name = self.names.fresh(s.buffer_var, s.buffer_var.name)
        extents = "[" + ", ".join(self.expr(e) for e in s.extents) + "]"
        args = [extents, f'"{s.dtype}"']
        annotations = dict(s.annotations)
        if "storage_scope" in annotations:
            args.append(_q(annotations.pop("storage_scope")))
        if not _is_true(s.condition):
            args.append(f"condition={self.expr(s.condition)}")
        if annotations:
            args.append(f"annotations={self._value(annotations)}")
        self.emit(f"{name} = T.allocate({', '.join(args)})", s)
        for buf in views:
            self.emit(f"{self.names.get(buf)} = {self.buffer_decl('T.Buffer', buf, data=True)}")
        return s.body

    def _decl_buffer(self, s: DeclBuffer) -> Stmt:
        name = self.names.get(s.buffer)
        self.emit(f"{name} = {self.buffer_decl('T.decl_buffer', s.buffer, data=True)}", s)
        return s.body

    def _for(self, s: For) -> None:
        loops = [s]
        while _grid_foldable(loops[-1]) and isinstance(loops[-1].body, For):
            nxt = loops[-1].body
            if not _grid_foldable(nxt) or id(nxt) in self.marks or _uses_loop_vars(nxt, loops):
                break
            loops.append(nxt)
        for loop in loops:
            self.loops[id(loop.loop_var)] = loop
        names = ", ".join(self.names.fresh(lp.loop_var, lp.loop_var.name) for lp in loops)
        if len(loops) > 1:
            extents = ", ".join(self.expr(lp.extent) for lp in loops)
            self.emit(f"for {names} in T.grid({extents}):", s)
        else:
            self.emit(f"for {names} in {self.loop_iter(s)}:", s)
        self.body(loops[-1].body)
        self.names.release(lp.loop_var for lp in loops)

    def loop_iter(self, s: For) -> str:
        if _grid_foldable(s):
            return f"range({self.expr(s.extent)})"
        args = (
            [self.expr(s.extent)]
            if _is_zero(s.min)
            else [self.expr(s.min), self.expr(_range_end(Range.from_min_extent(s.min, s.extent)))]
        )
        if s.kind == ForKind.THREAD_BINDING:
            tag = s.thread_binding.thread_tag if s.thread_binding is not None else ""
            args.append(f"thread={_q(tag)}")
        if s.annotations:
            args.append(f"annotations={self._value(dict(s.annotations))}")
        return f"{_FOR_KIND_NAME[s.kind]}({', '.join(args)})"

    def _block_realize(self, s: BlockRealize) -> None:
        block = s.block
        self.emit(f'with T.block("{block.name_hint}"):', s if id(s) in self.marks else block)
        self.depth += 1
        self.block_iters(s)
        if not _is_true(s.predicate):
            self.emit(f"T.where({self.expr(s.predicate)})")
        reads, writes = (regions_over_sources(block, r) for r in infer_access_regions(block))
        if not (_regions_equal(reads, block.reads) and _regions_equal(writes, block.writes)):
            self.emit(f"T.reads({', '.join(self.region(r) for r in block.reads)})")
            self.emit(f"T.writes({', '.join(self.region(r) for r in block.writes)})")
        self.block_header(block)
        if block.init is not None:
            self.emit("with T.init():")
            self.body(block.init)
        self.stmt(block.body)
        self.depth -= 1
        self.names.release([iv.var for iv in block.iter_vars] + list(block.alloc_buffers))

    def block_header(self, block: Block) -> None:
        if block.annotations:
            self.emit(f"T.block_attr({self._value(dict(block.annotations))})")
        for buf in block.alloc_buffers:
            self.emit(
                f"{self.names.fresh(buf, buf.name)} = {self.buffer_decl('T.alloc_buffer', buf)}"
            )
        for mb in block.match_buffers:
            name = self.names.fresh(mb.buffer, mb.buffer.name)
            self.emit(
                f"{name} = T.match_buffer({self.region(mb.source)}, {self.buffer_args(mb.buffer, matched=True)})"
            )

    def block_iters(self, s: BlockRealize) -> None:
        ivs = s.block.iter_vars
        if not ivs:
            return
        if len(ivs) > 1 and self._remappable(s):
            names = [self.names.fresh(iv.var, iv.var.name) for iv in ivs]
            kinds = "".join(_AXIS_KIND[iv.iter_type][0] for iv in ivs)
            values = ", ".join(self.expr(v) for v in s.iter_values)
            self.emit(f'{", ".join(names)} = T.axis.remap("{kinds}", [{values}])')
            return
        for iv, value in zip(ivs, s.iter_values):
            dom = (
                self.expr(iv.dom.extent)
                if _is_zero(iv.dom.min)
                else self.tuple_expr((iv.dom.min, _range_end(iv.dom)))
            )
            value_text = self.expr(value)
            name = self.names.fresh(iv.var, iv.var.name)
            self.emit(f"{name} = {_AXIS_KIND[iv.iter_type][1]}({dom}, {value_text})")

    def _remappable(self, s: BlockRealize) -> bool:
        seen = set()
        for iv, value in zip(s.block.iter_vars, s.iter_values):
            loop = self.loops.get(id(value)) if isinstance(value, Var) else None
            if loop is None or id(value) in seen or not _AXIS_KIND[iv.iter_type][0]:
                return False
            seen.add(id(value))
            if iv.var.dtype != value.dtype or iv.dom is None:
                return False
            if not (
                structural_equal(iv.dom.min, loop.min)
                and structural_equal(iv.dom.extent, loop.extent)
            ):
                return False
        return True

    # -- buffers
    def buffer_args(self, buf: Buffer, matched: bool = False) -> str:
        """Arguments of a buffer declaration; `matched`: a block's T.match_buffer, whose
        variable offset and strides the parser creates (printed as offset_factor= and names)."""
        shape = self.tuple_expr(buf.shape)
        args = [shape, f'"{buf.dtype}"']
        own_offset = matched and self._owned(buf, buf.elem_offset, "elem_offset")
        for f, kw in _BUFFER_KWARG.items():
            value = getattr(buf, f)
            if f == "elem_offset":
                if own_offset or (
                    isinstance(value, IntImm) and value.value == 0 and value.dtype == "int32"
                ):
                    continue
            elif f == "offset_factor" and own_offset:
                pass  # printed even when 1: it is what makes the parser create the offset var
            elif value == _BUFFER_DEFAULTS[f]:
                continue
            if f == "strides" and matched:
                text = self._matched_strides(buf)
            else:
                text = self.tuple_expr(value) if isinstance(value, tuple) else self._value(value)
            args.append(f"{kw}={text}")
        if self.names.get(buf) != buf.name:
            args.append(f"name={_q(buf.name)}")
        return ", ".join(args)

    def _owned(self, buf: Buffer, v: Any, field: str) -> bool:
        """Whether var `v` is `buf`'s own (named `B.elem_offset` / `B.strides[k]`)."""
        return isinstance(v, Var) and self.names.get(v).startswith(f"{self.names.get(buf)}.{field}")

    def _matched_strides(self, buf: Buffer) -> str:
        """Strides of a matched buffer; its own stride vars print as new names ("B_s0")."""
        name = self.names.get(buf)
        items = [
            _q(f"{name}_s{k}") if self._owned(buf, st, "strides") else self.expr(st)
            for k, st in enumerate(buf.strides)
        ]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def buffer_decl(self, fn: str, buf: Buffer, data: bool = False) -> str:
        extra = f", data={self.names.get(buf.data)}" if data else ""
        return f"{fn}({self.buffer_args(buf)}{extra})"

    # -- functions
    def prim_func(
        self, func: PrimFunc, name: str | None = None, decorate: str = "@T.prim_func"
    ) -> None:
        symbol = func.attrs.get("global_symbol")
        fname = _sanitize(name or symbol or "main")
        attrs = {k: v for k, v in func.attrs.items() if not (k == "global_symbol" and v == fname)}
        private = symbol is None
        self.emit(decorate + ("(private=True)" if private else ""))
        # names: param buffers first (they keep their names), then params, then free vars
        plain = {}
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None:
                self.names.fresh(buf, buf.name)
                earlier = func.params[: func.params.index(p)]
                plain[id(p)] = _buffer_is_plain(buf) and _shape_vars_ok(buf, earlier)
        params = []
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None and plain[id(p)]:
                params.append(f"{self.names.get(buf)}: {self.buffer_decl('T.Buffer', buf)}")
                self.names.by_id[id(p)] = self.names.get(buf)
                self.names.keep.append(p)
            elif buf is not None:
                hint = "var_" + buf.name if p.name == buf.name else p.name
                params.append(f"{self.names.fresh(p, hint)}: T.handle")
            else:
                params.append(f"{self.names.fresh(p, p.name)}: T.{p.dtype}")
        self.emit(f"def {fname}({', '.join(params)}):")
        self.depth += 1
        if attrs:
            self.emit(f"T.func_attr({self._value(attrs)})")
        for v in _free_vars(func):
            size = ", is_size_var=True" if isinstance(v, SizeVar) else ""
            self.emit(f"{self.names.fresh(v, v.name)} = T.{v.dtype}({size.lstrip(', ')})")
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None and not plain[id(p)]:
                self.emit(
                    f"{self.names.get(buf)} = T.match_buffer({self.names.get(p)}, {self.buffer_args(buf)})"
                )
        self.func_body(func.body)
        self.depth -= 1

    def func_body(self, body: Stmt) -> None:
        if isinstance(body, BlockRealize) and _is_implicit_root(body):
            self.emit('# with T.block("root"):', body.block if id(body) not in self.marks else body)
            self.block_header(body.block)
            self.stmt(body.block.body)
        else:
            self.stmt(body)


def _grid_foldable(s: For) -> bool:
    return (
        s.kind == ForKind.SERIAL
        and _is_zero(s.min)
        and not s.annotations
        and s.thread_binding is None
    )


def _is_launch(s: AttrStmt) -> bool:
    """A thread extent the parser's T.launch_thread re-creates exactly."""
    iv = s.node
    return (
        s.attr_key == "thread_extent"
        and isinstance(iv, IterVar)
        and iv.iter_type == IterType.ThreadIndex
        and bool(iv.thread_tag)
        and iv.dom is not None
        and _is_zero(iv.dom.min)
        and structural_equal(iv.dom.extent, s.value)
    )


def _number(v: Any) -> str:
    """A Python number literal that parses back to the same value (inf/nan via float(...))."""
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return f'float("{v}")'
    return repr(v)


def _uses_loop_vars(loop: For, outer: list[For]) -> bool:
    """Whether `loop`'s extent uses one of `outer`'s vars (T.grid cannot express that)."""
    names = {id(o.loop_var) for o in outer}
    found = False

    def check(n: Any) -> None:
        nonlocal found
        found = found or (isinstance(n, Var) and id(n) in names)

    post_order_visit(loop.extent, check)
    return found


def _shape_vars_ok(buf: Buffer, params: tuple) -> bool:
    """Shapes in a `T.Buffer(...)` annotation may use only constants and earlier scalar params."""
    allowed = {id(p) for p in params}
    ok = True

    def check(n: Any) -> None:
        nonlocal ok
        if isinstance(n, Var) and id(n) not in allowed:
            ok = False

    post_order_visit(buf.shape, check)
    return ok


def _free_vars(func: PrimFunc) -> list[Var]:
    v = _FreeVars()
    v.defined.update(id(p) for p in func.params)
    for buf in func.buffer_map.values():
        v.visit(buf)
    v.visit(func.body)
    return v.free()


def _allocated_decl(s: Allocate) -> DeclBuffer | None:
    """The DeclBuffer that `s` exists for, when `T.decl_buffer(shape, dtype, scope=)` alone
    re-creates both (the parser turns a data-less decl_buffer into Allocate + DeclBuffer)."""
    decl = s.body
    if not isinstance(decl, DeclBuffer) or decl.buffer.data is not s.buffer_var:
        return None
    buf = decl.buffer
    same = (
        _is_true(s.condition)
        and dict(s.annotations) == {"storage_scope": buf.storage_scope}
        and s.dtype == buf.dtype
        and structural_equal(tuple(s.extents), tuple(buf.shape))
    )
    return decl if same else None


def _declared_buffers(body: Stmt) -> set[int]:
    """ids of the buffers a DeclBuffer inside `body` declares (they print there, not earlier)."""
    found: set[int] = set()

    def check(n: Any) -> None:
        if isinstance(n, DeclBuffer):
            found.add(id(n.buffer))

    post_order_visit(body, check)
    return found


def _buffers_over(data: Var, body: Stmt) -> list[Buffer]:
    found: dict[int, Buffer] = {}

    def check(n: Any) -> None:
        if isinstance(n, Buffer) and n.data is data:
            found.setdefault(id(n), n)

    post_order_visit(body, check)
    return list(found.values())


def _is_implicit_root(s: BlockRealize) -> bool:
    """A root block with nothing to say prints as a `# with T.block("root"):` comment."""
    b = s.block
    if b.name_hint != "root" or b.iter_vars or b.reads or b.writes or b.init is not None:
        return False
    if b.match_buffers or b.annotations or not _is_true(s.predicate):
        return False
    # the parser re-creates an implicit root only when the body has blocks or allocations
    return bool(b.alloc_buffers) or contains_block(b.body)


def _normalize_marks(highlight: Any) -> dict[int, tuple[Any, str]]:
    if highlight is None:
        return {}
    if isinstance(highlight, Mapping):
        items = list(highlight.items())
    elif isinstance(highlight, Node):
        items = [(highlight, "")]
    else:
        items = [(h, "") for h in highlight]
    marks = {}
    for n, msg in items:
        marks[id(n)] = (n, msg or "")
        if isinstance(n, BlockRealize):  # marking a realize marks its block line and vice versa
            marks[id(n.block)] = (n.block, msg or "")
    return marks


_STMT_TABLE: dict[type, Callable[[TIRPrinter, Any], Stmt | None]] = {
    BufferStore: TIRPrinter._store,
    Evaluate: TIRPrinter._evaluate,
    IfThenElse: TIRPrinter._if,
    While: TIRPrinter._while,
    LetStmt: TIRPrinter._let_stmt,
    AssertStmt: TIRPrinter._assert,
    AttrStmt: TIRPrinter._attr,
    Allocate: TIRPrinter._allocate,
    AllocateConst: TIRPrinter._allocate_const,
    DeclBuffer: TIRPrinter._decl_buffer,
    For: TIRPrinter._for,
    BlockRealize: TIRPrinter._block_realize,
}


# ----------------------------------------------------------------------------- entry points


def _mark_kw(kwargs: Mapping[str, Any]) -> Any:
    return kwargs.get("highlight", kwargs.get("mark"))


@allows_deep_recursion
def print_expr(e: PrimExpr, **kwargs: Any) -> str:
    return _ExprPrinter().expr(e)


@allows_deep_recursion
def print_stmt(s: Stmt, **kwargs: Any) -> str:
    p = TIRPrinter(highlight=_mark_kw(kwargs))
    if isinstance(s, Block):
        s = BlockRealize((), True, s) if not s.iter_vars else s
        if isinstance(s, Block):  # a bare block with iter vars: print its parts
            p.emit(f'with T.block("{s.name_hint}"):', s)
            p.body(s.body)
            return "\n".join(p.lines)
    p.stmt(s)
    return "\n".join(p.lines)


@allows_deep_recursion
def print_prim_func(func: PrimFunc, **kwargs: Any) -> str:
    p = TIRPrinter(highlight=_mark_kw(kwargs))
    p.prim_func(func, name=kwargs.get("name"))
    header = [HEADER_T, ""] if kwargs.get("show_header", True) else []
    return "\n".join(header + p.lines)


def print_buffer(buf: Buffer, **kwargs: Any) -> str:
    p = TIRPrinter()
    return f"{p.names.fresh(buf, buf.name)}: {p.buffer_decl('T.Buffer', buf)}"


def print_misc(n: Node, **kwargs: Any) -> str:
    """Ranges, regions, iter vars: printed as the value they denote in TVMScript."""
    p = _ExprPrinter()
    if isinstance(n, IterVar):
        kind = _AXIS_KIND.get(n.iter_type, ("", f"T.iter_var_{n.iter_type.name}"))[1]
        dom = "None" if n.dom is None else p._value(n.dom)
        return f"{p.names.get(n.var)} = {kind}({dom})" + (
            f"  # thread {n.thread_tag!r}" if n.thread_tag else ""
        )
    if isinstance(n, MatchBufferRegion):
        return f"{p.names.get(n.buffer)} = T.match_buffer({p.region(n.source)})"
    return p._value(n)


# Function printers by function class: IRModule printing dispatches here (relax registers later).
_FUNC_PRINTERS: dict[type, Callable[[BaseFunc, str, Any], list[str]]] = {}


def register_function_printer(cls: type, fn: Callable[[BaseFunc, str, Any], list[str]]) -> None:
    """Make `IRModule.script()` print functions of class `cls` with `fn(func, name, highlight) -> lines`."""
    _FUNC_PRINTERS[cls] = fn


def _prim_func_lines(func: PrimFunc, name: str, highlight: Any) -> list[str]:
    p = TIRPrinter(highlight=highlight)
    p.prim_func(func, name=name)
    return p.lines


register_function_printer(PrimFunc, _prim_func_lines)


@allows_deep_recursion
def print_ir_module(mod: IRModule, **kwargs: Any) -> str:
    highlight = _mark_kw(kwargs)
    out = [HEADER_I, HEADER_T, "", "@I.ir_module", "class Module:"]
    if mod.attrs:
        out.append(INDENT + f"I.module_attrs({_ExprPrinter()._value(dict(mod.attrs))})")
    items = mod.functions_items()
    for i, (gv, func) in enumerate(items):
        fn = next((_FUNC_PRINTERS[k] for k in type(func).__mro__ if k in _FUNC_PRINTERS), None)
        if fn is None:
            lines = [f"# {gv.name_hint}: no printer for {type(func).__name__}"]
        else:
            lines = fn(func, gv.name_hint, highlight)
        if i:
            out.append("")
        out.extend(INDENT + line if line else line for line in lines)
    if not items:
        out.append(INDENT + "pass")
    return "\n".join(out)


register_printer(PrimExpr, print_expr)
register_printer(Stmt, print_stmt)
register_printer(PrimFunc, print_prim_func)
register_printer(Buffer, print_buffer)
register_printer(Range, print_misc)
register_printer(BufferRegion, print_misc)
register_printer(IterVar, print_misc)
register_printer(MatchBufferRegion, print_misc)
register_printer(IRModule, print_ir_module)

__all__ = [
    "TIRPrinter",
    "print_expr",
    "print_ir_module",
    "print_prim_func",
    "print_stmt",
    "register_function_printer",
]
