"""from_onnx: walk an ONNX graph in order, fold what is known at import time, emit relax ops.

Every value of the graph is one of three kinds while importing:
  * a numpy array — known at import time (initializers, Constant, folded nodes);
  * a `SymTensor` — a small int tensor some of whose elements are symbolic dims (the
    Shape -> Gather -> Concat -> Reshape chains exporters write for a dynamic batch);
  * a relax expression — computed by the compiled program.
A node whose inputs are all known is folded (shape arithmetic by `_shape`, anything else by
onnx's reference evaluator) when `_fold` finds its result small and cheap enough; otherwise its
converter from `_ops.CONVERTERS` emits relax ops.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

import numpy as np

from ....error import FrontendError, MiniTVMError, OpAttributeInvalid
from ....runtime import ndarray as nd
from ....tir.expr import PrimExpr
from ....tir.expr import Var as TirVar
from ...block_builder import BlockBuilder
from ...expr import Expr, Tuple, Var, const
from ...functor import used_vars
from ...struct_info import TensorStructInfo
from ..common import raise_unsupported
from . import _checks, _control, _dataflow, _function, _ops, _sequence
from . import _fold as _fold_mod
from ._contrib import CONTRIB_CONVERTERS
from ._misc_ops import ML_CONVERTERS, TRAINING_CONVERTERS
from ._shape import SymTensor

SUPPORTED_OPSETS = range(13, 22)  # tested; 11 and 12 work where converters note the difference
_MIN_OPSET = 1
# converters implement each op's versions in effect from opset 11 on; an older model is taken
# node by node: an op whose version there is the one of opset 11 (And-7, Not-1, ...) converts,
# an op that changed since (Clip-6, Upsample-9, ...) is refused
_CONVERTED_FROM_OPSET = 11
# the newest opset defined by onnx 1.23; converters implement each op's newest meaning up to it
_MAX_OPSET = 28
_DEFAULT_DOMAINS = ("", "ai.onnx")
_MAX_RUNTIME_RANK = 64  # dims of a shape computed at run time: each becomes a symbolic var
# ops whose converter also implements versions older than opset 11's: op -> the oldest one
_OLDER_VERSIONS_CONVERTED = {
    "If": 1,
    "Loop": 1,
    "Scan": 8,
    "Scatter": 9,
    "TopK": 1,
    "Unsqueeze": 1,  # axes attribute (and no negative axes) before 11
    "Clip": 6,  # min/max attributes before 11
    "Pad": 2,  # pads/value attributes before 11
}
# the ops converted from other domains; any other op of these domains is refused by name
_OTHER_DOMAINS = {
    "com.microsoft": CONTRIB_CONVERTERS,
    "ai.onnx.ml": ML_CONVERTERS,
    "ai.onnx.preview.training": TRAINING_CONVERTERS,
}


def _require_onnx() -> Any:
    try:
        import onnx
    except ImportError as err:
        raise FrontendError(
            "from_onnx needs the 'onnx' package; install it with `pip install onnx`"
        ) from err
    return onnx


def onnx_dtype(elem_type: int) -> str:
    """The numpy/relax dtype name of an ONNX TensorProto element type."""
    onnx = _require_onnx()
    try:
        return str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)))
    except (KeyError, TypeError, ValueError) as err:
        names = onnx.TensorProto.DataType
        name = names.Name(elem_type) if elem_type in names.values() else f"number {elem_type}"
        raise FrontendError(
            f"ONNX element type {name} has no minitvm dtype; supported: float, integer and bool "
            "types"
        ) from err


class Context:
    """State of one import: the BlockBuilder, value table, symbolic dims and kept params."""

    def __init__(self, opset: int, keep_params: bool, dataflow: bool = True):
        self.bb = BlockBuilder()
        self.opset = opset
        self.keep_params = keep_params
        self.dataflow = dataflow  # emitting into a dataflow block (no If can be emitted)
        self.values: MutableMapping[str, Any] = {}  # a ChainMap of scopes inside subgraphs
        self.graph_depth = 0  # subgraphs entered
        self.subgraph_nodes = 0  # subgraph nodes converted, every loop iteration counted
        self.if_dims = 0  # If outputs given fresh symbolic dims (they are numbered)
        self.runtime_dims = 0  # dims of shapes computed at run time (numbered)
        self.sym_vars: dict[str, TirVar] = {}
        self.plain_dims: set[str] = set()  # dim_params that are bare identifiers
        self.param_values: dict[Var, np.ndarray] = {}
        self.node: Any = None  # the node being converted, for messages
        self.folded_elements = 0  # elements of every folded node's outputs (`_fold.FOLD_BUDGET`)
        self.fold_refused: str | None = None  # why the node being converted was not folded
        self.left_to_run_time: dict[Var, str] = {}  # outputs too big to fold -> node and why

    # -------------------------------------------------------------- values
    def emit(self, expr: Expr) -> Var:
        return self.bb.emit(expr)

    def expr(self, value: Any, dtype: str | None = None) -> Expr:
        """`value` as a relax expression (known arrays become constants)."""
        if isinstance(value, Expr):
            return value
        if isinstance(value, SymTensor):
            return self.sym_tensor(value)
        if (seq := _sequence.as_expr(self, value)) is not None:
            return seq  # a sequence as a Tuple, an optional as its element
        if value is None:
            raise FrontendError(f"{self.where()}: a required input is missing")
        return const(np.asarray(value, dtype=dtype) if dtype else np.asarray(value))

    def sym_tensor(self, value: SymTensor) -> Expr:
        """A tensor of symbolic dims computed at run time: one filled element per dim, joined."""
        from ... import op as R

        elems = [
            self._sym_element(e, value.dtype)
            if isinstance(e, PrimExpr)
            else self.emit(R.full((1,), const(np.asarray(e, value.dtype)), value.dtype))
            for e in value.values.reshape(-1)
        ]
        flat = elems[0] if len(elems) == 1 else self.emit(R.concat(elems, 0))
        return self.emit(R.reshape(flat, value.shape)) if value.values.ndim != 1 else flat

    def _sym_element(self, e: PrimExpr, dtype: str) -> Var:
        """A symbolic dim as a (1,) tensor: the VM evaluates it from the shapes it has bound
        (a TE fill would need the dim as an argument no tensor carries)."""
        from ... import op as R
        from ...expr import ShapeExpr

        t = self.emit(R.shape_to_tensor(ShapeExpr((e,))))
        return t if dtype == "int64" else self.emit(R.astype(t, dtype))

    def known(self, value: Any, what: str) -> np.ndarray | SymTensor:
        """An input that must be known at import time (shape, axes, pads, scales ...)."""
        if isinstance(value, Var) and value in self.param_values:
            return self.param_values[value]
        if isinstance(value, np.ndarray | SymTensor):
            return value
        if isinstance(value, Var) and value in self.left_to_run_time:
            raise FrontendError(
                f"{self.where()}: input '{what}' comes from {self.left_to_run_time[value]}, so "
                "it is computed at run time; minitvm needs it at import time and will not embed "
                "a constant that large. Make the model compute a smaller value"
            )
        raise FrontendError(
            f"{self.where()}: input '{what}' is computed at run time; minitvm needs it at import "
            "time (static shapes, axes, pads). Fix the dims in shape_dict or fold it in the model"
        )

    def known_or_none(self, value: Any) -> np.ndarray | SymTensor | None:
        """The value when it is known at import time, else None."""
        if isinstance(value, Var) and value in self.param_values:
            return self.param_values[value]
        return value if isinstance(value, np.ndarray | SymTensor) else None

    def ints(self, value: Any, what: str) -> list:
        """A known 1-D (or scalar) int input as a list of ints / symbolic dims."""
        value = self.known(value, what)
        elems = value.values if isinstance(value, SymTensor) else np.asarray(value)
        return [e if not isinstance(e, np.integer | int) else int(e) for e in elems.reshape(-1)]

    def runtime_shape(self, value: Any, what: str, expect: list | None = None) -> Var:
        """An int 1-d input computed at run time as a Shape value whose dims are fresh symbolic
        vars (so later ops have symbolic shapes); the VM checks each value is a dim (>= 0) and
        equals `expect[i]` where that is not None."""
        from ... import op as R
        from ...struct_info import ShapeStructInfo

        t = self.expr(value)
        sinfo = t.struct_info
        length = None
        if isinstance(sinfo, TensorStructInfo) and sinfo.shape is not None and sinfo.ndim == 1:
            length = getattr(sinfo.shape[0], "value", None)
        if length is not None and length > _MAX_RUNTIME_RANK:
            raise FrontendError(
                f"{self.where()}: input '{what}' is a shape of {length} dims computed at run "
                f"time; minitvm takes at most {_MAX_RUNTIME_RANK} (one symbolic var each)"
            )
        if length is None or sinfo.dtype is None or not sinfo.dtype.is_integer:
            raise FrontendError(
                f"{self.where()}: input '{what}' is computed at run time as {sinfo}; minitvm needs "
                "a 1-d integer tensor of a length known at import (fix the dims in shape_dict)"
            )
        dims = []
        for i in range(length):
            if expect is not None and expect[i] is not None:
                dims.append(expect[i])
                continue
            dims.append(TirVar(f"rt{self.runtime_dims}", "int64"))
            self.runtime_dims += 1
        shape = self.emit(R.tensor_to_shape(t))
        return self.bb.match_cast(shape, ShapeStructInfo(dims))

    def sym_var(self, name: str) -> TirVar:
        """One int64 var per dim name, shared by every input using it."""
        if name not in self.sym_vars:
            self.sym_vars[name] = TirVar(name, "int64")
        return self.sym_vars[name]

    def initializer(self, name: str, array: np.ndarray) -> Any:
        """A float initializer becomes a parameter when kept as input; anything else a constant."""
        if not (self.keep_params and array.dtype.kind == "f"):
            return array
        var = Var(_sanitize(name), TensorStructInfo(array.shape, str(array.dtype)))
        self.param_values[var] = array
        return var

    def where(self) -> str:
        node = self.node
        if node is None:
            return "from_onnx"
        return f"from_onnx: {node_label(node)}"


def node_label(node: Any, index: int | None = None) -> str:
    """ "node 'conv1' (Conv)"; a node without a name by its position, else its first output."""
    if node.name:
        return f"node {node.name!r} ({node.op_type})"
    if index is not None:
        return f"node #{index} ({node.op_type})"
    first = next((o for o in node.output if o), "")
    return f"node ({node.op_type}) writing {first!r}" if first else f"a {node.op_type} node"


# ------------------------------------------------------------------ entry point


def from_onnx(
    model: Any,
    shape_dict: Mapping[str, Any] | None = None,
    dtype_dict: str | Mapping[str, str] | None = "float32",
    opset: int | None = None,
    keep_params_in_input: bool = False,
    sanitize_input_names: bool = True,
) -> Any:
    """Import an onnx.ModelProto as an IRModule whose "main" takes the graph inputs.

    shape_dict fixes input shapes (a str dim stays symbolic); dtype_dict overrides input dtypes
    (one dtype for all, or per name); with keep_params_in_input float initializers are
    parameters after the inputs, their values in the function attr "params". The model is
    untrusted data: anything wrong with it is a FrontendError naming the node, initializer or
    input; external data is never read here (load the file with `load_model`).
    >>> mod = from_onnx(load_model("model.onnx"), {"x": (1, 3, 224, 224)})
    """
    onnx = _require_onnx()
    if not isinstance(model, onnx.ModelProto):
        raise FrontendError(
            f"from_onnx: expected an onnx.ModelProto, got {type(model).__name__}; "
            "load a file with minitvm.relax.frontend.onnx.load_model(path)"
        )
    where = ["from_onnx"]  # the part being imported, for an error nothing else explains
    try:
        return _import(
            onnx,
            model,
            shape_dict,
            dtype_dict,
            opset,
            keep_params_in_input,
            sanitize_input_names,
            where,
        )
    except MiniTVMError as err:
        if str(err).startswith("from_onnx"):
            raise
        raise type(err)(f"{where[0]}: {err}") from err
    except RecursionError as err:
        raise FrontendError(f"{where[0]}: the model is nested too deeply to import") from err
    except Exception as err:  # a malformed model reaches code that assumed a valid one
        raise FrontendError(
            f"{where[0]}: the model is malformed here ({type(err).__name__}: {err}); check it "
            "with onnx.checker.check_model in a separate process, or re-export it"
        ) from err


def _import(onnx, model, shape_dict, dtype_dict, opset, keep_params, sanitize, where) -> Any:
    """The import into one dataflow block; a model with an If that runs at run time is
    imported again without dataflow blocks, which are then regrouped around its Ifs."""
    args = (onnx, model, shape_dict, dtype_dict, opset, keep_params, sanitize, where)
    try:
        return _import_as(*args, dataflow=True)
    except _control.ControlFlowFound:
        mod = _import_as(*args, dataflow=False)
        mod["main"] = _dataflow.with_dataflow_blocks(mod["main"])
        return mod


def _import_as(onnx, model, shape_dict, dtype_dict, opset, keep_params, sanitize, where, dataflow):
    graph = model.graph
    if opset is None and not any(o.domain in _DEFAULT_DOMAINS for o in model.opset_import):
        _check_ops(graph, onnx, _MAX_OPSET)  # only other domains: their ops are named first
    ctx = Context(_model_opset(model, opset), keep_params, dataflow)
    _check_ops(graph, onnx, ctx.opset)
    _checks.check_ssa(graph)
    init_names = {t.name for t in graph.initializer}
    graph_inputs = [i for i in graph.input if i.name not in init_names]
    _check_names(shape_dict, dtype_dict, graph_inputs)
    shapes = _checks.checked_shape_dict(shape_dict, graph_inputs)
    ctx.plain_dims = {
        d.dim_param
        for i in graph_inputs
        for d in i.type.tensor_type.shape.dim
        if d.dim_param.isidentifier()
    }
    names = _unique_names([i.name for i in graph_inputs], sanitize)
    inputs = []
    for info, name in zip(graph_inputs, names):
        where[0] = f"from_onnx: input {info.name!r}"
        inputs.append(_input_var(ctx, info, name, shapes, dtype_dict))
    for tensor in graph.initializer:
        where[0] = f"from_onnx: initializer {tensor.name!r}"
        ctx.values[tensor.name] = ctx.initializer(tensor.name, _checks.tensor_array(onnx, tensor))
    with ctx.bb.function("main", params=inputs):
        if dataflow:
            with ctx.bb.dataflow():
                out = ctx.bb.emit_output(_graph_body(ctx, graph, graph_inputs, inputs, where))
        else:
            out = _graph_body(ctx, graph, graph_inputs, inputs, where)
        ctx.bb.emit_func_output(out)
    mod = ctx.bb.get()
    if keep_params:
        found = used_vars(mod["main"].body)
        used = [v for v in ctx.param_values if v in found]
        func = mod["main"].replace(params=tuple(inputs) + tuple(used))
        func = func.with_attr("num_input", len(inputs))
        if used:
            func = func.with_attr("params", [nd.array(ctx.param_values[v]) for v in used])
        mod["main"] = func
    return mod


def _graph_body(ctx: Context, graph: Any, graph_inputs: list, inputs: list, where: list) -> Expr:
    """Convert the graph's nodes; its output (a tuple of several)."""
    for info, var in zip(graph_inputs, inputs):
        ctx.values[info.name] = _sequence.graph_input_value(ctx, var)
    for node in graph.node:
        where[0] = f"from_onnx: {node_label(node)}"
        _convert_node(ctx, node)
    where[0] = "from_onnx: the graph outputs"
    outs = [_output(ctx, o.name) for o in graph.output]
    if not outs:
        raise FrontendError("from_onnx: the graph has no outputs")
    return outs[0] if len(outs) == 1 else Tuple(tuple(outs))


