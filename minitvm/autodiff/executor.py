"""`Executor`: compile the requested nodes (forward and backward) into ONE relax function,
build it with `relax.build` (legalize, fuse, plan memory, VM) and run it; one compiled program
per feed-shape signature.

Feed values are NDArrays or numpy arrays. Float arrays keep their dtype; integer and bool numpy
arrays become float32 (every dlsys op works on floats).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import relax
from ..error import MiniTVMError
from ..relax.expr import Tuple
from ..relax.op import grad as G
from ..relax.transform.gradient import Emitter, backprop
from ..runtime import NDArray, cpu, nd
from .graph import GRADIENT_OP, Node, find_topo_sort


def emit_nodes(em: Emitter, nodes: Sequence[Node], values: dict[Node, Any]) -> list[Any]:
    """Emit `nodes` (and everything they need) through `em`; `values` maps fed nodes to params."""
    grads: dict[int, list] = {}
    for node in find_topo_sort(nodes):
        if node in values:
            continue
        if node.op is None:
            raise MiniTVMError(
                f"ad.Executor: variable '{node.name}' is not in the feed_dict; feed it a value"
            )
        if node.op is GRADIENT_OP:
            group = node.attrs["group"]
            if id(group) not in grads:
                wrt = [values[x] for x in group.xs]
                adj = backprop(em, values[group.y], wrt)
                grads[id(group)] = [
                    g if g is not None else em.emit(G.zeros_like(w)) for g, w in zip(adj, wrt)
                ]
            values[node] = grads[id(group)][node.attrs["index"]]
            continue
        attrs = {k: v for k, v in node.attrs.items()}
        expr = node.op.emit(*[values[i] for i in node.inputs], **attrs)
        values[node] = em.emit(expr, _hint(node))
    return [values[n] for n in nodes]


def _hint(node: Node) -> str:
    return node.op.name.removesuffix("_op")


def _as_feed(node: Node, value: Any) -> NDArray:
    if isinstance(value, NDArray):
        return value
    arr = np.asarray(value)
    if arr.dtype.kind not in "f":
        arr = arr.astype("float32")
    return nd.array(np.ascontiguousarray(arr))


class Executor:
    """Runs the nodes `eval_node_list` for the values in a feed_dict (dlsys API)."""

    def __init__(
        self, eval_node_list: Sequence[Node], ctx: Any = None, target: str = "llvm"
    ) -> None:
        self.eval_node_list = list(eval_node_list)
        for k, n in enumerate(self.eval_node_list):
            if not isinstance(n, Node):
                raise MiniTVMError(
                    f"ad.Executor: eval_node_list[{k}] is a {type(n).__name__}, not a node"
                )
        self.ctx = ctx if ctx is not None else cpu(0)
        self.target = target
        self.topo_order = find_topo_sort(self.eval_node_list)
        self.variables = [n for n in self.topo_order if n.op is None]
        self._programs: dict[tuple, Any] = {}
        self.compile_count = 0
        self.feed_shapes: dict | None = None

    def build_module(self, shapes: Mapping[Node, tuple[tuple, str]]) -> Any:
        """The relax IRModule of `main(*variables) -> (values of eval_node_list)`."""
        params = [
            relax.Var(
                v.name if v.name.isidentifier() else f"v{k}", relax.TensorStructInfo(*shapes[v])
            )
            for k, v in enumerate(self.variables)
        ]
        bb = relax.BlockBuilder()
        with bb.function("main", params):
            with bb.dataflow():
                em = Emitter(bb)
                outs = emit_nodes(em, self.eval_node_list, dict(zip(self.variables, params)))
                result = bb.emit_output(Tuple(tuple(outs)))
            bb.emit_func_output(result)
        return bb.get()

    def _program(self, feeds: list[NDArray]) -> Any:
        key = tuple((tuple(a.shape), str(a.dtype)) for a in feeds)
        vm = self._programs.get(key)
        if vm is None:
            mod = self.build_module({v: k for v, k in zip(self.variables, key)})
            vm = relax.VirtualMachine(relax.build(mod, self.target), self.ctx)
            self._programs[key] = vm
            self.compile_count += 1
        self.feed_shapes = {v: k[0] for v, k in zip(self.variables, key)}
        return vm

    def run(self, feed_dict: Mapping[Node, Any], convert_to_numpy_ret_vals: bool = False) -> list:
        """Values of eval_node_list (NDArrays, or numpy arrays when asked)."""
        feeds = []
        for v in self.variables:
            if v not in feed_dict:
                raise MiniTVMError(
                    f"ad.Executor.run: variable '{v.name}' is not in the feed_dict; feed it a value"
                )
            feeds.append(_as_feed(v, feed_dict[v]))
        outs = self._program(feeds)["main"](*feeds)
        outs = list(outs)
        if convert_to_numpy_ret_vals:
            return [o.numpy() for o in outs]
        return outs


__all__ = ["Executor", "emit_nodes"]
