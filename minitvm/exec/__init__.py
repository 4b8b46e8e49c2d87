"""Command-line entry points under TVM's names: `python -m minitvm.exec.rpc_server`."""