def _model_opset(model: Any, opset: int | None) -> int:
    found = [o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS]
    version = opset if opset is not None else (found[0] if found else None)
    if version is None and not any(n.domain in _DEFAULT_DOMAINS for n in model.graph.node):
        version = _MAX_OPSET  # only other domains' ops (ai.onnx.ml, ...): none reads the opset
    if version is None:
        raise FrontendError(
            "from_onnx: the model declares no default-domain opset; pass opset=... (13 to 21)"
        )
    if isinstance(version, bool) or not isinstance(version, int | np.integer):
        raise FrontendError(
            f"from_onnx: opset={version!r} must be an int ({_MIN_OPSET} to {_MAX_OPSET})"
        )
    if int(version) < _MIN_OPSET:
        raise FrontendError(
            f"from_onnx: opset {version} is older than {_MIN_OPSET}; upgrade the model with "
            "onnx.version_converter.convert_version(model, 17)"
        )
    if int(version) > _MAX_OPSET:
        raise FrontendError(
            f"from_onnx: opset {version} is newer than any minitvm knows (supported: "
            f"{_CONVERTED_FROM_OPSET} to {_MAX_OPSET}, and older models whose ops kept their "
            f"opset-{_CONVERTED_FROM_OPSET} versions); convert the model to opset {_MAX_OPSET} or older "
            "with onnx.version_converter.convert_version"
        )
    return int(version)


