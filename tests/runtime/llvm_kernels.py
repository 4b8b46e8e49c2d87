"""Hand-written LLVM IR kernels following docs/contracts.md §2, built into runtime Modules."""

from minitvm.runtime import CodegenResult
from minitvm.runtime.elf import SIGNATURE_SYMBOL
from minitvm.runtime.meta import signature_llvm_ir
from minitvm.target import compile_llvm_ir

# C[i] = A[i] + B[i] for i < n (n is the symbolic dim, scalars[0])
ADD_IR = r"""
define i32 @add(ptr noalias %args, ptr noalias %scalars) {
entry:
  %n = load i64, ptr %scalars
  %pa = load ptr, ptr %args
  %pb.addr = getelementptr ptr, ptr %args, i64 1
  %pb = load ptr, ptr %pb.addr
  %pc.addr = getelementptr ptr, ptr %args, i64 2
  %pc = load ptr, ptr %pc.addr
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i.next, %body]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %exit
body:
  %a.addr = getelementptr float, ptr %pa, i64 %i
  %b.addr = getelementptr float, ptr %pb, i64 %i
  %c.addr = getelementptr float, ptr %pc, i64 %i
  %a = load float, ptr %a.addr
  %b = load float, ptr %b.addr
  %sum = fadd float %a, %b
  store float %sum, ptr %c.addr
  %i.next = add i64 %i, 1
  br label %loop
exit:
  ret i32 0
}

; Y[i, j] = alpha * X[i, j] + k for X: (m, 2*m) float64, alpha float64, k int32;
; returns 1 (a failed assertion) when k < 0
define i32 @axpk(ptr noalias %args, ptr noalias %scalars) {
entry:
  %m = load i64, ptr %scalars
  %alpha.addr = getelementptr i64, ptr %scalars, i64 1
  %alpha = load double, ptr %alpha.addr
  %k.addr = getelementptr i64, ptr %scalars, i64 2
  %k = load i64, ptr %k.addr
  %bad = icmp slt i64 %k, 0
  br i1 %bad, label %fail, label %start
fail:
  ret i32 1
start:
  %kf = sitofp i64 %k to double
  %px = load ptr, ptr %args
  %py.addr = getelementptr ptr, ptr %args, i64 1
  %py = load ptr, ptr %py.addr
  %cols = mul i64 %m, 2
  %total = mul i64 %m, %cols
  br label %loop
loop:
  %i = phi i64 [0, %start], [%i.next, %body]
  %more = icmp slt i64 %i, %total
  br i1 %more, label %body, label %exit
body:
  %x.addr = getelementptr double, ptr %px, i64 %i
  %y.addr = getelementptr double, ptr %py, i64 %i
  %x = load double, ptr %x.addr
  %ax = fmul double %alpha, %x
  %y = fadd double %ax, %kf
  store double %y, ptr %y.addr
  %i.next = add i64 %i, 1
  br label %loop
exit:
  ret i32 0
}
"""

ADD_INFO = {
    "name": "add",
    "params": [
        {"name": "A", "kind": "buffer", "dtype": "float32", "shape": ["n"]},
        {"name": "B", "kind": "buffer", "dtype": "float32", "shape": ["n"]},
        {"name": "C", "kind": "buffer", "dtype": "float32", "shape": ["n"]},
    ],
    "sym_vars": [{"name": "n", "dtype": "int32", "param": 0, "dim": 0}],
}

AXPK_INFO = {
    "name": "axpk",
    "params": [
        {"name": "X", "kind": "buffer", "dtype": "float64", "shape": ["m", "m * 2"]},
        {"name": "Y", "kind": "buffer", "dtype": "float64", "shape": ["m", "m * 2"]},
        {"name": "alpha", "kind": "scalar", "dtype": "float64"},
        {"name": "k", "kind": "scalar", "dtype": "int32"},
    ],
    "sym_vars": [{"name": "m", "dtype": "int64", "param": 0, "dim": 0}],
}


def build_result(ir: str, infos, target: str = "llvm") -> CodegenResult:
    """Compile hand-written IR with the signature global codegen would add for `infos`."""
    if SIGNATURE_SYMBOL not in ir:
        ir = ir + "\n" + signature_llvm_ir(infos)
    optimised, obj = compile_llvm_ir(ir, target)
    return CodegenResult(obj, optimised, tuple(infos), target)
