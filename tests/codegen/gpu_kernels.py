"""Hand-built GPU programs in SplitHostDevice's form (round 3 interface): a host PrimFunc of
launches and device kernels with thread_extent scopes, flat buffers and shared Allocates."""

from __future__ import annotations

from minitvm.ir.module import IRModule
from minitvm.tir.buffer import Buffer
from minitvm.tir.expr import (
    BufferLoad,
    Call,
    FloorDiv,
    IntImm,
    IterType,
    IterVar,
    Range,
    Select,
    StringImm,
    Var,
)  # fmt: skip
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    SeqStmt,
)  # fmt: skip

KERNEL_ATTRS = {"calling_conv": 2, "tir.is_global_func": True, "tir.noalias": True}


def thread(tag: str, extent, body):
    """`AttrStmt(IterVar(.., tag), "thread_extent", extent, body)` and its var."""
    v = Var(tag)
    return v, lambda inner: AttrStmt(
        IterVar(Range.from_min_extent(0, extent), v, IterType.ThreadIndex, tag), "thread_extent", extent, inner
    )


def launch(symbol: str, *args):
    return Evaluate(Call("int32", "tir.tvm_call_packed", (StringImm(symbol), *args)))


def flat(var: Var, dtype: str, extent, name: str | None = None) -> Buffer:
    return Buffer(var, dtype, (extent,), name=name or var.name)


def kernel(symbol: str, params, body, launch_params) -> PrimFunc:
    attrs = dict(KERNEL_ATTRS, global_symbol=symbol)
    attrs["tir.kernel_launch_params"] = list(launch_params)
    return PrimFunc(tuple(params), body, attrs=attrs)


def vector_add(dtype: str = "float32", block: int = 64, name: str = "vadd") -> IRModule:
    """C[i] = A[i] + B[i] for symbolic n, `block` threads per block, ceil(n / block) blocks."""
    n = Var("n")
    host_params = [Var(x, "handle") for x in "ABC"]
    host_bufs = {p: Buffer(Var(p.name + "_data", "handle"), dtype, (n,), name=p.name)
                 for p in host_params}  # fmt: skip
    kp = [Var(x, "handle") for x in "ABC"]
    kn = Var("n")
    kb = {p: flat(p, dtype, kn) for p in kp}
    bx, with_bx = thread("blockIdx.x", FloorDiv(kn + (block - 1), block), None)
    tx, with_tx = thread("threadIdx.x", block, None)
    i = bx * block + tx
    body = IfThenElse(i < kn, BufferStore(kb[kp[2]], BufferLoad(kb[kp[0]], (i,))
                                          + BufferLoad(kb[kp[1]], (i,)), (i,)))  # fmt: skip
    k = kernel(f"{name}_kernel", [*kp, kn], with_bx(with_tx(body)), ["blockIdx.x", "threadIdx.x"])
    data = [host_bufs[p].data for p in host_params]
    host_body = launch(f"{name}_kernel", *data, n, FloorDiv(n + (block - 1), block), block)
    host = PrimFunc(tuple(host_params), host_body, buffer_map=host_bufs,
                    attrs={"global_symbol": name})  # fmt: skip
    return IRModule({name: host, f"{name}_kernel": k})


def block_sum(block: int = 64, name: str = "bsum", barrier: bool = True) -> IRModule:
    """out[b] = sum of A[b*block : (b+1)*block] by a shared-memory tree reduction with barriers
    (A has nblocks * block elements; nblocks symbolic)."""
    m = Var("m")
    A, O = Var("A", "handle"), Var("out", "handle")
    hb = {A: Buffer(Var("A_data", "handle"), "float32", (m, block), name="A"),
          O: Buffer(Var("out_data", "handle"), "float32", (m,), name="out")}  # fmt: skip
    kA, kO = Var("A", "handle"), Var("out", "handle")
    bA, bO = flat(kA, "float32", 1), flat(kO, "float32", 1)
    sh = Var("red_shared", "handle")
    bS = flat(sh, "float32", block, "red_shared")
    bx, with_bx = thread("blockIdx.x", m, None)
    tx, with_tx = thread("threadIdx.x", block, None)
    sync = Evaluate(Call("int32", "tir.tvm_storage_sync", (StringImm("shared"),)))
    steps = [BufferStore(bS, BufferLoad(bA, (bx * block + tx,)), (tx,))]
    if barrier:
        steps.append(sync)
    half = block // 2
    while half >= 1:
        steps.append(IfThenElse(tx < half, BufferStore(
            bS, BufferLoad(bS, (tx,)) + BufferLoad(bS, (tx + half,)), (tx,))))  # fmt: skip
        if barrier:
            steps.append(sync)
        half //= 2
    steps.append(IfThenElse(tx == 0, BufferStore(bO, BufferLoad(bS, (IntImm("int32", 0),)), (bx,))))
    body = Allocate(sh, "float32", (block,), IntImm("bool", 1), SeqStmt(tuple(steps)),
                    annotations={"storage_scope": "shared"})  # fmt: skip
    k = kernel(f"{name}_kernel", [kA, kO], with_bx(with_tx(body)), ["blockIdx.x", "threadIdx.x"])
    host_body = launch(f"{name}_kernel", hb[A].data, hb[O].data, m, block)
    host = PrimFunc((A, O), host_body, buffer_map=hb, attrs={"global_symbol": name})
    return IRModule({name: host, f"{name}_kernel": k})


def expr_kernel(make_value, in_dtype: str, out_dtype: str, n: int = 37, name: str = "ew"):
    """out[i] = make_value(A[i], B[i]) over n elements: one block of n threads."""
    A, B, O = (Var(x, "handle") for x in ("A", "B", "out"))
    hb = {A: Buffer(Var("A_data", "handle"), in_dtype, (n,), name="A"),
          B: Buffer(Var("B_data", "handle"), in_dtype, (n,), name="B"),
          O: Buffer(Var("out_data", "handle"), out_dtype, (n,), name="out")}  # fmt: skip
    kA, kB, kO = (Var(x, "handle") for x in ("A", "B", "out"))
    bA, bB, bO = flat(kA, in_dtype, n), flat(kB, in_dtype, n), flat(kO, out_dtype, n)
    tx, with_tx = thread("threadIdx.x", n, None)
    body = BufferStore(bO, make_value(BufferLoad(bA, (tx,)), BufferLoad(bB, (tx,))), (tx,))
    k = kernel(f"{name}_kernel", [kA, kB, kO], with_tx(body), ["threadIdx.x"])
    host = PrimFunc((A, B, O), launch(f"{name}_kernel", hb[A].data, hb[B].data, hb[O].data, n),
                    buffer_map=hb, attrs={"global_symbol": name})  # fmt: skip
    return IRModule({name: host, f"{name}_kernel": k})


__all__ = ["For", "ForKind", "Select", "block_sum", "expr_kernel", "vector_add"]