def _check_ops(graph: Any, onnx: Any, opset: int) -> None:
    """Report every node (subgraphs' included) whose op has no converter, all in one
    OpNotImplemented."""
    nodes = list(_control.walk_nodes(graph))
    missing = [
        (f"{n.domain or 'ai.onnx'}::{n.op_type}", f"node {n.name!r} (op_type {n.op_type!r}){w}")
        for n, w in nodes
        if not _has_converter(n) and not _function.has_body(onnx, n, opset)
    ]
    if opset < _CONVERTED_FROM_OPSET:
        missing += [
            (_old_version(onnx, n, opset), f"node {n.name!r} (op_type {n.op_type!r}){w}")
            for n, w in nodes
            if _old_version(onnx, n, opset)
        ]
    raise_unsupported("from_onnx", missing)


def _old_version(onnx: Any, node: Any, opset: int) -> str:
    """'ai.onnx::Clip-6 (opset 7)' when the node's op version predates what converters know."""
    if node.domain not in _DEFAULT_DOMAINS:
        return ""
    try:
        then = onnx.defs.get_schema(node.op_type, opset, node.domain).since_version
    except onnx.defs.SchemaError:
        return f"ai.onnx::{node.op_type} (not defined at opset {opset})"
    try:
        known = onnx.defs.get_schema(node.op_type, _CONVERTED_FROM_OPSET, node.domain)
    except onnx.defs.SchemaError:
        return ""
    if then == known.since_version or then >= _OLDER_VERSIONS_CONVERTED.get(node.op_type, then + 1):
        return ""
    return (
        f"ai.onnx::{node.op_type}-{then} (opset {opset}, older than the versions minitvm "
        f"converts: {known.since_version} and later; upgrade the model with "
        "onnx.version_converter.convert_version(model, 17))"
    )


