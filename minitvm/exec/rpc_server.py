"""`python -m minitvm.exec.rpc_server --host 0.0.0.0 --port 9090`: serve RPC sessions (TVM's
`python -m tvm.exec.rpc_server`).

Clients connect with `rpc.connect(host, port)`. Every module a client uploads and loads runs as
native code on this machine, with this process's rights, by design (as in TVM): the default host
0.0.0.0 accepts anyone who can reach the port, so serve on 127.0.0.1 or a network you trust.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys

from ..rpc import RPCError, Server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minitvm.exec.rpc_server", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default all)")
    parser.add_argument("--port", type=int, default=9090, help="first port to try (0: any)")
    parser.add_argument("--port-end", type=int, default=9199, help="end of the port range")
    parser.add_argument("--key", default="", help="the key clients must connect with")
    parser.add_argument("--silent", action="store_true", help="log errors only")
    parser.add_argument("--max-sessions", type=int, default=8, help="sessions at once")
    parser.add_argument("--no-fork", action="store_true", help="accepted; sessions never fork")
    for refused in ("--tracker", "--load-library", "--custom-addr"):
        parser.add_argument(refused, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tracker or args.load_library or args.custom_addr:
        parser.error("--tracker, --load-library and --custom-addr are not supported (no tracker)")
    logging.basicConfig(
        level=logging.ERROR if args.silent else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        server = Server(args.host, args.port, args.port_end, key=args.key, silent=args.silent,
                        max_sessions=args.max_sessions)  # fmt: skip
    except RPCError as err:
        parser.exit(2, f"rpc_server: {err}\n")
    # SIGTERM ends the server like Ctrl-C: sessions and their workspaces are cleaned up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.wait()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
