"""RPC clients: `rpc.connect(host, port)` to a server, `rpc.LocalSession()` in this process.

A session uploads files into the server's workspace, loads modules there and calls them on
arrays of the server's devices (`remote.cpu()`, `remote.cl()`). `tvm.nd.array(x, remote.cpu())`
keeps the array's contents on this side as a mirror: each remote call sends the contents of its
array arguments, the server runs the function on copies in its own device memory, and the
arrays the call changed come back into their mirrors before the call returns, so `.numpy()`
reads the result without another round trip.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import weakref

import numpy as np

from ..error import ArgumentError, DeviceError, MiniTVMError
from ..runtime import load_module as _load_local
from ..runtime import registry
from ..runtime.device import Device
from ..runtime.device import device as _make_device
from ..runtime.module import ProfileResult, open_regular_file
from ..runtime.ndarray import NDArray
from .base import (
    HANDSHAKE_HEADER_BYTES,
    MAGIC,
    MAX_MESSAGE_BYTES,
    ConnectionClosed,
    ProtocolError,
    RPCError,
    field,
    raise_remote_error,
    recv_message,
    send_message,
)
from .workspace import Workspace

CONNECT_TIMEOUT_S = 30.0
HANDSHAKE_REPLY_TIMEOUT_S = 120.0  # the server starts a Python process for the session
_session_numbers = itertools.count(1)


def _upload_blob(data, target: str | None) -> tuple[bytes, str]:
    """upload's (contents, remote name) from a local file name or bytes."""
    if isinstance(data, bytes | bytearray | memoryview):
        if target is None:
            raise ArgumentError("upload: pass target= (the remote file name) when data is bytes")
        return bytes(data), target
    try:
        path = os.fspath(data)
    except TypeError:
        raise ArgumentError(
            f"upload: expected a file name or bytes, got {type(data).__name__}"
        ) from None
    with open_regular_file(path, "upload", MAX_MESSAGE_BYTES) as file:
        blob = file.read()
    return blob, target or os.path.basename(path)


def _device_method(kind: str):
    """`session.<kind>(dev_id=0)`: the session's device of that kind."""

    def method(self, dev_id: int = 0) -> Device:
        return self.device(kind, dev_id)

    method.__name__ = "cl" if kind == "opencl" else kind
    return method


