"""`tvm.ir.save_json` / `tvm.ir.load_json`: IR as JSON text that loads back structurally equal.

The text is a table of nodes, children before parents, each `{"type": key, "fields": {...}}`;
a field refers to an earlier node as `{"ref": k}`, so shared nodes (a variable used in many
places) stay one object. Loading builds only the node classes minitvm defines (looked up in a
table of the classes already loaded, never imported by name), through their constructors so
every field is validated; anything else is refused with a TVMError. No code is evaluated.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..error import TVMError
from .dtype import DataType
from .module import IRModule
from .node import FrozenDict, Node, field_names
from .op import Op

_FORMAT = "minitvm.json"
_VERSION = 1
_PREFIX = "minitvm."


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _type_key(cls: type) -> str:
    """'tir.expr.Var' for minitvm.tir.expr.Var: unique, and says where the class lives."""
    return f"{cls.__module__.removeprefix(_PREFIX)}.{cls.__qualname__}"


def _node_classes() -> dict[str, type]:
    """The whitelist: minitvm's node dataclasses (those loaded so far), by type key."""
    return {
        _type_key(c): c
        for c in _subclasses(Node)
        if c.__module__.startswith(_PREFIX) and dataclasses.is_dataclass(c)
    }


def _enum_classes() -> dict[str, type]:
    return {_type_key(c): c for c in _subclasses(enum.Enum) if c.__module__.startswith(_PREFIX)}


_PLAIN_DTYPES = frozenset("?bhilqBHILQefdFD")  # numpy kinds an ndarray may hold (no objects)


# --- saving ------------------------------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self.nodes: list[dict] = []
        self.index: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps encoded objects alive so their ids stay unique

    def ref(self, obj: Any, build: Any) -> dict:
        """The reference to `obj`, encoding it (with `build`) the first time it is seen."""
        k = self.index.get(id(obj))
        if k is None:
            entry = build()
            k = self.index[id(obj)] = len(self.nodes)
            self.nodes.append(entry)
            self.keep.append(obj)
        return {"ref": k}

    def value(self, v: Any, where: str) -> Any:
        if v is None or isinstance(v, bool | str):
            return v
        if isinstance(v, int | float) and not isinstance(v, enum.Enum):
            return v if isinstance(v, int) else {"float": repr(float(v))}
        if isinstance(v, np.generic):
            return self.value(v.item(), where)
        if isinstance(v, tuple):
            return [self.value(x, where) for x in v]
        if isinstance(v, list):
            return {"list": [self.value(x, where) for x in v]}
        if isinstance(v, FrozenDict | dict):
            tag = "frozendict" if isinstance(v, FrozenDict) else "dict"
            return {tag: [[self.value(a, where), self.value(b, where)] for a, b in v.items()]}
        if isinstance(v, DataType):
            return {"dtype": str(v)}
        if isinstance(v, enum.Enum) and type(v).__module__.startswith(_PREFIX):
            return {"enum": _type_key(type(v)), "name": v.name}
        if isinstance(v, Op):
            return {"op": v.name}
        if isinstance(v, np.ndarray):
            return self.ndarray(v, where)
        if isinstance(v, Node):
            return self.ref(v, lambda: self.node(v))
        if isinstance(v, IRModule):
            return self.ref(v, lambda: self.module(v))
        if _is_te_tensor(v):  # te.Tensor is output k of an operation node
            return {"tensor": self.value(v.op, where), "index": v.value_index}
        raise TVMError(
            f"save_json: {where} is a {type(v).__name__}, which has no JSON form; save_json "
            "takes IR (expressions, statements, PrimFuncs, IRModules, te tensors and operations)"
        )

    def node(self, n: Node) -> dict:
        cls = type(n)
        if not dataclasses.is_dataclass(cls) or not cls.__module__.startswith(_PREFIX):
            raise TVMError(f"save_json: {cls.__name__} is not a minitvm IR node")
        fields = {
            name: self.value(getattr(n, name), f"field '{name}' of {cls.__name__}")
            for name in field_names(cls)
        }
        return {"type": _type_key(cls), "fields": fields}

    def module(self, mod: IRModule) -> dict:
        funcs = [
            [gv.name_hint, self.value(f, f"function '{gv.name_hint}'")]
            for gv, f in mod.functions_items()
        ]
        out = {"type": "IRModule", "functions": funcs, "attrs": self.value(mod.attrs, "attrs")}
        if mod.global_infos:
            out["global_infos"] = self.value(mod.global_infos, "global_infos")
        return out

    def ndarray(self, a: np.ndarray, where: str) -> dict:
        if a.dtype.char not in _PLAIN_DTYPES:
            raise TVMError(f"save_json: {where} is an array of {a.dtype}; only numeric arrays")
        data = base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()
        return {"ndarray": {"dtype": a.dtype.str, "shape": list(a.shape), "data": data}}


