"""`te.extern`: a stage whose body is a statement you write (often a `call_packed`).

`fcompute(ins, outs)` receives one buffer per input and per output and returns the statement
(or an expression, e.g. a `tir.call_packed(...)`, evaluated for its effect). In the PrimFunc the
extern becomes one block named after it that reads its inputs and writes its outputs whole;
the placeholder buffers of `fcompute` are replaced by the function's real buffers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..error import TEError
from ..ir.node import FrozenDict, node
from ..tir.buffer import Buffer, decl_buffer
from ..tir.expr import IntImm, PrimExpr, Var
from ..tir.functor import Mutator
from ..tir.stmt import Block, BlockRealize, BufferRegion, Evaluate, Stmt
from .operation import _shape, _TemplatedOp
from .tensor import Tensor


@node
class ExternOp(_TemplatedOp):
    """Outputs written by `body`, a statement over `input_placeholders`/`output_placeholders`."""

    name: str
    tag: str
    attrs: FrozenDict
    inputs: tuple
    input_placeholders: tuple
    output_placeholders: tuple
    body: Any

    @property
    def _templates(self) -> tuple:
        return self.output_placeholders

    @property
    def input_tensors(self) -> list[Tensor]:
        return list(self.inputs)

    def prepare_lowering(self, ctx: Any, allocs: list) -> set[int]:
        return set()

    def lower_into(self, ctx: Any, order: list) -> Stmt:
        """The block that runs the body on the function's buffers."""
        real = [ctx.buffers[t] for t in self.inputs]
        real += [ctx.buffers[self.output(k)] for k in range(self.num_outputs)]
        fake = list(self.input_placeholders) + list(self.output_placeholders)
        for f, r in zip(fake, real):
            _check_layout(self.name, f)
        body = _Rebind(fake, real).visit(self.body)
        reads = tuple(BufferRegion.full_region(b) for b in real[: len(self.inputs)])
        writes = tuple(BufferRegion.full_region(b) for b in real[len(self.inputs) :])
        ctx.block_of[id(self)] = ctx.block_names.get(self.name)
        block = Block((), reads, writes, ctx.block_of[id(self)], body, None, annotations=self.attrs)
        return BlockRealize((), True, block)


def _check_layout(op_name: str, buf: Buffer) -> None:
    """The real buffers are compact and start at element 0; a placeholder must say the same."""
    offset_ok = isinstance(buf.elem_offset, IntImm) and buf.elem_offset.value == 0
    if buf.strides or not offset_ok:
        raise TEError(
            f"extern '{op_name}': buffer '{buf.name}' declares strides or an element offset; "
            "minitvm binds extern buffers to compact tensors only, so declare it without them"
        )


class _Rebind(Mutator):
    """Placeholder buffers (and their data pointers) → the PrimFunc's buffers."""

    def __init__(self, fake: list[Buffer], real: list[Buffer]) -> None:
        super().__init__()
        self.buffers = {id(f): r for f, r in zip(fake, real)}
        self.data = {id(f.data): r.data for f, r in zip(fake, real)}
        self.keep = fake

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return self.buffers.get(id(b), b)

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.data.get(id(v), v)


def _placeholders(given: Any, tensors: list, what: str, name: str) -> list[Buffer]:
    if given is None:
        return [
            decl_buffer(t.shape, t.dtype, t.name if hasattr(t, "name") else name) for t in tensors
        ]
    given = list(given)
    if len(given) != len(tensors) or not all(isinstance(b, Buffer) for b in given):
        raise TEError(
            f"extern '{name}': {what} must be a list of {len(tensors)} tvm.tir.decl_buffer's, "
            "one per tensor"
        )
    return given


class _Out:
    def __init__(self, shape: tuple, dtype: str, name: str) -> None:
        self.shape, self.dtype, self.name = shape, dtype, name


def extern(
    shape: Any,
    inputs: list,
    fcompute: Callable,
    name: str = "extern",
    dtype: Any = None,
    in_buffers: list | None = None,
    out_buffers: list | None = None,
    tag: str = "",
    attrs: dict | None = None,
) -> Tensor | list[Tensor]:
    """Tensors computed by a statement you build: `fcompute(ins, outs)` over buffers.

    Example: `C = te.extern((n, m), [A, B], lambda ins, outs: tvm.tir.call_packed(
    "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], False, False), name="C")`.
    """
    multi = isinstance(shape, list) and shape and isinstance(shape[0], tuple | list)
    shapes = [_shape(s, f"extern '{name}'") for s in (shape if multi else [shape])]
    inputs = list(inputs)
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TEError(f"extern '{name}': input {k} is {t!r}; inputs must be te tensors")
    dtypes = dtype if isinstance(dtype, list | tuple) else [dtype] * len(shapes)
    if len(dtypes) != len(shapes):
        raise TEError(f"extern '{name}': {len(dtypes)} dtypes for {len(shapes)} outputs")
    default = inputs[0].dtype if inputs else "float32"
    outs_spec = [
        _Out(s, d or default, name if len(shapes) == 1 else f"{name}_v{k}")
        for k, (s, d) in enumerate(zip(shapes, dtypes))
    ]
    ins = _placeholders(in_buffers, inputs, "in_buffers", name)
    outs = _placeholders(out_buffers, outs_spec, "out_buffers", name)
    body = fcompute(ins, outs)
    if isinstance(body, PrimExpr):
        body = Evaluate(body)
    if not isinstance(body, Stmt):
        raise TEError(
            f"extern '{name}': fcompute returned {body!r}; return a statement "
            "(tvm.tir.ir_builder's ib.get()) or an expression such as tvm.tir.call_packed(...)"
        )
    op = ExternOp(name, tag, FrozenDict(attrs or {}), tuple(inputs), tuple(ins), tuple(outs), body)
    return list(op.outputs) if multi else op.output(0)