class RPCSession:
    """A session with an RPC server, from `rpc.connect(host, port)`.

    >>> remote = rpc.connect("127.0.0.1", 9090); remote.upload("lib.tar")
    >>> f = remote.load_module("lib.tar"); dev = remote.cpu()
    >>> a = tvm.nd.array(x, dev); b = tvm.nd.empty(x.shape, "float32", dev); f(a, b); b.numpy()
    """

    def __init__(self, sock: socket.socket, host: str, port: int, max_message_bytes: int) -> None:
        self._sock = sock
        self._where = f"{host}:{port}"
        self._max_bytes = max_message_bytes
        self._index = next(_session_numbers)
        self._lock = threading.Lock()
        self._released: list[int] = []  # modules collected here, freed there with the next request
        self._reasons: dict[tuple[int, int], str | None] = {}
        self._close = weakref.finalize(self, sock.close)

    # --- the connection ------------------------------------------------------------------
    def _request(self, what: str, header: dict, chunks=()) -> tuple[dict, bytearray]:
        """Send one request and wait for its reply; a remote error is raised here."""
        for key in ("path", "name"):  # a wrong type here would break the protocol: refuse it
            if key in header and not isinstance(header[key], str):
                raise RPCError(f"{what}: the {key} must be a str, got {type(header[key]).__name__}")
        with self._lock:
            if not self._close.alive:
                raise RPCError(f"{what}: the session with {self._where} is closed; connect again")
            if self._released:
                header["release"], self._released = self._released, []
            try:
                send_message(self._sock, header, chunks)
                message = recv_message(self._sock, MAX_MESSAGE_BYTES)
            except (OSError, ConnectionClosed, ProtocolError) as err:
                self._close()
                raise RPCError(
                    f"{what}: the connection to the RPC server at {self._where} broke ({err}); "
                    "the session is over (its session_timeout passed, the server was "
                    "terminated, or it refused a message); connect again"
                ) from err
            if message is None:
                self._close()
                raise RPCError(
                    f"{what}: the RPC server at {self._where} closed the session (its "
                    "session_timeout passed, or the server was terminated); connect again"
                )
        reply, payload = message
        if reply.get("ok") is not True:
            raise_remote_error(reply, f"RPC server {self._where}")
        return reply, payload

    def _check_size(self, what: str, nbytes: int) -> None:
        if nbytes > self._max_bytes:
            raise RPCError(
                f"{what}: {nbytes} bytes are over the server's limit of {self._max_bytes} bytes "
                "per message (rpc.Server(max_message_bytes=...))"
            )

    def close(self) -> None:
        """End the session: the server deletes its workspace and modules."""
        self._close()

    def __enter__(self) -> RPCSession:  # noqa: PYI034 - py3.10 has no typing.Self
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RPCSession {self._index} with {self._where}>"

    # --- files ---------------------------------------------------------------------------
    def upload(self, data, target: str | None = None) -> None:
        """Copy a local file (or bytes, with `target`) into the server's workspace."""
        blob, target = _upload_blob(data, target)
        self._check_size(f"upload({target!r})", len(blob))
        self._request(f"upload({target!r})", {"op": "upload", "path": target}, [blob])

    def download(self, path: str) -> bytearray:
        """The contents of a file of the server's workspace."""
        return self._request(f"download({path!r})", {"op": "download", "path": path})[1]

    def remove(self, path: str) -> None:
        """Delete a file or directory of the server's workspace."""
        self._request(f"remove({path!r})", {"op": "remove", "path": path})

    def listdir(self, path: str = ".") -> str:
        """The names in a directory of the server's workspace, joined by ',' (as TVM returns)."""
        reply, _ = self._request(f"listdir({path!r})", {"op": "listdir", "path": path})
        return ",".join(_names(reply))

    def download_linked_module(self, path: str) -> bytearray:
        raise RPCError(
            "download_linked_module: minitvm's export_library files need no linking; upload "
            "the file and load_module it"
        )

    # --- modules and functions -------------------------------------------------------------
    def load_module(self, path: str) -> RemoteModule:
        """Load a module uploaded to the server's workspace; calling it runs it there."""
        reply, _ = self._request(f"load_module({path!r})", {"op": "load_module", "path": path})
        try:
            names = tuple(field(reply, "functions", list, what="a load_module reply"))
            if not all(isinstance(n, str) for n in names):
                raise ProtocolError("a load_module reply lists a function name that is no str")
            return RemoteModule(self, field(reply, "module", int), path,
                                field(reply, "entry_name", str), names,
                                field(reply, "type_key", str))  # fmt: skip
        except ProtocolError:
            self._close()
            raise

    def get_function(self, name: str) -> RemoteFunction:
        """A function of the server's global registry (`tvm.register_func` there); it takes
        and returns numbers, strings and None."""
        reply, _ = self._request(f"get_function({name!r})", {"op": "global_exists", "name": name})
        if reply.get("exists") is not True:
            raise MiniTVMError(f"the RPC server at {self._where} has no global function '{name}'")
        return RemoteFunction(self, None, name)

    def system_lib(self):
        raise RPCError("system_lib: minitvm has no system library; upload a module and load it")

    def _release(self, handle: int) -> None:
        self._released.append(handle)  # list.append is atomic: safe from a finalizer

    # --- calls ----------------------------------------------------------------------------
    def _encode_args(self, args: tuple, where: str):
        """The args of a call as JSON items, the arrays' bytes, and the mirrors by position."""
        items, chunks, mirrors, seen = [], [], {}, {}
        for i, arg in enumerate(args):
            if isinstance(arg, NDArray):
                dev = arg.device
                if not (isinstance(dev, RemoteDevice) and dev._session is self):
                    raise ArgumentError(
                        f"{where}: argument {i} is on {dev}, not on a device of this session; "
                        "make it with tvm.nd.array(x, remote.cpu())"
                    )
                if id(arg) in seen:
                    items.append({"t": "same", "of": seen[id(arg)]})
                    continue
                items.append({"t": "array", "dtype": arg.dtype, "shape": list(arg.shape),
                              "dev": [dev.device_type, dev.device_id]})  # fmt: skip
                chunks.append(np.asarray(arg))
                mirrors[i] = arg
                seen[id(arg)] = i
            elif isinstance(arg, bool | int | np.integer):
                items.append({"t": "int", "v": int(arg)})
            elif isinstance(arg, float | np.floating):
                items.append({"t": "float", "v": float(arg)})
            elif isinstance(arg, str):
                items.append({"t": "str", "v": arg})
            elif arg is None:
                items.append({"t": "none"})
            else:
                hint = ""
                if isinstance(arg, np.ndarray):
                    hint = " (a numpy array: copy it there with tvm.nd.array(x, remote.cpu()))"
                raise ArgumentError(
                    f"{where}: argument {i} is a {type(arg).__name__}{hint}; remote calls take "
                    "NDArrays on this session's devices, numbers, strings and None"
                )
        self._check_size(where, sum(c.nbytes for c in chunks))
        return items, chunks, mirrors

    def _call(self, what: str, header: dict, args: tuple) -> dict:
        """Run a remote call on `args`; the arrays it changed are copied into their mirrors."""
        items, chunks, mirrors = self._encode_args(args, what)
        reply, payload = self._request(what, {**header, "args": items}, chunks)
        try:
            if mirrors or "changed" in reply:
                _write_back(reply, payload, mirrors)
        except ProtocolError:
            self._close()
            raise
        return reply

    # --- devices ----------------------------------------------------------------------------
    def device(self, dev_type, dev_id: int = 0) -> RemoteDevice:
        """A device of the server ("cpu", "opencl", "cuda" or a DLPack code)."""
        local = _make_device(dev_type, dev_id)
        return RemoteDevice(self, local.device_type, local.device_id)

    def _device_reason(self, dev: RemoteDevice) -> str | None:
        key = (dev.device_type, dev.device_id)
        if key not in self._reasons:
            reply, _ = self._request(f"{dev!r}", {"op": "device", "dev": list(key)})
            self._reasons[key] = field(reply, "reason", str, type(None), what="a device reply")
        reason = self._reasons[key]
        return None if reason is None else f"{dev!r} on the RPC server at {self._where}: {reason}"

    def _device_attr(self, dev: RemoteDevice, attr: str):
        header = {"op": "device", "dev": [dev.device_type, dev.device_id], "attr": attr}
        return field(self._request(f"{dev!r}.{attr}", header)[0], "value", int, str)

    cpu = _device_method("cpu")
    cuda = _device_method("cuda")
    cl = opencl = _device_method("opencl")
    vulkan = _device_method("vulkan")
    metal = _device_method("metal")
    rocm = _device_method("rocm")