def _converter(node: Any) -> Any:
    """The node's converter (by domain and op_type), or None."""
    table = _ops.CONVERTERS if node.domain in _DEFAULT_DOMAINS else _OTHER_DOMAINS.get(node.domain)
    return None if table is None else table.get(node.op_type)


def _has_converter(node: Any) -> bool:
    return _converter(node) is not None


def _check_names(shape_dict: Any, dtype_dict: Any, graph_inputs: list) -> None:
    names = [i.name for i in graph_inputs]
    for arg, table in (("shape_dict", shape_dict), ("dtype_dict", dtype_dict)):
        if not isinstance(table, Mapping):
            continue
        unknown = sorted(set(table) - set(names))
        if unknown:
            raise FrontendError(
                f"from_onnx: {arg} names {unknown}, which are not inputs of the graph; "
                f"its inputs are {names}"
            )


def _input_var(ctx: Context, info: Any, name: str, shape_dict, dtype_dict) -> Var:
    ttype = info.type.tensor_type
    if not info.type.HasField("tensor_type"):
        return _sequence.input_var(ctx, info, name, shape_dict, dtype_dict)
    if info.name in shape_dict:
        dims = [ctx.sym_var(d) if isinstance(d, str) else int(d) for d in shape_dict[info.name]]
    elif ttype.HasField("shape"):
        dims = [_model_dim(ctx, info.name, i, d) for i, d in enumerate(ttype.shape.dim)]
    else:
        raise FrontendError(
            f"from_onnx: input {info.name!r} has no shape in the model; give it in shape_dict"
        )
    if isinstance(dtype_dict, Mapping) and info.name in dtype_dict:
        dtype = str(dtype_dict[info.name])
    elif ttype.elem_type:
        dtype = onnx_dtype(ttype.elem_type)
    else:
        dtype = str(dtype_dict) if isinstance(dtype_dict, str) else "float32"
    return Var(name, TensorStructInfo(tuple(dims), dtype))


