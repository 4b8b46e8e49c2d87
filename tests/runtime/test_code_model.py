"""x86-64 kernels use the large code model: MCJIT maps code and constants separately, and in a
crowded address space (a long test run) they ended up more than 2 GiB apart; a 32-bit
PC-relative reference between them made LLVM's runtime linker abort the process
(resolveX86_64Relocation: isInt<32>(RealOffset)). Every relocation must now be 64 bits wide."""

import struct

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.target import Target

_SHT_RELA = 4
_R_X86_64_64 = 1


def _relocation_types(obj: bytes) -> set[int]:
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    types = set()
    for i in range(shnum):
        sh = struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
        if sh[1] == _SHT_RELA:
            offset, size, entsize = sh[4], sh[5], sh[9]
            for k in range(size // entsize):
                _, info, _ = struct.unpack_from("<QQq", obj, offset + k * entsize)
                types.add(info & 0xFFFFFFFF)
    return types


@pytest.mark.skipif(not Target("llvm").triple.startswith("x86_64"), reason="x86-64 hosts only")
def test_kernels_with_constants_and_calls_use_only_64_bit_relocations():
    A = te.placeholder((1000,), name="A")
    # constants (a vector constant pool), a libm call and a parallel loop (calls the pool)
    B = te.compute((1000,), lambda i: te.exp(A[i]) * 1.5 + 0.25, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    s[B].parallel(xo)
    f = tvm.build(s, [A, B], "llvm")
    types = _relocation_types(f._result.object_code)
    assert types and types <= {_R_X86_64_64}, types
    a = tvm.nd.array(np.linspace(-2, 2, 1000, dtype="float32"))
    b = tvm.nd.empty((1000,), "float32")
    f(a, b)
    np.testing.assert_allclose(b.numpy(), np.exp(a.numpy()) * 1.5 + 0.25, rtol=1e-5)
