"""Data-parallel training: N processes, each running the compiled program on its shard of the
global batch, with gradients all-reduced by `torch.distributed` (gloo on CPU).

A `relax.training.Trainer` keeps the gradient program (`backbone_loss_adjoint`) and the update
(`optimizer`) apart, so one step here is: gradients of this shard, one all-reduce (the average
over the processes) of the loss and the gradients, then the same update on every process. The
replicas start from rank 0's parameters and stay equal because they apply equal updates.

Processes find each other through torch's environment variables: `MASTER_ADDR`, `MASTER_PORT`
(rank 0's address and a free port), `WORLD_SIZE` (processes in all), `RANK` (this one's index),
as set by `launch` below, by `python -m minitvm.training.distributed`, or by `torchrun`:

    python -m minitvm.training.distributed --nproc-per-node 2 train.py      # one machine
    # two machines, 2 processes each; the same command on both, --node-rank 0 and 1
    python -m minitvm.training.distributed --nnodes 2 --node-rank 0 --nproc-per-node 2 \\
        --master-addr 10.0.0.1 --master-port 29500 train.py

and in train.py:

    dp = DataParallel(trainer)                    # world size and rank from the environment
    x, y = shard(x_global, dp.world_size, dp.rank), shard(y_global, dp.world_size, dp.rank)
    loss = dp.step(x, y)                          # the global batch's loss, on every rank

A `TorchTrainer(..., world_size=N)` fuses forward, backward, the all-reduce and the update
into one program: its `relax.ccl.allreduce` calls reach torch.distributed through
`runtime.disco.allreduce`, which a DataParallel registers for the life of its process group
(and refuses to run without one). Its train-mode BatchNorms are synchronized (collectives.py).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from ..error import TVMError
from ..relax.op.ccl import _REDUCTIONS
from ..runtime import nd
from ..runtime.registry import register_func, remove_global_func

ENV_VARS = {
    "MASTER_ADDR": "address of the rank-0 process's machine (all processes use the same)",
    "MASTER_PORT": "a free TCP port on that machine (all processes use the same)",
    "WORLD_SIZE": "number of processes in all, over all machines",
    "RANK": "this process's index in 0..WORLD_SIZE-1 (rank 0 broadcasts the initial weights)",
    "LOCAL_RANK": "this process's index on its machine (set by launch; informative)",
}


class DistributedError(TVMError, RuntimeError):
    """Data-parallel training cannot start or a process failed."""


def _torch_dist(backend: str) -> Any:
    try:
        import torch.distributed as dist
    except ImportError as err:
        raise DistributedError(
            "data-parallel training needs PyTorch's torch.distributed; pip install torch "
            "(the CPU build is enough)"
        ) from err
    if not dist.is_available():
        raise DistributedError("this PyTorch build has no torch.distributed; install another")
    if backend == "gloo" and not dist.is_gloo_available():
        raise DistributedError("this PyTorch build has no gloo backend; install the CPU build")
    return dist


def is_available(backend: str = "gloo") -> bool:
    """Whether torch.distributed with `backend` can be used here."""
    try:
        _torch_dist(backend)
    except DistributedError:
        return False
    return True


def _env_int(name: str, given: int | None) -> int:
    if given is not None:
        return int(given)
    value = os.environ.get(name)
    if value is None:
        raise DistributedError(
            f"DataParallel: {name} is not set and was not passed; pass it, or start the "
            "processes with minitvm.training.distributed.launch / torchrun, which set it"
        )
    try:
        return int(value)
    except ValueError as err:
        raise DistributedError(f"DataParallel: {name}={value!r} is not an integer") from err


def shard(batch: Any, world_size: int, rank: int) -> np.ndarray:
    """Rank `rank`'s contiguous 1/world_size of `batch` along axis 0 (sizes must divide)."""
    arr = np.asarray(batch.numpy() if hasattr(batch, "numpy") else batch)
    if world_size < 1 or not 0 <= rank < world_size:
        raise DistributedError(f"shard: rank {rank} is not in 0..{world_size - 1}")
    if arr.ndim == 0 or arr.shape[0] % world_size:
        raise DistributedError(
            f"shard: a batch of {arr.shape[0] if arr.ndim else 'no'} rows does not split into "
            f"{world_size} equal shards; use a global batch divisible by the world size"
        )
    n = arr.shape[0] // world_size
    return np.ascontiguousarray(arr[rank * n : (rank + 1) * n])