def _model_dim(ctx: Context, name: str, index: int, dim: Any) -> Any:
    if dim.HasField("dim_value"):
        return int(dim.dim_value)
    if dim.HasField("dim_param") and dim.dim_param.strip("?"):
        return _dim_expr(ctx, dim.dim_param)
    # no name (or "?"): a dim of its own, equal to no other
    return ctx.sym_var(f"{_sanitize(name)}_dim{index}")


_MAX_DIM_TEXT = 200
_DIM_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.floordiv,  # dims are integers: "A / B" means A // B
}


def _dim_expr(ctx: Context, text: str) -> Any:
    """A dim_param as a symbolic dim: a name, or arithmetic over names ("A + B", "2 * n").

    Arithmetic counts only over names some input dim has alone (so their values can be read
    from the arguments); "seq-len" with no dims "seq" and "len" stays one name.
    """
    if len(text) > _MAX_DIM_TEXT:  # parsed, never evaluated; long text is just a name
        return ctx.sym_var(_sanitize(text))
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ctx.sym_var(_sanitize(text))

    def build(node: ast.AST) -> Any:
        if isinstance(node, ast.Name) and node.id in ctx.plain_dims:
            return ctx.sym_var(node.id)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _DIM_OPS:
            return _DIM_OPS[type(node.op)](build(node.left), build(node.right))
        raise ValueError(text)

    try:
        return build(tree)
    except ValueError:  # anything else is one opaque name
        return ctx.sym_var(_sanitize(text))


