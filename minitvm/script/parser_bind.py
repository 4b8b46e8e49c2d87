"""Binding names in TVMScript: stores, assignments of vars, block axes (T.axis.remap), buffers,
allocations, thread environments and launches (a base class of TIRParser)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..ir.dtype import DataType
from ..tir.buffer import Buffer
from ..tir.expr import (
    BufferLoad,
    IterType,
    IterVar,
    PrimExpr,
    Range,
    SizeVar,
    Var,
    as_expr,
)
from ..tir.stmt import (
    Allocate,
    AllocateConst,
    AttrStmt,
    BufferRegion,
    BufferStore,
    DeclBuffer,
    LetStmt,
    MatchBufferRegion,
    Stmt,
)
from . import tir as T
from .parser_common import _is_expr, _Wrap
from .parser_expr import vector_indices
from .tir import (
    AllocateConstSpec,
    AllocateSpec,
    AxisSpec,
    BufferSpec,
    EnvThreadSpec,
    LaunchSpec,
    RemapSpec,
    VarDecl,
)


def _point_region(load: BufferLoad) -> BufferRegion:
    """`A[i, j]` as a region of one element (T.match_buffer(A[i, j], ()))."""
    return BufferRegion(load.buffer, tuple(Range.from_min_extent(i, 1) for i in load.indices))


def _region_defaults(spec: BufferSpec) -> BufferSpec:
    """A matched region's shape and dtype, when not given: its extents and its buffer's dtype."""
    if not isinstance(spec.source, BufferRegion):
        return spec
    shape = spec.shape
    if shape is None:
        shape = tuple(r.extent for r in spec.source.region)
    return replace(spec, shape=shape, dtype=spec.dtype or spec.source.buffer.dtype)


def _index_dtype(shape: tuple) -> DataType:
    """The index dtype of a buffer's implicit variables: its first dimension's (as TVM)."""
    first = shape[0] if shape else None
    return first.dtype if isinstance(first, PrimExpr) else DataType("int32")


def _stride_var(buffer: str, k: int, stride: Any, index: DataType) -> Any:
    """TVM spells an unknown stride as a name (strides=["s0", "s1"]) or T.int32(): a new var."""
    if isinstance(stride, str):
        return Var(stride, index)
    if isinstance(stride, VarDecl):
        return Var(f"{buffer}_s{k}", stride.dtype)
    return stride


class _Binder:
    """Schedule methods: binding names in TVMScript: stores, assignments of vars, block axes (T.axis.remap), buffers,"""

    def store(self, target: ast.Subscript, value: Any, node: ast.AST) -> Stmt:
        buf = self.eval(target.value)
        if not isinstance(buf, Buffer):
            raise self.error(target.value, "only buffer elements can be assigned: A[i, j] = value")
        indices = self.indices(target, buf)
        sliced = any(isinstance(i, slice) for i in indices)
        if sliced:  # B[0:4] = ...: a vector store, as TVM
            indices = self.guard(node, lambda: vector_indices(buf, indices))
        value_lanes = value.dtype.lanes if isinstance(value, PrimExpr) else 1
        if sliced or value_lanes > 1:
            self.check_store_lanes(node, buf, indices, value_lanes)
        return self.guard(node, lambda: BufferStore(buf, value, indices))

    def check_store_lanes(self, node: ast.AST, buf: Buffer, indices: tuple, lanes: int) -> None:
        """TVM's rule: a stored value has (last index's lanes) x (element lanes) lanes."""
        last = indices[-1] if indices else None
        index_lanes = last.dtype.lanes if isinstance(last, PrimExpr) else 1
        want = index_lanes * buf.dtype.lanes
        if min(want, lanes) > 0 and want != lanes:
            raise self.error(
                node,
                f"cannot store a value of {lanes} lanes into '{buf.name}' at {want} lanes "
                f"({index_lanes} index lanes x {buf.dtype.lanes} element lanes); slice both "
                "sides to the same length",
            )

    def bind(self, target: ast.AST, value: Any, node: ast.AST) -> _Wrap | None:
        if not isinstance(target, ast.Name):
            raise self.error(target, "assignment targets must be names or buffer elements")
        name = target.id
        if isinstance(value, RemapSpec):
            return self.remap(node, [target], value)
        binder = _BINDERS.get(type(value))
        if binder is not None:
            return binder(self, name, value, node)
        if type(value) in (Var, SizeVar) and not self.in_scope(value):
            self.define(name, value)  # `n = te.var("n")`: a new free variable, named here
            return None
        if _is_expr(value):  # `x = expr`: a let binding
            var = Var(name, value.dtype)
            self.define(name, var)
            return _Wrap(lambda rest: LetStmt(var, value, rest))
        self.define(name, value)  # a Python value or an alias of a script object
        return None

    def bind_axis(self, name: str, spec: AxisSpec, node: ast.AST) -> None:
        if not self.blocks:
            raise self.error(node, "T.axis.* must be inside a T.block")
        value = as_expr(spec.value)
        dom = spec.dom
        if isinstance(dom, tuple | list):
            dom = self.guard(node, lambda: Range.from_min_extent(*T.min_extent(dom[0], dom[1])))
        elif not isinstance(dom, Range):
            dom = self.guard(node, lambda: Range.from_min_extent(0, as_expr(dom, like=value.dtype)))
        if not dom.extent.dtype.is_integer:
            raise self.error(
                node, f"block axis '{name}' has a {dom.extent.dtype} domain; use integer extents"
            )
        self._check_new_axis(name, node)
        var = Var(name, dom.extent.dtype)
        self.blocks[-1].iter_vars.append(IterVar(dom, var, spec.iter_type))
        self.blocks[-1].iter_values.append(value)
        self.define(name, var)

    def _check_new_axis(self, name: str, node: ast.AST) -> None:
        """A block defines each axis name once (TVM: a duplicate definition)."""
        if any(iv.var.name == name for iv in self.blocks[-1].iter_vars):
            raise self.error(node, f"block axis '{name}' is defined twice in this block")

    def remap(self, node: ast.Assign, targets: list[ast.AST], spec: RemapSpec) -> None:
        if not self.blocks:
            raise self.error(node, "T.axis.remap must be inside a T.block")
        kinds, values = spec.kinds, spec.values
        if len(kinds) != len(values):
            raise self.error(
                node.value,
                f'T.axis.remap: kinds "{kinds}" has {len(kinds)} letters but {len(values)} loop variables are given',
            )
        if len(targets) != len(values):
            raise self.error(
                node,
                f"T.axis.remap binds {len(values)} iter vars but {len(targets)} names are assigned",
            )
        kind_of = {"S": IterType.DataPar, "R": IterType.CommReduce}
        for target, kind, value in zip(targets, kinds, values):
            if kind not in kind_of:
                raise self.error(
                    node.value,
                    f"T.axis.remap: unknown iter kind {kind!r}; use 'S' (spatial) or 'R' (reduce)",
                )
            if not isinstance(value, Var) or id(value) not in self.loops:
                raise self.error(
                    node.value, f"T.axis.remap binds loop variables only; got `{value}`"
                )
            if not isinstance(target, ast.Name):
                raise self.error(target, "iter var targets must be names")
            self._check_new_axis(target.id, node)
            lo, ext = self.loops[id(value)]
            var = Var(target.id, value.dtype)
            self.blocks[-1].iter_vars.append(
                IterVar(Range.from_min_extent(lo, ext), var, kind_of[kind])
            )
            self.blocks[-1].iter_values.append(value)
            self.define(target.id, var)

    def bind_var(self, name: str, decl: VarDecl, node: ast.AST) -> None:
        self.define(name, (SizeVar if decl.is_size_var else Var)(name, decl.dtype))

    def bind_buffer(self, name: str, spec: BufferSpec, node: ast.AST) -> _Wrap | None:
        if isinstance(spec.source, BufferLoad):
            spec = replace(spec, source=_point_region(spec.source))
        if isinstance(self.scopes[-1].get(name), Buffer):
            raise self.error(
                node, f"buffer '{name}' is defined twice in this scope; give the second a new name"
            )
        buf = self.make_buffer(name, spec, node)
        self.define(name, buf)
        if spec.kind == "alloc":
            (self.blocks[-1].alloc_buffers if self.blocks else self.func.root_allocs).append(buf)
        elif spec.kind == "match" and isinstance(spec.source, BufferRegion):
            if not self.blocks:
                raise self.error(node, "T.match_buffer of a buffer region must be inside a T.block")
            self.blocks[-1].match_buffers.append(MatchBufferRegion(buf, spec.source))
        elif spec.kind == "match":
            source = spec.source
            if self.blocks or not isinstance(source, Var) or source not in self.func.params:
                raise self.error(
                    node,
                    "T.match_buffer binds a T.handle parameter of the function at its top level, "
                    "or a buffer region (A[i, 0:16]) inside a T.block",
                )
            if any(p is source for p in self.func.buffer_map):
                raise self.error(node, f"parameter '{source.name}' is already bound to a buffer")
            self.func.buffer_map[source] = buf
        elif spec.kind == "decl" and spec.data is not None:
            return _Wrap(lambda rest: DeclBuffer(buf, rest))
        elif spec.kind == "decl":  # TVM: a decl_buffer without data= allocates its storage
            scope = {"storage_scope": buf.storage_scope}
            return _Wrap(
                lambda rest: Allocate(
                    buf.data, buf.dtype, buf.shape, True, DeclBuffer(buf, rest), scope
                )
            )
        return None

    def bind_allocate(self, name: str, spec: AllocateSpec, node: ast.AST) -> _Wrap:
        var = Var(name, DataType("handle"))
        self.define(name, var)
        annotations = dict(spec.annotations or {})
        if spec.scope is not None:
            annotations = {"storage_scope": spec.scope, **annotations}
        return _Wrap(
            lambda rest: Allocate(var, spec.dtype, spec.extents, spec.condition, rest, annotations)
        )

    def bind_allocate_const(self, name: str, spec: AllocateConstSpec, node: ast.AST) -> _Wrap:
        var = Var(name, DataType("handle"))
        self.define(name, var)
        return _Wrap(
            lambda rest: AllocateConst(
                var, spec.dtype, spec.extents, spec.data, rest, spec.annotations or {}
            )
        )

    def bind_env_thread(self, name: str, spec: EnvThreadSpec, node: ast.AST) -> None:
        var = Var(name, DataType("int32"))
        self.env_threads[id(var)] = spec.tag
        self.keep.append(var)
        self.define(name, var)

    def bind_launch(self, name: str | None, spec: LaunchSpec, node: ast.AST) -> _Wrap:
        """A thread extent over the rest of the statements (TVM's T.launch_thread frame)."""
        if isinstance(spec.thread, str):
            var = Var(name or spec.thread.replace(".", "_"), DataType("int32"))
            tag = spec.thread
        elif isinstance(spec.thread, Var) and id(spec.thread) in self.env_threads:
            var, tag = spec.thread, self.env_threads[id(spec.thread)]
        else:
            raise self.error(
                node, 'T.launch_thread takes a thread tag ("threadIdx.x") or a T.env_thread var'
            )
        if name is not None:
            self.define(name, var)
        self.env_threads[id(var)] = tag  # a later T.launch_thread(var, n) launches it again
        self.keep.append(var)
        extent = as_expr(spec.extent, like=var.dtype)
        iv = self.guard(
            node, lambda: IterVar(Range.from_min_extent(0, extent), var, IterType.ThreadIndex, tag)
        )
        return _Wrap(lambda rest: AttrStmt(iv, "thread_extent", extent, rest))

    def make_buffer(self, name: str, spec: BufferSpec, node: ast.AST) -> Buffer:
        name = spec.name or name
        if isinstance(spec.source, BufferLoad):  # T.match_buffer(A[i, j], ()): one element
            spec = replace(spec, source=_point_region(spec.source))
        spec = _region_defaults(spec)
        if spec.shape is None:
            raise self.error(node, f"buffer '{name}' needs a shape")
        data = spec.data if spec.data is not None else Var(name, DataType("handle"))
        index = _index_dtype(spec.shape)
        offset = spec.elem_offset
        if offset is None:  # TVM: a region matched with an offset_factor has a variable offset
            implicit = spec.kind == "match" and spec.source is not None and spec.offset_factor
            offset = Var(f"{name}_elem_offset", index) if implicit else 0
        strides = tuple(_stride_var(name, k, s, index) for k, s in enumerate(spec.strides))
        return self.guard(
            node,
            lambda: Buffer(
                data,
                spec.dtype or "float32",
                spec.shape,
                strides,
                offset,
                name,
                spec.scope,
                spec.align,
                spec.offset_factor or 1,
                spec.axis_separators,
            ),
        )


# what `name = <spec>` means, by spec class
_BINDERS: dict[type, Callable[[Any, str, Any, ast.AST], Any]] = {
    AxisSpec: _Binder.bind_axis,
    VarDecl: _Binder.bind_var,
    BufferSpec: _Binder.bind_buffer,
    AllocateSpec: _Binder.bind_allocate,
    AllocateConstSpec: _Binder.bind_allocate_const,
    LaunchSpec: _Binder.bind_launch,
    EnvThreadSpec: _Binder.bind_env_thread,
}
