"""One RPC session on the server: a process that serves one client's requests over its socket.

The listener (server.py) starts `python -m minitvm.rpc.worker --fd N --workspace DIR` for every
client it admits, so a session has its own process, file area and loaded modules, and a kernel
that crashes or hangs takes down that session only. Requests are a table of handlers keyed by
the header's "op"; arrays arrive as dtype, shape and raw bytes, become NDArrays on the named
device of this machine for the one call, and those the call changed go back to the client.

Loading an uploaded module runs its native code in this process, by design (as in TVM): whoever
can connect to the server can run code on it. minitvm's `load_module` checks the file (zip,
checksums, metadata, the object's symbols and architecture) so that a damaged or foreign file is
refused, but it cannot make arbitrary code harmless.
"""

from __future__ import annotations

import argparse
import logging
import math
import socket

import numpy as np

from ..error import MiniTVMError
from ..ir.dtype import DataType
from ..runtime import ndarray, registry
from ..runtime.device import Device
from ..runtime.device_module import DeviceModule
from ..runtime.module import Module, load_module
from .base import (
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    ProtocolError,
    RPCError,
    close_with_reply,
    error_reply,
    field,
    logger,
    recv_message,
    send_message,
)
from .workspace import Workspace

MAX_ARGS = 1024
MAX_NDIM = 32
MAX_MODULES = 1024
DEVICE_ATTRS = frozenset(
    {"max_threads_per_block", "max_shared_memory_per_block", "warp_size", "device_name",
     "compute_version"}
)  # fmt: skip
_TIMER_INTS = ("number", "repeat", "limit_zero_time_iterations", "repeats_to_cooldown",
               "cache_flush_bytes")  # fmt: skip
_TIMER_FLOATS = ("min_repeat_ms", "cooldown_interval_ms")


