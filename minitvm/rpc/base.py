"""The wire format of minitvm's RPC: a handshake, then messages of a JSON header and raw bytes.

Every message is one frame: two little-endian lengths (header bytes as u32, payload bytes as u64),
the header (a UTF-8 JSON object) and the payload (an uploaded file, or the bytes of the arrays
the header describes by dtype and shape). Nothing received is unpickled, evaluated or imported:
a header is parsed as JSON and each field it must have is checked for its JSON type here, before
any handler looks at it. A frame that breaks these rules is a ProtocolError, and the side that
reads it closes the connection.

The handshake: the client sends MAGIC, then a frame whose header is
`{"key": str, "session_timeout": seconds}`; the server answers with a frame
`{"ok": true, "version": 1, "max_message_bytes": n}` or an error reply, and then serves requests.
"""

from __future__ import annotations

import json
import logging
import socket
import struct
import time
from collections.abc import Iterable

import numpy as np

from .. import error as _error
from ..error import MiniTVMError, RuntimeError_

logger = logging.getLogger("minitvm.rpc")

MAGIC = b"MTVMRPC\x01"  # what a client sends first; the last byte is the protocol version
PROTOCOL_VERSION = 1
TVM_MAGIC = struct.pack("<i", 0xFF271)  # Apache TVM's RPC peers start with this int32
FRAME = struct.Struct("<IQ")  # header bytes, payload bytes
MAX_HEADER_BYTES = 1 << 20  # a request's JSON (argument lists, directory listings)
HANDSHAKE_HEADER_BYTES = 4096
MAX_MESSAGE_BYTES = 1 << 30  # default limit on one payload: an uploaded file, a call's arrays
HANDSHAKE_TIMEOUT_S = 10.0  # how long the server waits for a connecting client to say hello
_SMALL_SEND = 1 << 16  # frames up to this size go out in one sendall (one TCP segment)
_LINGER_S = 1.0  # how long a refusing side reads what the peer still sends before closing


class RPCError(RuntimeError_):
    """An RPC failure: the connection, the protocol, a refused path or size, or an error raised
    on the server that is no minitvm error class (TVM's `tvm.error.RPCError`)."""


class ProtocolError(RPCError):
    """A message that breaks the wire format; the connection it came on is closed."""


class ConnectionClosed(RPCError):
    """The peer closed the connection in the middle of a message."""


# --- framing ----------------------------------------------------------------------------
def recv_exact(sock: socket.socket, n: int, what: str, eof_ok: bool = False) -> bytearray | None:
    """Exactly `n` bytes from `sock`; None when the peer closed before the first byte and
    `eof_ok`, else ConnectionClosed when it closes early."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            if got == 0 and eof_ok:
                return None
            raise ConnectionClosed(
                f"the peer closed the connection after {got} of the {n} bytes of {what}"
            )
        got += k
    return buf


def parse_header(raw: bytes | bytearray) -> dict:
    """A message header: a JSON object, or a ProtocolError."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        # RecursionError: JSON nested deeper than the parser's stack
        raise ProtocolError(f"the message header is not JSON text ({err})") from err
    if not isinstance(header, dict):
        raise ProtocolError(
            f"the message header must be a JSON object, got a {type(header).__name__}"
        )
    return header


def recv_message(
    sock: socket.socket, max_payload: int, max_header: int = MAX_HEADER_BYTES
) -> tuple[dict, bytearray] | None:
    """The next (header, payload) from `sock`, None when the peer closed between messages.
    Both lengths are checked against the limits before anything is allocated."""
    head = recv_exact(sock, FRAME.size, "a message frame", eof_ok=True)
    if head is None:
        return None
    n_header, n_payload = FRAME.unpack(head)
    if n_header > max_header:
        raise ProtocolError(
            f"a message header of {n_header} bytes is over the limit of {max_header} bytes"
        )
    if n_payload > max_payload:
        raise ProtocolError(
            f"a message payload of {n_payload} bytes is over the limit of {max_payload} bytes"
        )
    header = parse_header(recv_exact(sock, n_header, "a message header"))
    payload = recv_exact(sock, n_payload, "a message payload") if n_payload else bytearray()
    return header, payload


