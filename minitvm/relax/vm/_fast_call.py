"""The VM's kernel-call fast path: after a checked first call under a frame, only swap the data
pointers of per-call tensors and call the native entry (see vm.py's module docstring for when
the VM may take it)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

_addr = ctypes.addressof


def _unchecked_call(k: int, pf: Any, arg_regs: list, scalar_fn: Any, dyn: tuple) -> Callable:
    """The closure of kernel call number `k`: the first run under a frame takes the checked
    path and keeps the prepared argument arrays in `frame.prep[k]`; later runs only store the
    data pointers of the `dyn` (slot, register) pairs and call the native entry."""
    fail = pf.fail

    def first(regs, frame):
        extra = scalar_fn(frame.heap) if scalar_fn else ()
        native, ptrs, ints = pf.prepare(*[regs[r] for r in arg_regs], *extra)
        frame.prep[k] = p = (native, ptrs, _addr(ptrs), _addr(ints), ints)
        rc = native(p[2], p[3])
        if rc:
            fail(rc)

    if not dyn:

        def run(regs, frame):
            p = frame.prep[k]
            if p is None:
                return first(regs, frame)
            rc = p[0](p[2], p[3])
            if rc:
                fail(rc)

    elif len(dyn) == 1:
        ((s0, r0),) = dyn

        def run(regs, frame):
            p = frame.prep[k]
            if p is None:
                return first(regs, frame)
            p[1][s0] = regs[r0]._ptr
            rc = p[0](p[2], p[3])
            if rc:
                fail(rc)

    elif len(dyn) == 2:
        (s0, r0), (s1, r1) = dyn

        def run(regs, frame):
            p = frame.prep[k]
            if p is None:
                return first(regs, frame)
            ptrs = p[1]
            ptrs[s0] = regs[r0]._ptr
            ptrs[s1] = regs[r1]._ptr
            rc = p[0](p[2], p[3])
            if rc:
                fail(rc)

    else:

        def run(regs, frame):
            p = frame.prep[k]
            if p is None:
                return first(regs, frame)
            ptrs = p[1]
            for s, r in dyn:
                ptrs[s] = regs[r]._ptr
            rc = p[0](p[2], p[3])
            if rc:
                fail(rc)

    return run
