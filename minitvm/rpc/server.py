"""The RPC server: a listener that admits clients and starts one session process per client.

`rpc.Server(host, port)` binds a port of [port, port_end), listens on a thread of the calling
process, checks each connecting client's handshake (magic bytes, key), and hands the connection
to a fresh `python -m minitvm.rpc.worker` process with its own temporary workspace. A session
ends when its client leaves, when its session_timeout passes (the listener kills the process),
or at `terminate()`. A malformed handshake is logged and that connection closed; the listener
goes on serving.

Security: uploading a module and loading it runs native code on the server's machine, by design
(as in TVM). The default host "0.0.0.0" listens on every interface, as TVM's does: anyone who can
reach the port can run code with the server's rights. The key only matches clients to servers;
it is no password. Serve on 127.0.0.1, or on a network you trust.
"""

from __future__ import annotations

import errno
import logging
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass

from .base import (
    HANDSHAKE_HEADER_BYTES,
    HANDSHAKE_TIMEOUT_S,
    MAGIC,
    MAX_MESSAGE_BYTES,
    TVM_MAGIC,
    RPCError,
    close_with_reply,
    error_reply,
    field,
    logger,
    recv_exact,
    recv_message,
)

_POLL_S = 0.25  # how often the listener looks at its stop flag and its sessions
_WORKER = "minitvm.rpc.worker"


@dataclass
class _Worker:
    proc: subprocess.Popen
    workspace: str
    deadline: float | None
    peer: str


class _Listener:
    """The accept loop and the session processes it started (run on its own thread)."""

    def __init__(self, sock: socket.socket, key: str, max_sessions: int, max_bytes: int,
                 log_level: str) -> None:  # fmt: skip
        self.sock, self.key = sock, key
        self.max_sessions, self.max_bytes, self.log_level = max_sessions, max_bytes, log_level
        self.workers: list[_Worker] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="minitvm-rpc-listener", daemon=True)

    def run(self) -> None:
        while not self.stopping.is_set():
            self.reap()
            try:
                ready, _, _ = select.select([self.sock], [], [], _POLL_S)
                if not ready:
                    continue
                conn, addr = self.sock.accept()
            except (OSError, ValueError):  # the socket was closed by stop()
                if self.stopping.is_set():
                    break
                continue
            try:
                self.admit(conn, f"{addr[0]}:{addr[1]}")
            except Exception:  # noqa: BLE001 - one client must never take the listener down
                logger.exception("could not admit a client from %s:%s", *addr[:2])
                conn.close()

    def admit(self, conn: socket.socket, peer: str) -> None:
        """Check the handshake of a new connection and start its session process."""
        conn.settimeout(HANDSHAKE_TIMEOUT_S)
        try:
            magic = recv_exact(conn, len(MAGIC), "the handshake")
            if magic[:4] == TVM_MAGIC:
                raise RPCError(
                    "it is an Apache TVM RPC client; minitvm's servers speak their own protocol "
                    "(connect with minitvm.rpc.connect)"
                )
            if magic != MAGIC:
                raise RPCError(f"it sent {bytes(magic)!r} instead of the minitvm RPC magic bytes")
            hello = recv_message(conn, 0, HANDSHAKE_HEADER_BYTES)
            if hello is None:
                raise RPCError("it closed the connection during the handshake")
            key = field(hello[0], "key", str, what="the handshake")
            timeout = field(hello[0], "session_timeout", float, what="the handshake")
        except (RPCError, OSError) as err:  # OSError: a timeout, a reset
            logger.warning("refused a connection from %s: %s", peer, err)
            _close(conn, err if isinstance(err, RPCError) else None)
            return
        refusal = None
        if key != self.key:
            refusal = (
                f"the server's key differs from {key!r}; connect with the key the server was "
                "started with (rpc_server --key)"
            )
        elif len(self.workers) >= self.max_sessions:
            refusal = (
                f"the server is busy: {self.max_sessions} sessions are running (its "
                "max_sessions); try again when one has ended"
            )
        if refusal is not None:
            logger.warning("refused a connection from %s: %s", peer, refusal)
            _close(conn, RPCError(refusal))
            return
        self.start_session(conn, peer, timeout)

    def start_session(self, conn: socket.socket, peer: str, timeout: float) -> None:
        conn.settimeout(None)
        workspace = tempfile.mkdtemp(prefix="minitvm-rpc-session-")
        command = [sys.executable, "-m", _WORKER, "--fd", str(conn.fileno()),
                   "--workspace", workspace, "--max-message-bytes", str(self.max_bytes),
                   "--log-level", self.log_level]  # fmt: skip
        try:
            proc = subprocess.Popen(
                command, pass_fds=(conn.fileno(),), stdin=subprocess.DEVNULL, env=_worker_env()
            )
        except OSError as err:
            shutil.rmtree(workspace, ignore_errors=True)
            _close(conn, RPCError(f"the server could not start a session process ({err})"))
            raise
        finally:
            conn.close()  # the session process holds its own copy
        deadline = time.monotonic() + timeout if timeout > 0 else None
        self.workers.append(_Worker(proc, workspace, deadline, peer))
        logger.info("connection from %s: session in process %d", peer, proc.pid)

    def reap(self) -> None:
        """Forget ended sessions (deleting their workspaces); end those past their timeout."""
        now, alive = time.monotonic(), []
        for w in self.workers:
            if w.proc.poll() is not None:
                shutil.rmtree(w.workspace, ignore_errors=True)
                logger.info("session of %s ended", w.peer)
                continue
            if w.deadline is not None and now > w.deadline:
                logger.info("session of %s passed its session_timeout; ending it", w.peer)
                w.proc.kill()
            alive.append(w)
        self.workers = alive

    def stop(self) -> None:
        self.stopping.set()
        self.sock.close()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout=5 * _POLL_S + 1)
        for w in self.workers:
            w.proc.terminate()
        for w in self.workers:
            try:
                w.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            shutil.rmtree(w.workspace, ignore_errors=True)
        self.workers = []