def _sanitize(name: str) -> str:
    """A name usable as an identifier in the printed program ("0" -> "input_0", "a.b" -> "a_b")."""
    name = re.sub(r"\W", "_", name)
    return name if name and not name[0].isdigit() else f"input_{name}"


def _unique_names(names: list[str], sanitize: bool) -> list[str]:
    """Input var names: sanitized, and distinct (a repeat gets "_1", "_2", ...)."""
    if not sanitize:
        return names
    out: list[str] = []
    for name in map(_sanitize, names):
        candidate, k = name, 0
        while candidate in out:
            k += 1
            candidate = f"{name}_{k}"
        out.append(candidate)
    return out


def _check_arity(ctx: Context, node: Any) -> None:
    """The node's input and output counts are within its ONNX schema's (at the model's opset)."""
    onnx = _require_onnx()
    try:
        schema = onnx.defs.get_schema(node.op_type, ctx.opset, node.domain)
    except onnx.defs.SchemaError:
        return  # an op newer than the installed onnx: its converter checks what it reads
    n_in, n_out = len(node.input), len(node.output)
    if not schema.min_input <= n_in <= schema.max_input:
        raise FrontendError(
            f"{ctx.where()}: has {n_in} inputs; {node.op_type} at opset {ctx.opset} takes "
            f"{schema.min_input} to {schema.max_input}"
        )
    if not 1 <= n_out <= schema.max_output:
        raise FrontendError(
            f"{ctx.where()}: has {n_out} outputs; {node.op_type} at opset {ctx.opset} gives "
            f"1 to {schema.max_output}"
        )
    if node.domain in ("", "ai.onnx"):
        _checks.check_attributes(node, schema, ctx.where())


def _convert_node(ctx: Context, node: Any) -> None:
    ctx.node = node
    _check_arity(ctx, node)
    inputs: list = []
    try:
        inputs = [_lookup(ctx, name) for name in node.input]
        attrs = _attributes(node)
        ctx.fold_refused = None
        outputs = _fold(ctx, node, inputs, attrs)
        refused = ctx.fold_refused  # read now: converting a function body resets it
        if outputs is None:
            outputs = _convert_widened(ctx, node, inputs, attrs)
    except MiniTVMError as err:
        # a value needed at import that was too big to fold: say where it came from
        source = _unfolded_source(ctx, node, inputs, None)
        note = f" (an input comes from {source})" if source and "not folded" not in str(err) else ""
        if str(err).startswith(ctx.where()) and not note:
            raise
        cls = type(err) if isinstance(err, FrontendError) else FrontendError
        text = str(err) if str(err).startswith(ctx.where()) else f"{ctx.where()}: {err}"
        raise cls(f"{text}{note}") from err
    outputs = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
    names = [n for n in node.output]
    if len(outputs) < len([n for n in names if n]):
        extra = [n for n in names[len(outputs) :] if n]
        raise OpAttributeInvalid(
            f"{ctx.where()}: outputs {extra} are not supported (only the first {len(outputs)}); "
            "export the model without them"
        )
    for name, value in zip(names, outputs):
        if name:
            ctx.values[name] = value
        if isinstance(value, Var) and (why := _unfolded_source(ctx, node, inputs, refused)):
            ctx.left_to_run_time[value] = why
    ctx.node = None