def _names(reply: dict) -> list[str]:
    names = field(reply, "names", list, what="a listdir reply")
    if not all(isinstance(n, str) for n in names):
        raise ProtocolError("a listdir reply lists a name that is no str")
    return names


def _write_back(reply: dict, payload: bytearray, mirrors: dict[int, NDArray]) -> None:
    """Copy the changed arrays of a call's reply into their mirrors."""
    changed = field(reply, "changed", list, what="a call's reply")
    offset = 0
    for position in changed:
        if type(position) is not int or position not in mirrors:
            raise ProtocolError(f"a call's reply names argument {position!r}, which is no array")
        mirror = mirrors[position]
        host = np.asarray(mirror)
        if offset + host.nbytes > len(payload):
            raise ProtocolError("a call's reply is shorter than the arrays it names")
        view = np.frombuffer(payload, host.dtype, host.size, offset).reshape(host.shape)
        mirror.copyfrom(view)
        offset += host.nbytes
    if offset != len(payload):
        raise ProtocolError(f"a call's reply has {len(payload)} bytes, its arrays take {offset}")


class RemoteDevice(Device):
    """A device of an RPC server (`remote.cpu()`, `remote.cl()`).

    `tvm.nd.array(x, dev)` and `tvm.nd.empty(shape, dtype, dev)` make arrays whose contents this
    side mirrors; remote calls send them and bring back what changed. Such an array does not
    cross DLPack (its device is not this machine's)."""

    __slots__ = ("_session",)

    def __init__(self, session: RPCSession, device_type: int, device_id: int = 0) -> None:
        super().__init__(device_type, device_id)
        self._session = session

    @property
    def is_gpu(self) -> bool:
        return False  # the mirror lives in host memory here; the server uses the real device

    def unavailable_reason(self) -> str | None:
        return self._session._device_reason(self)

    def check_available(self) -> None:
        reason = self.unavailable_reason()
        if reason is not None:
            raise DeviceError(reason)

    def _attribute(self, name: str, cpu_value=None):
        self.check_available()
        return self._session._device_attr(self, name)

    def sync(self) -> None:
        """Nothing to wait for: a remote call returns once its results are back."""
        self.check_available()

    def _dlpack_device(self) -> tuple[int, int]:
        raise BufferError(
            f"an array on {self!r} cannot be exchanged through DLPack; read it with .numpy()"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemoteDevice) or other._session is not self._session:
            return False  # remote.cpu() is not this machine's cpu(0), nor another session's
        return (other.device_type, other.device_id) == (self.device_type, self.device_id)

    def __hash__(self) -> int:
        return hash((id(self._session), self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"remote[{self._session._index}]:{self.name}({self.device_id})"


class RemoteModule:
    """A module loaded on an RPC server (`remote.load_module(path)`): `mod[name](*args)`,
    `mod(*args)` (the entry function) and `mod.time_evaluator` run it there."""

    def __init__(self, session: RPCSession, handle: int, path: str, entry_name: str,
                 names: tuple[str, ...], type_key: str) -> None:  # fmt: skip
        self._session, self._handle, self._path, self._names = session, handle, path, names
        self.entry_name, self.type_key = entry_name, type_key
        self.imported_modules: list = []
        weakref.finalize(self, session._release, handle)

    def get_function(self, name: str, query_imports: bool = False) -> RemoteFunction:
        if name not in self._names:
            raise MiniTVMError(
                f"remote module '{self._path}' has no function '{name}'; it has {sorted(self._names)}"
            )
        return RemoteFunction(self._session, self, name)

    __getitem__ = get_function

    def __contains__(self, name: str) -> bool:
        return name in self._names

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        return name in self

    def __call__(self, *args) -> None:
        self.get_function(self.entry_name)(*args)

    def time_evaluator(self, func_name: str, dev: Device, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, limit_zero_time_iterations: int = 100,
                       cooldown_interval_ms: float = 0, repeats_to_cooldown: int = 1,
                       cache_flush_bytes: int = 0, f_preproc: str = ""):  # fmt: skip
        """A callable timing `func_name` on the server (the network is not timed); it returns
        a ProfileResult whose `.mean` is seconds per call."""
        what = f"time_evaluator('{func_name}')"
        self.get_function(func_name)
        if not (isinstance(dev, RemoteDevice) and dev._session is self._session):
            raise ArgumentError(
                f"{what}: dev must be a device of this session (remote.cpu()), got {dev}"
            )
        if not isinstance(f_preproc, str):
            raise ArgumentError(f"{what}: over RPC f_preproc must name a function of the server")
        options = {"number": number, "repeat": repeat, "min_repeat_ms": min_repeat_ms,
                   "limit_zero_time_iterations": limit_zero_time_iterations,
                   "cooldown_interval_ms": cooldown_interval_ms,
                   "repeats_to_cooldown": repeats_to_cooldown,
                   "cache_flush_bytes": cache_flush_bytes}  # fmt: skip
        for name, value in options.items():
            is_ms = name.endswith("_ms")
            kind = (int, float, np.integer, np.floating) if is_ms else (int, np.integer)
            if isinstance(value, bool) or not isinstance(value, kind) or value < 0:
                wanted = "a number" if is_ms else "an int"
                raise ArgumentError(f"{what}: {name} must be {wanted} >= 0, got {value!r}")
            options[name] = float(value) if is_ms else int(value)
        header = {"op": "time", "module": self._handle, "name": func_name, "f_preproc": f_preproc,
                  "dev": [dev.device_type, dev.device_id], **options}  # fmt: skip

        def evaluator(*args) -> ProfileResult:
            reply = self._session._call(what, header, args)
            results = field(reply, "results", list, what="a time_evaluator reply")
            if not results or not all(type(x) in (int, float) for x in results):
                raise RPCError(f"{what}: the server sent no timings")
            return ProfileResult(tuple(float(x) for x in results))

        return evaluator

    def export_library(self, file_name: str, *args, **kwargs) -> None:
        raise RPCError(
            f"export_library: module '{self._path}' lives on the RPC server; export the module "
            "you built locally (the file you uploaded is that export)"
        )

    save = export_library

    def get_source(self, fmt: str = "") -> str:
        raise RPCError(
            f"get_source: module '{self._path}' lives on the RPC server; read the source of the "
            "module you built locally"
        )

    def __repr__(self) -> str:
        return (
            f"RemoteModule('{self._path}' on {self._session._where}, functions={list(self._names)})"
        )


class RemoteFunction:
    """A function on an RPC server: of a loaded module, or of the server's global registry."""

    def __init__(self, session: RPCSession, module: RemoteModule | None, name: str) -> None:
        self._session, self._module, self.name = session, module, name

    def __call__(self, *args):
        what = f"calling remote '{self.name}'"
        if self._module is not None:
            header = {"op": "call", "module": self._module._handle, "name": self.name}
            self._session._call(what, header, args)
            return None
        if any(isinstance(a, NDArray) for a in args):
            raise ArgumentError(
                f"{what}: functions of the server's registry take numbers, strings and None "
                "over RPC, not arrays"
            )
        reply = self._session._call(what, {"op": "call_global", "name": self.name}, args)
        return reply.get("value")

    def __repr__(self) -> str:
        return f"RemoteFunction('{self.name}' on {self._session._where})"


class LocalSession(RPCSession):
    """An RPC session served by this process (TVM's `rpc.LocalSession()`): a temporary
    directory is its workspace, modules load here and its devices are this machine's, so code
    written for a remote device runs unchanged without a server.

    >>> remote = rpc.LocalSession(); remote.upload(path); f = remote.load_module("lib.tar")
    """

    def __init__(self) -> None:
        self._workspace = Workspace()
        self._index = next(_session_numbers)
        self._where = "this process"
        self._close = weakref.finalize(self, self._workspace.close)

    def _live(self, what: str) -> Workspace:
        if not self._close.alive:
            raise RPCError(f"{what}: the LocalSession is closed; make a new one")
        return self._workspace

    def upload(self, data, target: str | None = None) -> None:
        blob, target = _upload_blob(data, target)
        self._live("upload").write(target, blob)

    def download(self, path: str) -> bytearray:
        return bytearray(self._live("download").read(path))

    def remove(self, path: str) -> None:
        self._live("remove").remove(path)

    def listdir(self, path: str = ".") -> str:
        return ",".join(self._live("listdir").listdir(path))

    def load_module(self, path: str):
        """The module itself (loaded in this process): every kind `tvm.runtime.load_module`
        reads works, relax Executables included."""
        return _load_local(self._live("load_module").load_path(path))

    def get_function(self, name: str):
        return registry.get_global_func(name)

    def device(self, dev_type, dev_id: int = 0) -> Device:
        return _make_device(dev_type, dev_id)

    def __repr__(self) -> str:
        return f"<LocalSession {self._index} in {self._workspace.root}>"


def connect(
    url: str,
    port: int,
    key: str = "",
    session_timeout: float = 0,
    session_constructor_args=None,
    enable_logging: bool = False,
) -> RPCSession:
    """Open a session with the RPC server at `url:port` (`python -m minitvm.exec.rpc_server`).

    `key` must equal the server's; a `session_timeout` > 0 lets the server end the session
    after that many seconds.

    >>> remote = rpc.connect("192.168.1.20", 9090)
    """
    where = f"{url}:{port}"
    if session_constructor_args:
        raise RPCError("rpc.connect: session_constructor_args (proxy chains) are not supported")
    if not isinstance(key, str):
        raise ArgumentError(f"rpc.connect: key must be a str, got {type(key).__name__}")
    timeout_ok = isinstance(session_timeout, int | float) and not isinstance(session_timeout, bool)
    if not timeout_ok or session_timeout < 0:
        raise ArgumentError(
            f"rpc.connect: session_timeout must be seconds >= 0, got {session_timeout!r}"
        )
    try:
        sock = socket.create_connection((url, int(port)), timeout=CONNECT_TIMEOUT_S)
    except ConnectionRefusedError as err:
        raise RPCError(
            f"rpc.connect: cannot connect to an RPC server at {where}: connection refused. Start "
            f"one there with `python -m minitvm.exec.rpc_server --host {url} --port {port}` (or "
            "rpc.Server in Python), then connect again"
        ) from err
    except socket.gaierror as err:
        raise RPCError(f"rpc.connect: cannot resolve host '{url}' ({err.strerror})") from err
    except (OSError, ValueError, OverflowError) as err:
        raise RPCError(f"rpc.connect: cannot connect to {where} ({err})") from err
    try:
        welcome = _handshake(sock, key, session_timeout)
    except (OSError, ConnectionClosed, ProtocolError) as err:
        sock.close()
        raise RPCError(
            f"rpc.connect({where}): the handshake failed ({err}); is it a minitvm RPC server "
            "(python -m minitvm.exec.rpc_server)? Apache TVM's servers speak another protocol"
        ) from err
    if welcome.get("ok") is not True:
        sock.close()
        raise_remote_error(welcome, f"rpc.connect({where})")
    try:
        max_bytes = field(welcome, "max_message_bytes", int, what="the server's welcome")
    except ProtocolError:
        sock.close()
        raise
    return RPCSession(sock, url, int(port), max_bytes)


def _handshake(sock: socket.socket, key: str, session_timeout: float) -> dict:
    """Say hello to a server; its welcome (or refusal) header."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(HANDSHAKE_REPLY_TIMEOUT_S)
    sock.sendall(MAGIC)
    send_message(sock, {"key": key, "session_timeout": session_timeout})
    welcome = recv_message(sock, 0, HANDSHAKE_HEADER_BYTES)
    if welcome is None:
        raise ConnectionClosed("the server closed the connection")
    sock.settimeout(None)
    return welcome[0]


def connect_tracker(url: str, port: int):
    """Refused: minitvm has no RPC tracker."""
    raise RPCError(
        f"rpc.connect_tracker({url}:{port}): minitvm has no RPC tracker (nor "
        "tvm.exec.rpc_tracker); connect to an RPC server directly with rpc.connect(host, port), "
        "started with `python -m minitvm.exec.rpc_server --host 0.0.0.0 --port 9090`"
    )