def _close(conn: socket.socket, err: RPCError | None) -> None:
    """Tell a refused client why (if it listens) and close its connection."""
    close_with_reply(conn, None if err is None else error_reply(err))


def _worker_env() -> dict:
    """The environment of a session process: this one's, with the directory that holds the
    minitvm package first on PYTHONPATH (it may not be installed)."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    return env


def _bind(host: str, port: int, port_end: int, reuse_addr: bool) -> socket.socket:
    """A listening socket on the first free port of [port, port_end) (port 0: any free one)."""
    try:
        family = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as err:
        raise RPCError(f"rpc.Server: cannot resolve host {host!r} ({err.strerror})") from err
    ports = [0] if port == 0 else range(port, max(port_end, port + 1))
    for candidate in ports:
        sock = socket.socket(family, socket.SOCK_STREAM)
        if reuse_addr:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError as err:
            sock.close()
            if err.errno == errno.EADDRINUSE:
                continue
            raise RPCError(f"rpc.Server: cannot bind {host}:{candidate} ({err.strerror})") from err
        sock.listen(16)
        return sock
    raise RPCError(
        f"rpc.Server: every port in [{port}, {port_end}) on {host} is in use; pass another "
        "port range (or port=0 for any free port)"
    )


class Server:
    """An RPC server on this machine: `rpc.Server(host="0.0.0.0", port=9091, port_end=9199)`.

    Listens on a thread of this process and serves each client in its own process; `.port` is
    the port it bound, `.terminate()` stops it and ends its sessions. Loading a module uploaded
    by a client runs native code here, by design (as in TVM): bind to a trusted network only
    (host="127.0.0.1" keeps it on this machine). The TVM options for trackers, proxies, extra
    native libraries and init callbacks are refused; `max_sessions` bounds the sessions that
    run at once and `max_message_bytes` the size of one message (an uploaded file, a call's
    arrays).

    >>> server = rpc.Server("127.0.0.1", port=0); remote = rpc.connect("127.0.0.1", server.port)
    """

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 9091,
        port_end: int = 9199,
        is_proxy: bool = False,
        tracker_addr=None,
        key: str = "",
        load_library=None,
        custom_addr=None,
        silent: bool = False,
        no_fork: bool = False,
        server_init_callback=None,
        reuse_addr: bool = True,
        *,
        max_sessions: int = 8,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        no_tracker = "minitvm has no RPC tracker; clients connect with rpc.connect(host, port)"
        no_callback = "sessions run in fresh processes that are sent no code"
        refused = {
            "is_proxy": (is_proxy, "minitvm has no RPC proxy"),
            "tracker_addr": (tracker_addr, no_tracker),
            "load_library": (load_library, "the server loads no extra native libraries"),
            "server_init_callback": (server_init_callback, no_callback),
        }
        for name, (value, why) in refused.items():
            if value:
                raise RPCError(f"rpc.Server: {name} is not supported: {why}")
        if not isinstance(key, str) or max_sessions < 1 or max_message_bytes < 1:
            raise RPCError("rpc.Server: key must be a str, max_sessions and max_message_bytes >= 1")
        del custom_addr, no_fork  # tracker-only; sessions never fork (they are new processes)
        sock = _bind(host, int(port), int(port_end), reuse_addr)
        self.host, self.port = host, sock.getsockname()[1]
        # sessions log at this process's level for "minitvm.rpc" (the CLI sets INFO)
        level = "ERROR" if silent else logging.getLevelName(logger.getEffectiveLevel())
        self._listener = _Listener(sock, key, max_sessions, max_message_bytes, level)
        self._listener.thread.start()
        self._stop = weakref.finalize(self, self._listener.stop)
        logger.info("bind to %s:%d", host, self.port)

    def terminate(self) -> None:
        """Stop listening and end every session (their processes and workspaces)."""
        self._stop()

    def wait(self) -> None:
        """Block until the server is terminated (what `python -m minitvm.exec.rpc_server` does)."""
        while self._listener.thread.is_alive():
            self._listener.thread.join(timeout=0.5)

    def __repr__(self) -> str:
        state = "stopped" if not self._stop.alive else "serving"
        return f"rpc.Server({self.host}:{self.port}, {state})"