def _unfolded_source(ctx: Context, node: Any, inputs: list, refused: str | None) -> str | None:
    """The node (this one or one it reads from) whose result was too big to fold, and why."""
    if refused:
        return f"{node_label(node)}, not folded: {refused}"
    found = (ctx.left_to_run_time.get(v) for v in inputs if isinstance(v, Var))
    return next((why for why in found if why), None)


def _convert_widened(ctx: Context, node: Any, inputs: list, attrs: dict) -> Any:
    """The node's converter; an accumulating op on float16 runs in float32 (`WIDEN_FLOAT16`)."""
    from ... import op as R

    if not _has_converter(node):
        return _function.expand(ctx, node, inputs, _convert_node, _has_converter)
    convert = _converter(node)
    if (
        node.domain not in _DEFAULT_DOMAINS
        or node.op_type not in _ops.WIDEN_FLOAT16
        or not any(_is_float16(v) for v in inputs if isinstance(v, Expr))
    ):
        return convert(ctx, inputs, attrs)
    wide = [
        ctx.emit(R.astype(v, "float32"))
        if isinstance(v, Expr) and _is_float16(v)
        else v.astype("float32")
        if isinstance(v, np.ndarray) and v.dtype == np.float16
        else v
        for v in inputs
    ]
    outputs = convert(ctx, wide, attrs)
    single = not isinstance(outputs, list | tuple)
    first, rest = (outputs, []) if single else (outputs[0], list(outputs[1:]))
    # only the main output is narrowed back; LayerNormalization's others are float32 by spec
    if isinstance(first, Expr) and str(getattr(first.struct_info, "dtype", "")) == "float32":
        first = ctx.emit(R.astype(first, "float16"))
    return first if single else [first, *rest]


def _is_float16(value: Expr) -> bool:
    return str(getattr(value.struct_info, "dtype", "")) == "float16"


def _lookup(ctx: Context, name: str) -> Any:
    if not name:
        return None  # an omitted optional input
    if name not in ctx.values:
        raise FrontendError(
            f"{ctx.where()}: input {name!r} is neither a graph input, an initializer nor the "
            "output of an earlier node; the model is malformed (check it with onnx.checker)"
        )
    return ctx.values[name]


def _attributes(node: Any) -> dict[str, Any]:
    onnx = _require_onnx()
    attrs = {}
    for a in node.attribute:
        if a.name in attrs:
            raise OpAttributeInvalid(f"attribute {a.name!r} is given twice")
        value = onnx.helper.get_attribute_value(a)
        try:
            if isinstance(value, bytes):
                value = value.decode()
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                value = [v.decode() for v in value]
        except UnicodeDecodeError as err:
            raise OpAttributeInvalid(f"attribute {a.name!r} is not UTF-8 text") from err
        if isinstance(value, onnx.TensorProto):
            value = _checks.tensor_array(onnx, value, f"attribute {a.name!r}")
        attrs[a.name] = value
    return attrs


def _fold(ctx: Context, node: Any, inputs: list, attrs: dict) -> list | None:
    """The node's outputs when all its inputs are known (and the result is small), else None."""
    if _fold_mod.never_folds(node):
        return None  # other domains' ops are converted (the evaluator here knows only ai.onnx)
    return _fold_mod.fold(ctx, node, inputs, attrs)


def _output(ctx: Context, name: str) -> Expr:
    if name not in ctx.values:
        raise FrontendError(f"from_onnx: graph output {name!r} is produced by no node")
    return ctx.expr(ctx.values[name])
