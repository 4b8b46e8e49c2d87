"""tvm.rpc: LocalSession, Server and connect run uploaded modules on remote arrays like numpy,
refuse hostile input clearly (paths outside the workspace, malformed or oversized messages) and
keep serving; the flow of TVM's cross_compilation_and_rpc tutorial runs unchanged."""

import json
import os
import re
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import minitvm
import minitvm as tvm
from minitvm import rpc, te
from minitvm.contrib import utils
from minitvm.error import ArgumentError, DeviceError, MiniTVMError
from minitvm.rpc.base import FRAME, MAGIC, MAX_HEADER_BYTES

N = 1024
TIMEOUT_S = 60  # no socket of these tests waits longer than this for the server


def _add_one(target="llvm"):
    """TVM tutorial's kernel: B = A + 1 over 1024 floats (OpenCL: split and bound to threads)."""
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    if target != "llvm":
        xo, xi = s[B].split(B.op.axis[0], factor=32)
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        s[B].bind(xi, te.thread_axis("threadIdx.x"))
        target = tvm.target.Target(target, host="llvm")
    return tvm.build(s, [A, B], target=target, name="add_one")


@pytest.fixture(scope="module")
def lib_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("rpc") / "lib.tar")
    _add_one().export_library(path)
    return path


@pytest.fixture(scope="module")
def server():
    srv = rpc.Server(host="127.0.0.1", port=0)
    yield srv
    srv.terminate()


def _connect(port, **kwargs):
    remote = rpc.connect("127.0.0.1", port, **kwargs)
    remote._sock.settimeout(TIMEOUT_S)  # a hung server fails the test instead of hanging it
    return remote


@pytest.fixture(scope="module")
def remote(server):
    session = _connect(server.port)
    yield session
    session.close()


def _run_add_one(remote, lib_path, name="lib.tar"):
    """Upload, load and run the kernel on the session's cpu; returns (module, dev, a, b)."""
    remote.upload(lib_path, name)
    func = remote.load_module(name)
    dev = remote.cpu()
    rng = np.random.default_rng(0)
    a = tvm.nd.array(rng.uniform(size=N).astype("float32"), dev)
    b = tvm.nd.array(np.zeros(N, dtype="float32"), dev)
    func(a, b)
    np.testing.assert_allclose(b.numpy(), a.numpy() + 1, rtol=1e-6)
    return func, dev, a, b


# --- LocalSession ---------------------------------------------------------------------------
def test_local_session_runs_an_uploaded_module_like_numpy(lib_path):
    remote = rpc.LocalSession()
    func, dev, a, b = _run_add_one(remote, lib_path)
    assert isinstance(remote, rpc.RPCSession) and dev == tvm.cpu(0)
    assert remote.listdir(".") == "lib.tar"
    with open(lib_path, "rb") as f:
        assert remote.download("lib.tar") == f.read()
    cost = func.time_evaluator(func.entry_name, dev, number=10, repeat=2)(a, b)
    assert len(cost.results) == 2 and all(t > 0 for t in cost.results) and cost.mean > 0
    remote.upload(b"abc", target="sub/dir/x.bin")
    assert remote.listdir("sub/dir") == "x.bin" and remote.download("sub/dir/x.bin") == b"abc"
    remote.remove("sub")
    remote.remove("lib.tar")
    assert remote.listdir() == ""
    root = remote._workspace.root
    remote.close()
    assert not os.path.exists(root)
    with pytest.raises(rpc.RPCError, match="closed"):
        remote.listdir()


def _file_requests(remote, path):
    """Every request of a session that takes a path, on `path`."""
    return [lambda: remote.upload(b"x", path), lambda: remote.download(path),
            lambda: remote.remove(path), lambda: remote.load_module(path)]  # fmt: skip


