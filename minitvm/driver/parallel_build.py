"""Lower and optimise a build's distinct kernels in forked worker processes, one share of the
kernels per core, and link the optimised parts into the one object a serial build makes.

Kernels are independent (no kernel calls another), so each part is lowered, emitted and
optimised on its own; the parent links the parts' bitcode and emits the object. A worker
sends back bitcode and FuncInfos, both plain data. Whenever anything is off (one core, another
Python thread at work, which a fork could catch holding a lock the worker needs, kernels
importing LLVM IR, a worker failing or dying) the build runs serially instead: a failing kernel
then raises the very error, with its cause, that a serial build raises.

Another thread does not make a build serial while it is parked: blocked in a threading wait
with no minitvm or llvmlite frame on its stack (torch.export leaves tqdm's monitor thread so,
for the life of the process, which had made every TorchTrainer build serial). Such a thread
holds no lock a worker takes: a worker runs only minitvm and llvmlite code, and the locks of
those that a parked thread could hold would need one of their frames on its stack. Python
cannot hand the GIL to a parked thread between the check and the fork while the switch
interval is raised (`_no_thread_switch`).
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from .. import env
from ..tir.function import PrimFunc

MAX_JOBS: int | None = None  # processes per build; None: MINITVM_BUILD_JOBS, else every core
MIN_KERNELS = 4  # fewer distinct kernels build serially (a fork costs more than it saves)


def jobs(n_kernels: int) -> int:
    """How many processes to split a build of `n_kernels` distinct kernels across (1: serial)."""
    if n_kernels < MIN_KERNELS or not sys.platform.startswith("linux"):
        return 1  # fork without exec is only known safe for LLVM and our runtime on Linux
    if not other_threads_parked():  # a fork copies locks other threads may hold
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_JOBS or env.build_jobs() or cores or 1, n_kernels))


# where a parked thread waits (threading's Condition.wait, under Event.wait, Thread.join, ...)
_THREADING_FILE = os.path.normcase(threading.__file__)
_WAITS = frozenset({"wait", "_wait_for_tstate_lock"})


def _package_dirs() -> tuple[str, ...]:
    """The folders of minitvm and llvmlite: code a worker runs, whose locks it may take."""
    import llvmlite

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return tuple(os.path.normcase(d) + os.sep for d in (here, *llvmlite.__path__))


def other_threads_parked() -> bool:
    """True when every other Python thread is blocked in a threading wait and has no minitvm or
    llvmlite frame on its stack (module docstring): a fork then copies no lock a worker needs."""
    me = threading.get_ident()
    ours = _package_dirs()
    # threads the threading module knows, as `threading.active_count() > 1` counted before:
    # threads started by `_thread` alone (pytest-xdist's execnet I/O) were never counted
    known = {t.ident for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        if ident == me or ident not in known:
            continue
        code = frame.f_code
        if os.path.normcase(code.co_filename) != _THREADING_FILE or code.co_name not in _WAITS:
            return False  # running, or blocked somewhere we cannot vouch for
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith("<frozen importlib") or os.path.normcase(
                os.path.abspath(name)
            ).startswith(ours):
                return False  # ours, or mid-import: it holds a module lock a worker may need
            frame = frame.f_back
    return True


@contextlib.contextmanager
def _no_thread_switch() -> Iterator[None]:
    """No other Python thread runs meanwhile (it would need the GIL, which this thread keeps
    for a whole switch interval), so the threads `other_threads_parked` saw stay parked."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        with warnings.catch_warnings():  # Python 3.12+ warns on every fork with threads
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        sys.setswitchinterval(old)


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
    with _no_thread_switch():
        if not other_threads_parked():  # one woke up since `jobs` looked
            return None
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