class Session:
    """What one client's requests act on: its workspace and the modules it loaded."""

    def __init__(self, workspace: Workspace, max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.workspace = workspace
        self.max_message_bytes = max_message_bytes
        self.modules: dict[int, Module | DeviceModule] = {}
        self._next_id = 1

    def module(self, header: dict) -> Module | DeviceModule:
        handle = field(header, "module", int)
        if handle not in self.modules:
            raise RPCError(f"no module {handle} in this session (it was released); load it again")
        return self.modules[handle]

    def add(self, mod: Module | DeviceModule, path: str) -> int:
        """Keep a loaded module; its number names it in later requests."""
        if len(self.modules) >= MAX_MODULES:
            raise RPCError(
                f"load_module({path!r}): this session holds {MAX_MODULES} modules already"
            )
        handle, self._next_id = self._next_id, self._next_id + 1
        self.modules[handle] = mod
        return handle


# --- arguments ----------------------------------------------------------------------------
def _device(spec) -> Device:
    """A device of this machine from its [type, id] pair."""
    if type(spec) is not list or len(spec) != 2 or any(type(x) is not int for x in spec):
        raise ProtocolError("a device must be [device_type, device_id], two integers")
    if not 0 <= spec[1] < 1 << 16:
        raise RPCError(f"device id {spec[1]} is out of range")
    return Device(spec[0], spec[1])


def _array_layout(item: dict) -> tuple[np.dtype, tuple[int, ...], int]:
    """The numpy dtype, shape and byte size of an array argument's header."""
    dtype = field(item, "dtype", str, what="an array argument")
    shape = field(item, "shape", list, what="an array argument")
    if len(shape) > MAX_NDIM or any(type(d) is not int or d < 0 for d in shape):
        raise ProtocolError(f"an array's shape must be at most {MAX_NDIM} integers >= 0")
    try:
        np_dtype = np.dtype(DataType(dtype).numpy_dtype())
    except MiniTVMError as err:
        raise RPCError(f"arrays of dtype {dtype!r} cannot cross the connection: {err}") from err
    return np_dtype, tuple(shape), math.prod(shape) * np_dtype.itemsize


def decode_args(items, payload: bytearray, allow_arrays: bool = True):
    """The call's argument values, and (position, NDArray, offset, nbytes) of each array.

    Array bytes follow one another in the payload in argument order; together they must fill
    it exactly. An argument {"t": "same", "of": j} is the array of argument j again."""
    if type(items) is not list or len(items) > MAX_ARGS:
        raise ProtocolError(f"'args' must be a list of at most {MAX_ARGS} arguments")
    values, arrays, offset = [], [], 0
    for i, item in enumerate(items):
        if type(item) is not dict:
            raise ProtocolError(f"argument {i} must be a JSON object")
        kind = field(item, "t", str, what=f"argument {i}")
        if kind in ("array", "same") and not allow_arrays:
            raise RPCError(
                f"argument {i} is an array; functions of the server's registry take numbers, "
                "strings and None over RPC"
            )
        if kind == "array":
            np_dtype, shape, nbytes = _array_layout(item)
            if nbytes > len(payload) - offset:
                raise ProtocolError(f"argument {i}'s {nbytes} bytes run past the payload")
            dev = _device(field(item, "dev", list, what=f"argument {i}"))
            host = np.frombuffer(payload, np_dtype, math.prod(shape), offset).reshape(shape)
            arr = ndarray.array(host, dev)
            arrays.append((i, arr, offset, nbytes))
            values.append(arr)
            offset += nbytes
        elif kind == "same":
            j = field(item, "of", int, what=f"argument {i}")
            if not (0 <= j < i and any(a[0] == j for a in arrays)):
                raise ProtocolError(f"argument {i} refers to {j}, which is no earlier array")
            values.append(values[j])
        elif kind == "int":
            values.append(field(item, "v", int, what=f"argument {i}"))
        elif kind == "float":
            values.append(float(field(item, "v", float, what=f"argument {i}")))
        elif kind == "str":
            values.append(field(item, "v", str, what=f"argument {i}"))
        elif kind == "none":
            values.append(None)
        else:
            raise ProtocolError(f"argument {i} has unknown kind {kind[:40]!r}")
    if offset != len(payload):
        raise ProtocolError(f"the payload has {len(payload)} bytes, the arrays take {offset}")
    return values, arrays


def changed_arrays(arrays, payload: bytearray) -> tuple[dict, list]:
    """The reply to a call: which arrays it changed, their new bytes as the payload."""
    changed, chunks = [], []
    for position, arr, offset, nbytes in arrays:
        if nbytes == 0:
            continue
        now = np.ascontiguousarray(np.asarray(arr)).reshape(-1).view(np.uint8)
        before = np.frombuffer(payload, np.uint8, nbytes, offset)
        if not np.array_equal(now, before):
            changed.append(position)
            chunks.append(now)
    return {"ok": True, "changed": changed}, chunks


# --- the requests ------------------------------------------------------------------------
def _upload(session: Session, header: dict, payload: bytearray):
    session.workspace.write(field(header, "path", str), payload)
    return {"ok": True}, []


def _download(session: Session, header: dict, payload: bytearray):
    data = session.workspace.read(field(header, "path", str))
    return {"ok": True}, [data]


def _remove(session: Session, header: dict, payload: bytearray):
    session.workspace.remove(field(header, "path", str))
    return {"ok": True}, []


def _listdir(session: Session, header: dict, payload: bytearray):
    return {"ok": True, "names": session.workspace.listdir(field(header, "path", str))}, []


def _load_module(session: Session, header: dict, payload: bytearray):
    path = field(header, "path", str)
    mod = load_module(session.workspace.load_path(path))
    if not isinstance(mod, Module | DeviceModule):
        raise RPCError(
            f"load_module({path!r}): the file holds a {type(mod).__name__}; over minitvm's RPC "
            "only kernel modules (tvm.build(...).export_library) run remotely. Run this one with "
            "rpc.LocalSession() or load it locally"
        )
    handle = session.add(mod, path)
    names = [info["name"] for info in mod.func_infos]
    logger.info("load_module %s: functions %s", path, names)
    reply = {"ok": True, "module": handle, "entry_name": mod.entry_name, "functions": names,
             "type_key": str(getattr(mod, "type_key", "llvm"))}  # fmt: skip
    return reply, []


def _call(session: Session, header: dict, payload: bytearray):
    func = session.module(header).get_function(field(header, "name", str))
    values, arrays = decode_args(field(header, "args", list), payload)
    func(*values)
    return changed_arrays(arrays, payload)


def _time(session: Session, header: dict, payload: bytearray):
    options = {k: field(header, k, int) for k in _TIMER_INTS if k in header}
    options.update((k, float(field(header, k, float))) for k in _TIMER_FLOATS if k in header)
    if any(v < 0 for v in options.values()):
        raise RPCError(f"time_evaluator: options must be >= 0, got {options}")
    f_preproc = field(header, "f_preproc", str, default="")
    evaluator = session.module(header).time_evaluator(
        field(header, "name", str), _device(field(header, "dev", list)),
        f_preproc=f_preproc, **options,
    )  # fmt: skip
    values, arrays = decode_args(field(header, "args", list), payload)
    result = evaluator(*values)
    reply, chunks = changed_arrays(arrays, payload)
    reply["results"] = [float(x) for x in result.results]
    return reply, chunks


def _global_exists(session: Session, header: dict, payload: bytearray):
    name = field(header, "name", str)
    return {
        "ok": True,
        "exists": registry.get_global_func(name, allow_missing=True) is not None,
    }, []


def _call_global(session: Session, header: dict, payload: bytearray):
    name = field(header, "name", str)
    func = registry.get_global_func(name)
    values, _ = decode_args(field(header, "args", list), payload, allow_arrays=False)
    value = func(*values)
    if not _is_plain(value):
        raise RPCError(
            f"the server's function '{name}' returned a {type(value).__name__}; only numbers, "
            "strings, None and lists of them come back over RPC"
        )
    return {"ok": True, "value": value}, []


def _is_plain(value, depth: int = 0) -> bool:
    if value is None or type(value) in (bool, int, float, str):
        return True
    return (
        depth < 4 and type(value) in (list, tuple) and all(_is_plain(v, depth + 1) for v in value)
    )


def _device_query(session: Session, header: dict, payload: bytearray):
    dev = _device(field(header, "dev", list))
    attr = field(header, "attr", str, type(None), default=None)
    if attr is None:
        return {"ok": True, "reason": dev.unavailable_reason()}, []
    if attr not in DEVICE_ATTRS:
        raise RPCError(f"unknown device attribute {attr[:40]!r}; known: {sorted(DEVICE_ATTRS)}")
    return {"ok": True, "value": getattr(dev, attr)}, []


HANDLERS = {
    "upload": _upload, "download": _download, "remove": _remove, "listdir": _listdir,
    "load_module": _load_module, "call": _call, "time": _time, "global_exists": _global_exists,
    "call_global": _call_global, "device": _device_query,
}  # fmt: skip


def handle(session: Session, header: dict, payload: bytearray) -> tuple[dict, list]:
    """Run one request; a ProtocolError means the connection must close."""
    for handle_id in field(header, "release", list, default=[]):
        if type(handle_id) is not int:
            raise ProtocolError("'release' must list module numbers")
        session.modules.pop(handle_id, None)
    op = field(header, "op", str)
    if op not in HANDLERS:
        raise ProtocolError(f"unknown request {op[:40]!r}; known: {sorted(HANDLERS)}")
    return HANDLERS[op](session, header, payload)


# --- the loop ---------------------------------------------------------------------------
def serve(sock: socket.socket, session: Session) -> None:
    """Answer requests on `sock` until the client leaves or breaks the protocol."""
    peer = _peer(sock)
    try:
        send_message(sock, {"ok": True, "version": PROTOCOL_VERSION,
                            "max_message_bytes": session.max_message_bytes})  # fmt: skip
        while True:
            try:
                message = recv_message(sock, session.max_message_bytes)
                if message is None:
                    logger.info("client %s closed the session", peer)
                    return
                reply, chunks = handle(session, *message)
            except ProtocolError as err:
                _refuse(sock, peer, err)
                return
            except MiniTVMError as err:
                reply, chunks = error_reply(err), []
            except Exception as err:  # noqa: BLE001 - a bug here must reach the client, not end the session
                logger.exception("request from %s failed", peer)
                reply = error_reply(RPCError(f"internal error: {type(err).__name__}: {err}"))
                chunks = []
            try:
                send_message(sock, reply, chunks)
            except RPCError as err:  # a reply over the header limit (a huge listing, say)
                send_message(sock, error_reply(err))
    except OSError as err:
        logger.info("connection to %s lost: %s", peer, err)
    finally:
        sock.close()


def _refuse(sock: socket.socket, peer: str, err: ProtocolError) -> None:
    """Log a broken message, tell the peer why (if it still listens) and close."""
    logger.error("closing the connection from %s: %s", peer, err)
    close_with_reply(sock, error_reply(err))


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "a client"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fd", type=int, required=True, help="the connected socket's descriptor")
    parser.add_argument("--workspace", required=True, help="the session's directory")
    parser.add_argument("--max-message-bytes", type=int, default=MAX_MESSAGE_BYTES)
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s[session]: %(message)s"
    )
    sock = socket.socket(fileno=args.fd)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    workspace = Workspace(args.workspace, max_file_bytes=args.max_message_bytes)
    serve(sock, Session(workspace, args.max_message_bytes))


if __name__ == "__main__":
    main()