def as_bytes(chunk) -> memoryview:
    """A flat byte view of a bytes-like object or a C-contiguous numpy array (no copy)."""
    if isinstance(chunk, np.ndarray):
        chunk = np.ascontiguousarray(chunk).reshape(-1).view(np.uint8)
    return memoryview(chunk).cast("B")


def send_message(sock: socket.socket, header: dict, chunks: Iterable = ()) -> None:
    """Send one frame: `header` as JSON and the concatenation of `chunks` as its payload."""
    body = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_HEADER_BYTES:
        raise RPCError(
            f"a message header of {len(body)} bytes is over the limit of {MAX_HEADER_BYTES} "
            "bytes (too many or too long arguments)"
        )
    views = [as_bytes(c) for c in chunks]
    total = sum(v.nbytes for v in views)
    head = FRAME.pack(len(body), total) + body
    if total + len(head) <= _SMALL_SEND:
        sock.sendall(b"".join([head, *views]))
        return
    sock.sendall(head)
    for v in views:
        sock.sendall(v)


def close_with_reply(sock: socket.socket, reply: dict | None = None) -> None:
    """Send `reply` (if any) and close, first reading what the peer still sends for a moment:
    closing with unread input resets the connection, which can destroy the reply in transit."""
    try:
        if reply is not None:
            send_message(sock, reply)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(_LINGER_S)
        deadline, drained = time.monotonic() + _LINGER_S, 0
        while time.monotonic() < deadline and drained < MAX_HEADER_BYTES:
            data = sock.recv(1 << 16)
            if not data:
                break
            drained += len(data)
    except OSError:
        pass  # the peer is gone; whoever refused it has logged why
    finally:
        sock.close()


# --- header fields ----------------------------------------------------------------------
_MISSING = object()
_JSON_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", list: "a list",
                    dict: "an object", bool: "true or false", type(None): "null"}  # fmt: skip


def field(header: dict, name: str, *kinds: type, default=_MISSING, what: str = "a request"):
    """`header[name]`, which must have one of the JSON types `kinds` (exact: `true` is no
    integer; `float` also admits integers), else a ProtocolError naming the field."""
    value = header.get(name, _MISSING)
    if value is _MISSING:
        if default is not _MISSING:
            return default
        raise ProtocolError(f"{what} has no field '{name}'")
    allowed = set(kinds) | ({int} if float in kinds else set())
    if type(value) not in allowed:
        wanted = " or ".join(_JSON_TYPE_NAMES[k] for k in kinds)
        raise ProtocolError(
            f"{what}: field '{name}' must be {wanted}, got {_JSON_TYPE_NAMES.get(type(value))}"
        )
    return value


# --- errors across the connection -------------------------------------------------------
def error_reply(err: BaseException) -> dict:
    """The reply header that carries `err` to the other side."""
    return {"ok": False, "error": {"type": type(err).__name__, "message": str(err)}}


def _error_classes() -> dict[str, type]:
    """minitvm's error classes by name: the only classes a remote error becomes."""
    classes = {
        name: cls
        for name, cls in vars(_error).items()
        if isinstance(cls, type) and issubclass(cls, MiniTVMError)
    }
    classes.update(RPCError=RPCError, ProtocolError=RPCError, ConnectionClosed=RPCError)
    return classes


def raise_remote_error(reply: dict, where: str) -> None:
    """Raise the error that an `{"ok": false}` reply carries, as the minitvm class of that name
    (RPCError for any other name), its message prefixed with `where`."""
    info = field(reply, "error", dict, what="an error reply")
    kind = field(info, "type", str, what="an error reply")
    message = field(info, "message", str, what="an error reply")
    cls = _error_classes().get(kind)
    text = f"{where}: {message}" if cls else f"{where}: {kind}: {message}"
    cls = cls or RPCError
    try:
        err = cls(text)
    except TypeError:  # a class whose constructor takes structured arguments
        err = RPCError(f"{where}: {kind}: {message}")
    raise err