def _is_te_tensor(v: Any) -> bool:
    return isinstance(getattr(v, "op", None), Node) and isinstance(
        getattr(v, "value_index", None), int
    )


def save_json(node: Any) -> str:
    """IR (an expression, statement, PrimFunc, IRModule, te tensor or operation) as JSON text.

    >>> text = tvm.ir.save_json(func); tvm.ir.assert_structural_equal(tvm.ir.load_json(text), func)
    """
    writer = _Writer()
    root = writer.value(node, "the argument")
    doc = {"format": _FORMAT, "version": _VERSION, "root": root, "nodes": writer.nodes}
    return json.dumps(doc, separators=(",", ":"))


# --- loading -----------------------------------------------------------------------------------


class _Reader:
    def __init__(self, entries: list) -> None:
        self.entries = entries
        self.done: list[Any] = []
        self.classes = _node_classes()
        self.enums = _enum_classes()

    def build_all(self) -> None:
        """Build entries in order; an entry may refer only to entries before it (no cycles)."""
        for k, entry in enumerate(self.entries):
            self.done.append(self.entry(entry, k))

    def entry(self, e: Any, k: int) -> Any:
        where = f"node {k}"
        if not isinstance(e, dict) or not isinstance(e.get("type"), str):
            raise TVMError(f"load_json: {where} is not a {{'type': ..., ...}} object")
        if e["type"] == "IRModule":
            funcs = self.value(e.get("functions"), where)
            attrs = self.value(e.get("attrs"), where)
            if not isinstance(funcs, tuple) or not all(
                isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in funcs
            ):
                raise TVMError(
                    f"load_json: {where}: an IRModule's functions must be [name, node] pairs"
                )
            infos = self.value(e["global_infos"], where) if "global_infos" in e else None
            return IRModule(dict(funcs), attrs=attrs, global_infos=infos)
        cls = self.classes.get(e["type"])
        if cls is None:
            raise TVMError(
                f"load_json: {where} has type {e['type']!r}, which is not a minitvm IR node; "
                "only minitvm's own node types are loaded"
            )
        raw = e.get("fields")
        if not isinstance(raw, dict) or set(raw) != set(field_names(cls)):
            raise TVMError(
                f"load_json: {where} ({e['type']}) must give exactly the fields "
                f"{list(field_names(cls))}"
            )
        fields = {name: self.value(v, f"{where}.{name}") for name, v in raw.items()}
        try:
            return cls(**fields)
        except (TVMError, ValueError, TypeError, AttributeError, KeyError) as err:
            raise TVMError(f"load_json: {where} ({e['type']}) is invalid: {err}") from err

    def value(self, v: Any, where: str) -> Any:
        if v is None or isinstance(v, bool | int | str):
            return v
        if isinstance(v, list):
            return tuple(self.value(x, where) for x in v)
        if not isinstance(v, dict) or len(v) not in (1, 2):
            raise TVMError(f"load_json: {where}: unexpected value {str(v)[:80]}")
        tag = next(iter(v))
        decode = _TAGS.get(tag)
        if decode is None:
            raise TVMError(f"load_json: {where}: unknown tag {tag!r}")
        return decode(self, v, where)

    def ref(self, v: dict, where: str) -> Any:
        k = v["ref"]
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(self.done):
            raise TVMError(f"load_json: {where}: reference {k!r} is not to an earlier node")
        return self.done[k]

    def pairs(self, v: Any, where: str) -> list[tuple]:
        if not isinstance(v, list) or not all(isinstance(p, list) and len(p) == 2 for p in v):
            raise TVMError(f"load_json: {where}: a mapping must be a list of [key, value] pairs")
        return [(self.value(a, where), self.value(b, where)) for a, b in v]

    def enum(self, v: dict, where: str) -> Any:
        cls = self.enums.get(v["enum"])
        if cls is None or v.get("name") not in cls.__members__:
            raise TVMError(f"load_json: {where}: unknown enum value {v!r}")
        return cls[v["name"]]

    def dtype(self, v: dict, where: str) -> DataType:
        try:
            return DataType(str(v["dtype"]))
        except Exception as err:  # DataType's parser raises several kinds for bad text
            raise TVMError(f"load_json: {where}: bad dtype {v['dtype']!r}") from err

    def tensor(self, v: dict, where: str) -> Any:
        op, index = self.value(v["tensor"], where), v.get("index")
        if not hasattr(op, "output") or not isinstance(index, int):
            raise TVMError(f"load_json: {where}: a tensor must refer to an operation node")
        return op.output(index)

    def ndarray(self, v: dict, where: str) -> np.ndarray:
        spec = v["ndarray"]
        try:
            dtype = np.dtype(spec["dtype"])
            shape = tuple(int(d) for d in spec["shape"])
            if dtype.char not in _PLAIN_DTYPES or any(d < 0 for d in shape):
                raise ValueError(f"dtype {dtype} / shape {shape} not allowed")
            data = base64.b64decode(spec["data"], validate=True)
            return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
        except (KeyError, TypeError, ValueError) as err:
            raise TVMError(f"load_json: {where}: bad array ({err})") from err

    def list_(self, v: dict, where: str) -> list:
        if not isinstance(v["list"], list):
            raise TVMError(f"load_json: {where}: a list must hold a JSON array")
        return [self.value(x, where) for x in v["list"]]

    def float_(self, v: dict, where: str) -> float:
        try:
            return float(v["float"])
        except (TypeError, ValueError) as err:
            raise TVMError(f"load_json: {where}: bad float {v['float']!r}") from err

    def op(self, v: dict, where: str) -> Op:
        try:
            return Op.get(str(v["op"]))
        except Exception as err:  # MiniTVMError for an unknown op name
            raise TVMError(f"load_json: {where}: {err}") from err