class DataParallel:
    """A `relax.training.Trainer` or a `TorchTrainer(..., world_size=N)` replicated over
    `world_size` processes (torch.distributed).

    `step(x_shard, y_shard)` runs the trainer's gradient program on this process's shard,
    all-reduces the loss and the gradients (averaged when `average`, the right rule for
    losses with reduction="mean"; summed otherwise, for reduction="sum"), applies the
    optimizer and returns the global batch's loss. Model states (e.g. running statistics) are
    averaged too. Every shard must have the trainer's compiled batch size. A TorchTrainer's
    step does all of this inside its one program (average gradients, synchronized BatchNorm);
    `average` does not apply to it.

    >>> dp = DataParallel(trainer, world_size=2, rank=int(os.environ["RANK"]))
    >>> loss = dp.step(shard(x, 2, dp.rank), shard(y, 2, dp.rank))
    """

    def __init__(
        self,
        trainer_or_program: Any,
        world_size: int | None = None,
        rank: int | None = None,
        backend: str = "gloo",
        *,
        average: bool = True,
        init_method: str = "env://",
        timeout_s: float = 300.0,
        broadcast_params: bool = True,
    ) -> None:
        from ..relax.training import Trainer
        from .torch_trainer import TorchTrainer

        if not isinstance(trainer_or_program, Trainer | TorchTrainer):
            raise DistributedError(
                f"DataParallel needs a relax.training.Trainer or a TorchTrainer built with "
                f"world_size=N, got {type(trainer_or_program).__name__}; minitvm.training's "
                "TrainingProgram fuses the update into the step and cannot all-reduce gradients"
            )
        self.trainer = trainer_or_program
        self._fused = isinstance(trainer_or_program, TorchTrainer)
        self.world_size = _env_int("WORLD_SIZE", world_size)
        self.rank = _env_int("RANK", rank)
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise DistributedError(
                f"DataParallel: rank {self.rank} is not in 0..{self.world_size - 1} "
                f"(world_size {self.world_size})"
            )
        if self._fused and self.trainer.world_size != self.world_size:
            raise DistributedError(
                f"DataParallel: the TorchTrainer was built with world_size="
                f"{self.trainer.world_size}, the process group has {self.world_size} processes; "
                f"build it with TorchTrainer(..., world_size={self.world_size})"
            )
        self.average = average
        self._flat: dict[np.dtype, np.ndarray] = {}  # _all_reduce's buffers, one per dtype
        self._dist = dist = _torch_dist(backend)
        self._owns_group = False
        if dist.is_initialized():
            if (dist.get_world_size(), dist.get_rank()) != (self.world_size, self.rank):
                raise DistributedError(
                    f"DataParallel: the process group is already set up with world size "
                    f"{dist.get_world_size()} and rank {dist.get_rank()}, not "
                    f"{self.world_size} and {self.rank}"
                )
        else:
            if init_method == "env://":
                missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
                if missing:
                    raise DistributedError(
                        f"DataParallel: {' and '.join(missing)} not set; set them to rank 0's "
                        "address and a free port on every process (launch() does this)"
                    )
            try:
                dist.init_process_group(
                    backend,
                    init_method=init_method,
                    world_size=self.world_size,
                    rank=self.rank,
                    timeout=timedelta(seconds=timeout_s),
                )
            except (RuntimeError, ValueError) as err:  # torch's DistStoreError etc.
                raise DistributedError(
                    f"DataParallel: rank {self.rank} of {self.world_size} could not join the "
                    f"process group at {init_method} (MASTER_ADDR="
                    f"{os.environ.get('MASTER_ADDR')}, MASTER_PORT="
                    f"{os.environ.get('MASTER_PORT')}) within {timeout_s} s: {err}; check that "
                    "every process was started with the same address, port and world size"
                ) from err
            self._owns_group = True
        _activate(self)
        if broadcast_params:
            try:
                self.broadcast_parameters()
            except BaseException:
                self.close()
                raise

    # ----------------------------------------------------------------- collectives
    def _all_reduce(self, arrays: list[Any]) -> list[np.ndarray]:
        """Sum (then average when `self.average`) each array (numpy or NDArray) over the
        processes: one all-reduce per dtype, on one flat buffer kept between steps.

        Each array is copied once, into its slice of the buffer; the average is taken in place
        and the results are views of the buffer, valid until the next call (callers copy them
        into NDArrays at once). A ResNet-18 step moves 47 MB of gradients, so every extra pass
        over them (a copy out of the NDArray, a concatenation, a new array for the average)
        costs about as much as a tenth of the all-reduce itself."""
        import torch

        out: list[np.ndarray | None] = [None] * len(arrays)
        flats, places = self._pack([_host_view(a) for a in arrays])
        for k, view in places:
            out[k] = view
        for flat in flats:
            self._collective(
                self._dist.all_reduce, torch.from_numpy(flat), op=self._dist.ReduceOp.SUM
            )
            if self.average:  # the same float division as dividing each array on its own
                np.divide(flat, self.world_size, out=flat, casting="unsafe")
        return out  # type: ignore[return-value]

    def _reduce_into(self, xs: list, op_type: str, outs: list) -> None:
        """`outs[k]` = the reduction of every process's `xs[k]` (NDArrays or numpy arrays).
        One tensor is copied into its output and reduced in place there; several go through
        one flat buffer per dtype (`_all_reduce`'s), one collective each, and are copied out."""
        import torch

        ops = self._dist.ReduceOp
        code = {"sum": ops.SUM, "avg": ops.SUM, "prod": ops.PRODUCT, "min": ops.MIN}
        code["max"] = ops.MAX
        srcs, dsts = [_host_view(a) for a in xs], [_host_view(a) for a in outs]
        if len(srcs) == 1:
            if not np.may_share_memory(srcs[0], dsts[0]):
                np.copyto(dsts[0], srcs[0])
            flats, places = [dsts[0].reshape(-1)], []
        else:
            flats, places = self._pack(srcs)
        for flat in flats:
            self._collective(self._dist.all_reduce, torch.from_numpy(flat), op=code[op_type])
            if op_type == "avg" and not places:
                np.divide(flat, self.world_size, out=flat, casting="unsafe")
        for k, view in places:  # the average is taken on the way out: one pass fewer
            if op_type == "avg":
                np.divide(view, self.world_size, out=dsts[k], casting="unsafe")
            else:
                np.copyto(dsts[k], view)
        for out, dst in zip(outs, dsts):
            if getattr(getattr(out, "device", None), "is_gpu", False):  # dst was a host copy
                out.copyfrom(dst)

    def _pack(self, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], list[tuple]]:
        """Each dtype's arrays copied into one flat buffer (kept between steps): (the buffers,
        [(index, its view in a buffer)])."""
        by_dtype: dict[np.dtype, list[int]] = {}
        for k, a in enumerate(arrays):
            by_dtype.setdefault(a.dtype, []).append(k)
        flats, places = [], []
        for dtype, idx in by_dtype.items():
            size = sum(arrays[k].size for k in idx)
            flat = self._flat.get(dtype)
            if flat is None or flat.size != size:
                flat = self._flat[dtype] = np.empty(size, dtype)
            offset = 0
            for k in idx:
                n = arrays[k].size
                view = flat[offset : offset + n].reshape(arrays[k].shape)
                np.copyto(view, arrays[k])
                places.append((k, view))
                offset += n
            flats.append(flat)
        return flats, places

    def _collective(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        if not self._dist.is_initialized():
            raise DistributedError(
                f"DataParallel: rank {self.rank} has no process group (it was closed, or an "
                "earlier collective failed and tore it down); start a new DataParallel"
            )
        try:
            fn(*args, **kwargs)
        except RuntimeError as err:  # a peer died or timed out (torch's DistBackendError)
            # A failed collective leaves the group unusable; tear it down now so that its
            # transport threads stop before interpreter exit (left alone they can abort
            # the process during teardown, after the error has been handled).
            self._abandon_group()
            raise DistributedError(
                f"DataParallel: {fn.__name__} failed on rank {self.rank}: {err}; another "
                "process probably exited or stopped calling step()"
            ) from err

    def broadcast_parameters(self) -> None:
        """Every process takes rank 0's parameters, model states and optimizer state (a
        TorchTrainer's: parameters, optimizer states and buffers)."""
        import torch

        t = self.trainer
        if self._fused:
            lists = (t._params, t._states, t._buffers)
        else:
            t._check_inited()
            lists = (t._params, t._states, t._optim_state)
        for values in lists:
            for i, v in enumerate(values):
                host = v.numpy().copy(order="C")  # keeps 0-d arrays 0-d
                self._collective(self._dist.broadcast, torch.from_numpy(host), src=0)
                values[i] = nd.array(host, v.device)

    def barrier(self) -> None:
        """Wait for every process."""
        self._collective(self._dist.barrier)

    # ----------------------------------------------------------------- training
    def step(self, x_shard: Any, y_shard: Any) -> float:
        """One data-parallel step on this process's shard; returns the global batch's loss."""
        t = self.trainer
        if self._fused:
            return t.step(x_shard, y_shard)
        ret, grads = t.vm[t.ADJOINT_FUNC](*t._inputs(x_shard, y_shard))
        states = []
        if t._state_num:
            states, ret = list(ret[1:]), ret[0]
        reduced = self._all_reduce([ret, *grads, *states])
        loss, rest = reduced[0], reduced[1:]
        new_grads = [nd.array(g, t.device) for g in rest[: len(grads)]]
        if t._state_num:
            t._states = [nd.array(s, t.device) for s in rest[len(grads) :]]
        new_params, new_state = t.vm[t.OPTIMIZER_FUNC](
            tuple(t._params), tuple(new_grads), tuple(t._optim_state)
        )
        t._params, t._optim_state = list(new_params), list(new_state)
        return float(loss)

    def predict(self, *inputs: Any) -> Any:
        """The local replica's prediction (all replicas hold the same parameters)."""
        return self.trainer.predict(*inputs)

    def _abandon_group(self) -> None:
        _deactivate(self)
        if self._owns_group and self._dist.is_initialized():
            try:
                self._dist.destroy_process_group()
            except RuntimeError:  # already broken beyond tearing down
                pass
        self._owns_group = False

    def close(self) -> None:
        """Leave the process group (only if this object created it); programs' all-reduces
        refuse to run from now on."""
        _deactivate(self)
        if self._owns_group and self._dist.is_initialized():
            self._dist.destroy_process_group()
        self._owns_group = False

    def __enter__(self) -> DataParallel:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------ all-reduces inside programs
_ALLREDUCE = "runtime.disco.allreduce"  # what relax.ccl.allreduce legalizes to (ccl.py)
_ACTIVE: list[DataParallel] = []  # the open DataParallels of this process, newest last


def active() -> DataParallel | None:
    """The DataParallel whose process group programs' all-reduces use now (the newest open)."""
    return _ACTIVE[-1] if _ACTIVE else None


def _program_allreduce(x: Any, code: Any, in_group: Any, *outs: Any) -> None:
    """`runtime.disco.allreduce(x, (op code,), in_group, *outs)` as relax.ccl.allreduce calls
    it (x a tensor or a tuple of them, one output each): over the active DataParallel's
    processes. A VM keeps this function once it has looked it up, so the check for a group is
    made at every call."""
    dp = active()
    if dp is None:
        raise DistributedError(
            "relax.ccl.allreduce: no process group is active in this process (no open "
            "DataParallel); a program with collectives runs only under DataParallel in each "
            "process of the group: it never acts as a group of one"
        )
    xs = list(x) if isinstance(x, list | tuple) else [x]
    if len(outs) == 1 and isinstance(outs[0], list | tuple):
        outs = tuple(outs[0])
    dp._reduce_into(xs, _REDUCTIONS[int(code[0])], list(outs))


def _activate(dp: DataParallel) -> None:
    if not _ACTIVE:
        register_func(_ALLREDUCE, _program_allreduce, override=True)
    _ACTIVE.append(dp)


def _deactivate(dp: DataParallel) -> None:
    if dp in _ACTIVE:
        _ACTIVE.remove(dp)
        if not _ACTIVE:
            remove_global_func(_ALLREDUCE)


def _host_view(a: Any) -> np.ndarray:
    """`a` as a numpy array without a copy where it lives in host memory."""
    if isinstance(a, np.ndarray):
        return a
    if getattr(a.device, "is_gpu", False):
        return a.numpy()
    return np.from_dlpack(a)


# --------------------------------------------------------------------- launching processes
def free_port() -> int:
    """A TCP port that is free on this machine now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: str, n: int = 2000) -> str:
    with open(path, errors="replace") as f:
        return f.read()[-n:]


def launch(
    argv: Sequence[str],
    nproc_per_node: int,
    *,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int | None = None,
    num_threads: int | None = 1,
    timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    capture: bool = False,
) -> list[str]:
    """Run `python *argv` as this machine's `nproc_per_node` processes of a job of
    `nnodes * nproc_per_node`, with MASTER_ADDR/PORT, WORLD_SIZE, RANK, LOCAL_RANK set and
    MINITVM_NUM_THREADS (and torch's thread count, OMP_NUM_THREADS) set to `num_threads`.

    Waits for all; when one fails or `timeout_s` passes, stops the others and raises
    DistributedError naming the rank. Returns each local process's output when `capture`
    (else the processes write to this one's stdout/stderr and the list holds empty strings).
    """
    if nproc_per_node < 1 or nnodes < 1 or not 0 <= node_rank < nnodes:
        raise DistributedError(
            f"launch: need nproc_per_node >= 1, nnodes >= 1 and 0 <= node_rank < nnodes; got "
            f"{nproc_per_node}, {nnodes}, {node_rank}"
        )
    if master_port is None:
        if nnodes > 1:
            raise DistributedError("launch: with several machines pass master_port (the same)")
        master_port = free_port()
    world = nnodes * nproc_per_node
    base = dict(os.environ if env is None else env)
    base.update(MASTER_ADDR=master_addr, MASTER_PORT=str(master_port), WORLD_SIZE=str(world))
    if num_threads is not None:
        base.update(MINITVM_NUM_THREADS=str(num_threads), OMP_NUM_THREADS=str(num_threads))
    with tempfile.TemporaryDirectory(prefix="minitvm-launch-") as tmp:
        procs, logs = [], []
        try:
            for local in range(nproc_per_node):
                rank = node_rank * nproc_per_node + local
                penv = dict(base, RANK=str(rank), LOCAL_RANK=str(local))
                log = os.path.join(tmp, f"rank{rank}.log")
                logs.append(log)
                out = open(log, "w") if capture else None  # noqa: SIM115 (closed below)
                procs.append(
                    subprocess.Popen(
                        [sys.executable, *argv],
                        env=penv,
                        stdout=out,
                        stderr=subprocess.STDOUT if capture else None,
                    )
                )
                if out is not None:
                    out.close()
            _wait_all(procs, node_rank * nproc_per_node, timeout_s, logs if capture else None)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        return [_tail(log, 1 << 20) for log in logs] if capture else [""] * nproc_per_node


def _wait_all(procs: list, first_rank: int, timeout_s: float | None, logs: list | None) -> None:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        codes = [p.poll() for p in procs]
        bad = next((i for i, c in enumerate(codes) if c not in (None, 0)), None)
        if bad is not None:
            detail = f":\n{_tail(logs[bad])}" if logs else " (its output is above)"
            raise DistributedError(
                f"launch: rank {first_rank + bad} exited with code {codes[bad]}; the other "
                f"processes were stopped{detail}"
            )
        if all(c == 0 for c in codes):
            return
        if deadline is not None and time.monotonic() > deadline:
            raise DistributedError(
                f"launch: the processes did not finish within {timeout_s} s; they were stopped "
                "(a rank that never calls step() leaves the others waiting in the all-reduce)"
            )
        time.sleep(0.05)


def main(args: Sequence[str] | None = None) -> int:
    """`python -m minitvm.training.distributed [options] script.py [script args]`."""
    p = argparse.ArgumentParser(
        prog="python -m minitvm.training.distributed",
        description="Start the processes of a data-parallel job on this machine "
        "(torchrun-style environment: " + ", ".join(ENV_VARS) + ").",
    )
    p.add_argument("--nproc-per-node", type=int, default=1)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=None)
    p.add_argument("--threads", type=int, default=1, help="threads per process (default 1)")
    p.add_argument("--timeout", type=float, default=None, help="seconds before stopping all")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    ns = p.parse_args(args)
    try:
        launch(
            [ns.script, *ns.script_args],
            ns.nproc_per_node,
            nnodes=ns.nnodes,
            node_rank=ns.node_rank,
            master_addr=ns.master_addr,
            master_port=ns.master_port,
            num_threads=ns.threads,
            timeout_s=ns.timeout,
        )
    except DistributedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


__all__ = [
    "ENV_VARS",
    "DataParallel",
    "DistributedError",
    "active",
    "free_port",
    "is_available",
    "launch",
    "main",
    "shard",
]


if __name__ == "__main__":
    sys.exit(main())
