"""Object emission runs without loop strength reduction (codegen/llvm.py `_emit_object`) and
leaves LLVM's global options as it found them for other llvmlite users in the process."""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np

import minitvm as tvm
from minitvm import te
from minitvm.codegen import llvm as codegen_llvm
from minitvm.target import Target

# a loop whose addresses are i*3 and i*3+7: strength reduction turns the multiply into a
# pointer step, so its assembly shows whether the pass ran
STRIDED_LOOP = r"""
define void @f(ptr %a, ptr %b, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %j = mul i64 %i, 3
  %pa = getelementptr float, ptr %a, i64 %j
  %x = load float, ptr %pa
  %k = add i64 %j, 7
  %pb = getelementptr float, ptr %b, i64 %k
  store float %x, ptr %pb
  %i1 = add i64 %i, 1
  %c = icmp slt i64 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
"""


def _assembly() -> str:
    tm = Target("llvm").create_target_machine()
    return tm.emit_assembly(llvm.parse_assembly(STRIDED_LOOP))


def test_emission_skips_strength_reduction_and_restores_the_option():
    before = _assembly()
    tm = Target("llvm").create_target_machine()
    emitted = codegen_llvm._emit_object(tm, llvm.parse_assembly(STRIDED_LOOP))
    assert emitted[:4] == b"\x7fELF"
    llvm.set_option("", "--disable-lsr=true")
    try:
        without = _assembly()
    finally:
        llvm.set_option("", "--disable-lsr=false")
    assert without != before  # the option does change this loop
    A = te.placeholder((33,), name="A")
    B = te.compute((11,), lambda i: A[i * 3] + 1.0, name="B")
    f = tvm.build(te.create_prim_func([A, B]).with_attr("global_symbol", ""), name="strided")
    a = np.arange(33, dtype="float32")
    b = tvm.nd.array(np.zeros(11, "float32"))
    f["strided"](tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a[::3] + 1)
    assert _assembly() == before  # a build leaves the global option as it found it
