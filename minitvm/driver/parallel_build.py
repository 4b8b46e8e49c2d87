"""Lower and optimise a build's distinct kernels in forked worker processes, one share of the
kernels per core, and link the optimised parts into the one object a serial build makes.

Kernels are independent (no kernel calls another), so each part is lowered, emitted and
optimised on its own; the parent links the parts' bitcode and emits the object. A worker
sends back bitcode and FuncInfos, both plain data. Whenever anything is off (one core, other
Python threads running, which a fork could catch holding a lock, kernels importing LLVM IR,
a worker failing or dying) the build runs serially instead: a failing kernel then raises the
very error, with its cause, that a serial build raises.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any

from .. import env
from ..tir.function import PrimFunc

MAX_JOBS: int | None = None  # processes per build; None: MINITVM_BUILD_JOBS, else every core
MIN_KERNELS = 4  # fewer distinct kernels build serially (a fork costs more than it saves)


def jobs(n_kernels: int) -> int:
    """How many processes to split a build of `n_kernels` distinct kernels across (1: serial)."""
    if n_kernels < MIN_KERNELS or not sys.platform.startswith("linux"):
        return 1  # fork without exec is only known safe for LLVM and our runtime on Linux
    if threading.active_count() > 1:  # a fork copies locks other threads may hold
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_JOBS or env.build_jobs() or cores or 1, n_kernels))


def balanced(sizes: list[int], parts: int) -> list[list[int]]:
    """Indices of `sizes` split in `parts` shares of similar total (largest first to the
    lightest share), each share in ascending index order."""
    shares: list[list[int]] = [[] for _ in range(parts)]
    load = [0] * parts
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        lightest = load.index(min(load))
        shares[lightest].append(i)
        load[lightest] += sizes[i]
    return [sorted(s) for s in shares]


def build(
    kernels: list,
    aliases: list[tuple[PrimFunc, str]],
    target: Any,
    lower: Callable[[Any], PrimFunc],
    n_jobs: int,
) -> Any:
    """The CodegenResult of `kernels` (kernel_cache._Kernel, distinct) and `aliases` built in
    `n_jobs` processes, or None when a part failed (the caller then builds serially)."""
    from ..codegen import llvm as codegen

    shares = balanced([k.size for k in kernels], n_jobs)
    parts = [_part([kernels[i] for i in share], aliases) for share in shares]
    children = [_fork(lambda p=p: _compile(p, target, lower)) for p in parts[1:]]
    mine = None
    try:
        mine = _compile(parts[0], target, lower)
    except Exception:  # noqa: BLE001 - the serial rebuild raises it where a serial build would
        mine = None
    finally:  # reap the children even when interrupted
        results = [mine] + [_collect(*child) for child in children]
    if any(r is None for r in results):
        return None
    by_name = {info["name"]: info for _, infos in results for info in infos}
    order = [k.func.name for k in kernels] + [f.name for f, _ in aliases]
    return codegen.link_partitions([bc for bc, _ in results], [by_name[n] for n in order], target)


def _part(kernels: list, aliases: list[tuple[PrimFunc, str]]) -> tuple[list, list]:
    names = {k.func.name for k in kernels}
    return kernels, [(f, twin) for f, twin in aliases if twin in names]


def _compile(part: tuple[list, list], target: Any, lower: Callable) -> tuple[bytes, list[dict]]:
    from ..codegen import llvm as codegen

    kernels, aliases = part
    return codegen.build_partition([lower(k) for k in kernels], target, aliases)


def _encode(result: tuple[bytes, list[dict]]) -> bytes:
    """(bitcode, FuncInfos) as bytes: the FuncInfos' JSON length (8 bytes), that JSON (FuncInfos
    are JSON by contract), then the bitcode. Plain data both ways, nothing is unpickled."""
    bitcode, infos = result
    text = json.dumps(infos).encode()
    return struct.pack("<Q", len(text)) + text + bytes(bitcode)


def _decode(payload: bytes) -> tuple[bytes, list[dict]] | None:
    """What `_encode` wrote, or None when the payload is truncated or malformed."""
    if len(payload) < 8:
        return None
    (n,) = struct.unpack("<Q", payload[:8])
    if len(payload) < 8 + n:
        return None
    try:
        infos = json.loads(payload[8 : 8 + n])
    except ValueError:
        return None
    bitcode = payload[8 + n :]
    if not isinstance(infos, list) or not bitcode:
        return None
    return bitcode, infos


def _fork(work: Callable[[], Any]) -> tuple[int, int]:
    """Run `work` in a child process; (pid, read end of the pipe its encoded result comes on)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's frames
        status = 1
        try:
            os.close(read)
            payload = _encode(work())
            with os.fdopen(write, "wb") as out:
                out.write(payload)
            status = 0
        except BaseException:  # noqa: BLE001 - reported as a failed part, rebuilt serially
            status = 1
        finally:
            os._exit(status)
    os.close(write)
    return pid, read


def _collect(pid: int, read: int) -> Any:
    """The child's result, or None when it failed or died."""
    with os.fdopen(read, "rb") as pipe:
        payload = pipe.read()
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # SIGCHLD ignored: reaped already; a whole payload says success
        status = 0
    if status != 0 or not payload:
        return None
    return _decode(payload)  # None for a truncated payload: a failed part
