"""Run compiled modules on another machine: TVM's `tvm.rpc` (docs/rpc.md).

`rpc.LocalSession()` serves a session in this process (a temporary directory as the remote file
system); `rpc.connect(host, port)` opens one with a server started by `rpc.Server(...)` or
`python -m minitvm.exec.rpc_server --host 0.0.0.0 --port 9090`. Sessions upload files, load
modules and call them on arrays of the remote devices (`remote.cpu()`, `remote.cl()`).

The protocol is minitvm's own (JSON headers and raw array bytes over TCP, nothing pickled); it
does not talk to Apache TVM's servers. Uploading a module to a server runs its native code
there, by design (as in TVM): serve only on networks you trust. There is no tracker or proxy.

>>> remote = rpc.LocalSession(); remote.upload(path); f = remote.load_module("lib.tar")
>>> a = tvm.nd.array(x, remote.cpu()); b = tvm.nd.empty(x.shape, "float32", remote.cpu()); f(a, b)
"""

from .base import RPCError
from .client import (
    LocalSession,
    RemoteDevice,
    RemoteFunction,
    RemoteModule,
    RPCSession,
    connect,
    connect_tracker,
)
from .server import Server

__all__ = [
    "LocalSession",
    "RPCError",
    "RPCSession",
    "RemoteDevice",
    "RemoteFunction",
    "RemoteModule",
    "Server",
    "connect",
    "connect_tracker",
]