HOSTILE_PATHS = [
    "../escape",
    "/etc/passwd",
    "a/../../b",
    "",
    ".hidden",
    "a//b",
    "x\x00y",
    "..",
    "a/",
]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_local_session_refuses_paths_outside_its_workspace(path):
    remote = rpc.LocalSession()
    for call in _file_requests(remote, path):
        with pytest.raises(rpc.RPCError, match="refused|not allowed"):
            call()
    assert remote.listdir() == ""


def test_workspace_follows_no_symbolic_links(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    remote = rpc.LocalSession()
    root = remote._workspace.root
    os.symlink(outside, os.path.join(root, "link"))
    os.symlink(tmp_path, os.path.join(root, "dirlink"))
    with pytest.raises(rpc.RPCError, match="symbolic link"):
        remote.download("link")
    with pytest.raises(rpc.RPCError, match="symbolic link"):
        remote.upload(b"overwrite", "link")
    with pytest.raises(rpc.RPCError, match="symbolic link"):
        remote.upload(b"new", "dirlink/new.txt")
    with pytest.raises(rpc.RPCError, match="symbolic link"):
        remote.download("dirlink/secret.txt")
    with pytest.raises(rpc.RPCError, match="symbolic link"):
        remote.remove("link")
    with pytest.raises(rpc.RPCError, match="link or a directory"):
        remote.load_module("link")
    assert outside.read_text() == "secret" and sorted(os.listdir(tmp_path)) == ["secret.txt"]


# --- Server and connect ----------------------------------------------------------------------
def test_server_session_runs_kernel_times_it_and_mirrors_arrays(remote, lib_path):
    func, dev, a, b = _run_add_one(remote, lib_path)
    assert isinstance(func, rpc.RemoteModule) and func.entry_name == "add_one"
    assert repr(dev).startswith("remote[") and dev != tvm.cpu(0) and dev.exist
    assert "lib.tar" in remote.listdir().split(",")
    with open(lib_path, "rb") as f:
        assert remote.download("lib.tar") == f.read()
    cost = func.time_evaluator(func.entry_name, dev, number=10, repeat=3)(a, b)
    assert len(cost.results) == 3 and all(t > 0 for t in cost.results)
    # the next call sends the mirror's new contents; the result comes back into b's mirror
    new = np.arange(N, dtype="float32")
    a.copyfrom(new)
    func["add_one"](a, b)
    np.testing.assert_array_equal(b.numpy(), new + 1)
    # an argument given twice is one array on the server, as it is in this process
    local = tvm.runtime.load_module(lib_path)
    x = tvm.nd.array(new)
    try:
        local(x, x)
        expected = None
    except MiniTVMError as err:
        expected = type(err)
    if expected is None:
        func(a, a)
        np.testing.assert_array_equal(a.numpy(), x.numpy())
    else:
        with pytest.raises(expected):
            func(a, a)


def test_server_refuses_paths_outside_its_workspace_and_keeps_serving(server, remote):
    for path in ("../escape", "/etc/passwd", "a/../../b", ".."):
        for call in _file_requests(remote, path):
            with pytest.raises(rpc.RPCError, match="refused"):
                call()
    # a link planted in the session's workspace (by native code, say) is not followed
    workspace = _workspace_of(server, remote)
    os.symlink("/etc/hostname", os.path.join(workspace, "planted"))
    with pytest.raises(rpc.RPCError, match="symbolic link"):
        remote.download("planted")
    remote.upload(b"not a module", "bad.so")  # load_module's own checks answer, over the wire
    with pytest.raises(MiniTVMError, match="RPC server .*bad.so.*not a zip archive"):
        remote.load_module("bad.so")
    remote.upload(b"still serving", "ok.txt")
    assert remote.download("ok.txt") == b"still serving"


def _workspace_of(server, session) -> str:
    """The directory of `session` on `server` (found by the client's address)."""
    host, port = session._sock.getsockname()[:2]
    return next(w.workspace for w in server._listener.workers if w.peer == f"{host}:{port}")


def test_unknown_function_and_wrong_arguments_are_the_errors_a_local_call_raises(remote, lib_path):
    func, dev, a, b = _run_add_one(remote, lib_path)
    with pytest.raises(MiniTVMError, match="has no function 'nope'; it has \\['add_one'\\]"):
        func["nope"]
    local = tvm.runtime.load_module(lib_path)
    x, short = (tvm.nd.array(np.zeros(n, "float32")) for n in (N, 10))
    for local_args, remote_args in [
        ((x,), (a,)),
        ((x, short), (a, tvm.nd.empty((10,), "float32", dev))),
    ]:
        with pytest.raises(MiniTVMError) as local_err:
            local(*local_args)
        with pytest.raises(type(local_err.value), match="RPC server 127.0.0.1") as remote_err:
            func(*remote_args)
        assert str(local_err.value) in str(remote_err.value)
    with pytest.raises(ArgumentError, match=r"argument 0 is on cpu\(0\).*remote.cpu\(\)"):
        func(x, b)
    with pytest.raises(ArgumentError, match="numpy array"):
        func(np.zeros(N, "float32"), b)
    with pytest.raises(ArgumentError, match="device of this session"):
        func.time_evaluator("add_one", tvm.cpu(0))
    with pytest.raises(ArgumentError, match="number must be an int >= 0, got 2.5"):
        func.time_evaluator("add_one", dev, number=2.5)
    with pytest.raises(rpc.RPCError, match="the path must be a str, got int"):
        remote.download(5)
    with pytest.raises(MiniTVMError, match="no global function 'no.such.func'"):
        remote.get_function("no.such.func")
    assert remote.get_function("runtime.config_threadpool")(0, 1) is None
    func(a, b)  # the session still works
    np.testing.assert_allclose(b.numpy(), a.numpy() + 1, rtol=1e-6)


def _raw_connection(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
    sock.settimeout(TIMEOUT_S)
    return sock


def _send_frame(sock, header_bytes, payload=b""):
    sock.sendall(FRAME.pack(len(header_bytes), len(payload)) + header_bytes + payload)


def _read_reply(sock):
    """The next frame's JSON header, or None at the end of the connection."""
    head = b""
    while len(head) < FRAME.size:
        chunk = sock.recv(FRAME.size - len(head))
        if not chunk:
            return None
        head += chunk
    n_header, n_payload = FRAME.unpack(head)
    body = b""
    while len(body) < n_header + n_payload:
        chunk = sock.recv(n_header + n_payload - len(body))
        assert chunk, "the frame was cut short"
        body += chunk
    return json.loads(body[:n_header])


def _raw_session(port):
    sock = _raw_connection(port)
    sock.sendall(MAGIC)
    _send_frame(sock, json.dumps({"key": "", "session_timeout": 0}).encode())
    assert _read_reply(sock)["ok"] is True
    return sock


def _assert_refused_and_closed(sock, match):
    reply = _read_reply(sock)
    assert reply is not None and reply["ok"] is False, reply
    assert re.search(match, reply["error"]["message"]), reply
    assert _read_reply(sock) is None  # then the server closed the connection
    sock.close()


def _frame(header: bytes, n_payload: int = 0) -> bytes:
    return FRAME.pack(len(header), n_payload) + header


_CALL_UNKNOWN_MODULE = b'{"op": "call", "module": 1, "name": "f", "args": [{"t": "pickle"}]}'
_PICKLE_ARG = (
    b'{"op": "call_global", "name": "runtime.config_threadpool", "args": [{"t": "pickle"}]}'
)
MALFORMED = {
    # name: (stage, bytes sent, what the server answers before it closes)
    "not-rpc": ("hello", b"GET / HTTP/1.0\r\n\r\n", "instead of the minitvm RPC magic"),
    "tvm-client": ("hello", struct.pack("<i", 0xFF271) + bytes(4), "Apache TVM RPC client"),
    "huge-hello": ("hello", MAGIC + FRAME.pack(1 << 20, 0), "over the limit of 4096"),
    "hello-not-object": ("hello", MAGIC + _frame(b"[]"), "must be a JSON object"),
    "hello-key-type": ("hello", MAGIC + _frame(b'{"key": 1, "session_timeout": 0}'),
                       "'key' must be a string"),
    "huge-header": ("session", FRAME.pack(MAX_HEADER_BYTES + 1, 0), "over the limit"),
    "huge-payload": ("session", _frame(b"{}", 1 << 40), "payload of 1099511627776 bytes is over"),
    "not-json": ("session", _frame(b"{{{{{"), "not JSON"),
    "deep-json": ("session", _frame(b"[" * 100_000), "not JSON"),
    "field-type": ("session", _frame(b'{"op": "upload", "path": 5}'), "'path' must be a string"),
    "unknown-op": ("session", _frame(b'{"op": "exec"}'), "unknown request 'exec'"),
    "release-type": ("session", _frame(b'{"op": "listdir", "path": ".", "release": ["x"]}'),
                     "'release'"),
    "unknown-arg-kind": ("session", _frame(_PICKLE_ARG), "unknown kind 'pickle'"),
    "unknown-module": ("session", _frame(_CALL_UNKNOWN_MODULE), "no module 1"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_message_closes_that_connection_and_the_server_serves_on(server, case):
    stage, data, match = MALFORMED[case]
    sock = _raw_connection(server.port) if stage == "hello" else _raw_session(server.port)
    sock.sendall(data)
    if match == "no module 1":  # a request the session can answer: an error reply, not a close
        reply = _read_reply(sock)
        assert reply["ok"] is False and "no module 1" in reply["error"]["message"]
        sock.close()
    else:
        _assert_refused_and_closed(sock, match)
    with _connect(server.port) as fresh:
        fresh.upload(b"next client", "next.txt")
        assert fresh.download("next.txt") == b"next client"


def test_connect_to_a_closed_port_names_the_address_and_the_server_command():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(
        rpc.RPCError, match=f"127.0.0.1:{port}: connection refused.*minitvm.exec.rpc_server"
    ):
        rpc.connect("127.0.0.1", port)


def test_key_message_limit_and_unsupported_options_are_clear_errors():
    srv = rpc.Server(host="127.0.0.1", port=0, key="board", max_message_bytes=4096)
    try:
        with pytest.raises(rpc.RPCError, match="key differs from ''"):
            rpc.connect("127.0.0.1", srv.port)
        with _connect(srv.port, key="board") as remote:
            with pytest.raises(rpc.RPCError, match="over the server's limit of 4096"):
                remote.upload(bytes(8192), "big.bin")
            remote.upload(bytes(100), "small.bin")
            assert remote.listdir() == "small.bin"
    finally:
        srv.terminate()
    with pytest.raises(rpc.RPCError, match="no RPC tracker"):
        rpc.connect_tracker("127.0.0.1", 9190)
    with pytest.raises(rpc.RPCError, match="tracker_addr is not supported"):
        rpc.Server("127.0.0.1", port=0, tracker_addr=("127.0.0.1", 9190), key="x")


def test_server_takes_the_next_free_port_of_its_range():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        srv = rpc.Server(host="127.0.0.1", port=port, port_end=port + 50)
        try:
            assert port < srv.port < port + 50
        finally:
            srv.terminate()


@pytest.mark.slow
def test_session_timeout_ends_the_session():
    srv = rpc.Server(host="127.0.0.1", port=0)
    try:
        start = time.monotonic()
        remote = _connect(srv.port, session_timeout=8)
        time.sleep(max(0.0, 9.5 - (time.monotonic() - start)))
        with pytest.raises(rpc.RPCError, match="session_timeout"):
            remote.listdir()
    finally:
        srv.terminate()


def test_rpc_server_command_serves_sessions_until_terminated(lib_path, tmp_path):
    log = tmp_path / "server.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "minitvm.exec.rpc_server", "--host", "127.0.0.1", "--port", "0"],
            stderr=err, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline, port = time.monotonic() + TIMEOUT_S, None
        while port is None and time.monotonic() < deadline and proc.poll() is None:
            found = re.search(r"bind to 127\.0\.0\.1:(\d+)", log.read_text())
            port = int(found.group(1)) if found else time.sleep(0.1)
        assert port, log.read_text()
        with _connect(port) as remote:
            _run_add_one(remote, lib_path)
    finally:
        proc.terminate()
        assert proc.wait(timeout=TIMEOUT_S) == 0, log.read_text()
    assert "load_module lib.tar" in log.read_text()


# --- OpenCL through a session ---------------------------------------------------------------
@pytest.mark.parametrize("kind", ["local", "server"])
def test_remote_opencl_runs_or_says_why_not(kind, server, tmp_path):
    with rpc.LocalSession() if kind == "local" else _connect(server.port) as remote:
        _run_opencl(remote, tmp_path)


def _run_opencl(remote, tmp_path):
    """The tutorial's run_opencl(): the kernel bound to GPU threads, run on remote.cl()."""
    dev = remote.cl()
    x = np.random.default_rng(1).uniform(size=N).astype("float32")
    if not tvm.opencl(0).exist:
        assert not dev.exist
        with pytest.raises(DeviceError, match="opencl"):
            tvm.nd.array(x, dev)
        return
    path = str(tmp_path / "lib_cl.tar")
    _add_one("opencl").export_library(path)
    remote.upload(path)
    func = remote.load_module("lib_cl.tar")
    a = tvm.nd.array(x, dev)
    b = tvm.nd.array(np.zeros(N, dtype="float32"), dev)
    func(a, b)
    np.testing.assert_allclose(b.numpy(), x + 1, rtol=1e-6)
    assert func.time_evaluator(func.entry_name, dev, number=2)(a, b).mean > 0


# --- the tutorial ---------------------------------------------------------------------------
@pytest.mark.parametrize("local_demo", [True, False])
def test_cross_compilation_and_rpc_tutorial_flow(local_demo, server):
    """The steps of TVM's gallery/tutorial/cross_compilation_and_rpc.py (CPU part)."""
    assert minitvm.rpc is rpc  # `from tvm import rpc` with `import minitvm as tvm`
    n = tvm.runtime.convert(1024)
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    func = tvm.build(s, [A, B], target="llvm", name="add_one")
    temp = utils.tempdir()
    path = temp.relpath("lib.tar")
    func.export_library(path)
    remote = rpc.LocalSession() if local_demo else rpc.connect("127.0.0.1", server.port)
    remote.upload(path)
    func = remote.load_module("lib.tar")
    dev = remote.cpu()
    a = tvm.nd.array(np.random.uniform(size=1024).astype(A.dtype), dev)
    b = tvm.nd.array(np.zeros(1024, dtype=A.dtype), dev)
    func(a, b)
    np.testing.assert_equal(b.numpy(), a.numpy() + 1)
    time_f = func.time_evaluator(func.entry_name, dev, number=10)
    cost = time_f(a, b).mean
    assert 0 < cost < 1


def test_remote_workspaces_are_private_temporary_directories(server):
    with _connect(server.port) as one, _connect(server.port) as two:
        one.upload(b"1", "mine.txt")
        assert two.listdir() == ""
        workspace = _workspace_of(server, one)
        assert workspace.startswith(tempfile.gettempdir()) and os.listdir(workspace) == ["mine.txt"]
    deadline = time.monotonic() + TIMEOUT_S
    while os.path.exists(workspace) and time.monotonic() < deadline:
        select.select([], [], [], 0.1)
    assert not os.path.exists(workspace)  # deleted once the session ended