_TAGS = {
    "ref": _Reader.ref,
    "float": _Reader.float_,
    "list": _Reader.list_,
    "dict": lambda r, v, w: dict(r.pairs(v["dict"], w)),
    "frozendict": lambda r, v, w: FrozenDict(r.pairs(v["frozendict"], w)),
    "dtype": _Reader.dtype,
    "enum": _Reader.enum,
    "op": _Reader.op,
    "ndarray": _Reader.ndarray,
    "tensor": _Reader.tensor,
}


def load_json(json_str: str) -> Any:
    """The IR saved by `save_json`. Refuses (TVMError) anything but minitvm's own node types."""
    try:
        doc = json.loads(json_str)
    except (ValueError, TypeError, RecursionError) as err:
        raise TVMError(f"load_json: the text is not valid JSON ({err})") from err
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise TVMError(f'load_json: not a minitvm IR document (no "format": {_FORMAT!r})')
    if doc.get("version") != _VERSION or not isinstance(doc.get("nodes"), list):
        raise TVMError(f"load_json: unsupported version {doc.get('version')!r} or no node list")
    reader = _Reader(doc["nodes"])
    try:
        reader.build_all()
        return reader.value(doc.get("root"), "root")
    except RecursionError as err:
        raise TVMError("load_json: the document nests values too deeply") from err


__all__ = ["load_json", "save_json"]
