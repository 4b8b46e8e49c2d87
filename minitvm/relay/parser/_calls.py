"""Op calls from text: `nn.conv2d(%x, %w, padding=[1, 1])` goes through relay.nn.conv2d.

The text leaves out attributes at their defaults, so a call is rebuilt by the op's Python
constructor (found by the op's registered name: `nn.conv2d` -> `relay.op.nn.conv2d`), which
fills in the defaults and normalises values exactly as a program built in Python has them.
Names come only from the op registry and the constructor table below, never from the text.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ...error import MiniTVMError
from .. import op as _op
from ..expr import Call, Op, TupleGetItem, TupleWrapper

_TABLE: dict[tuple, dict[str, Callable]] = {}


def _op_modules() -> list[ModuleType]:
    """The loaded modules that define op constructors: relay.op.* and <pkg>.op.* under relay
    (relay.qnn.op); private modules (`_lower`) excluded."""
    root = _op.__name__.rsplit(".", 1)[0]  # minitvm.relay
    out = []
    for name, module in list(sys.modules.items()):
        parts = name.split(".")
        if (
            isinstance(module, ModuleType)
            and name.startswith(root + ".")
            and "op" in parts
            and not any(p.startswith("_") for p in parts)
        ):
            out.append(module)
    return sorted(out, key=lambda m: m.__name__)


def _constructors() -> dict[str, Callable]:
    """Registered op name -> its Python constructor.

    A public function `f` of (defined in or re-exported by) op module `a.b.op.c` makes the op named `c.f`, `b.f` or
    `f` (the first that is registered): `relay.op.nn.relu` -> `nn.relu`, `relay.qnn.op.qnn.
    quantize` -> `qnn.quantize`, `relay.op.tensor.add` -> `add`. Rebuilt when ops or op
    modules are added.
    """
    registered = set(Op.list_op_names())
    modules = _op_modules()
    key = (len(registered), len(modules))
    if key not in _TABLE:
        table: dict[str, Callable] = {}
        for module in modules:
            parts = module.__name__.split(".")
            for name, fn in vars(module).items():
                if name.startswith("_") or not inspect.isfunction(fn):
                    continue
                home = fn.__module__.split(".")
                if home[:2] != parts[:2] or any(p.startswith("_") for p in home):
                    continue  # not relay's, or a private helper (qnn.op._lower.quantize)
                candidates = [f"{p}.{name}" for p in reversed(parts)] + [name]
                found = next((c for c in candidates if c in registered), None)
                if found is not None:
                    table.setdefault(found, fn)
        _TABLE.clear()
        _TABLE[key] = table
    return _TABLE[key]


def _keyword_args(ctor: Callable, op_name: str, args: list, attrs: dict) -> dict | None:
    """The constructor's keyword arguments: the positional args fill, in order, the parameters
    the attributes leave free (`nn.pad(%x, 0f, pad_width=...)` -> data=%x, pad_value=0f); a
    required parameter still missing is an attribute at its default, which the text omits."""
    from ..printer import _ATTR_DEFAULTS, _GENERIC_DEFAULTS

    params = inspect.signature(ctor).parameters
    if any(p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY) for p in params.values()):
        return None
    free = [
        name
        for name in params
        if name not in attrs and params[name].kind != params[name].VAR_KEYWORD
    ]
    if len(args) > len(free):
        return None
    kwargs = dict(zip(free, args)) | attrs
    defaults = {**_GENERIC_DEFAULTS, **_ATTR_DEFAULTS.get(op_name, {})}
    for name in free[len(args) :]:
        if params[name].default is inspect.Parameter.empty and name in defaults:
            kwargs[name] = defaults[name]
    return kwargs


def build_op_call(op: Op, args: list, attrs: dict[str, Any]) -> Call:
    """The call `op(*args, **attrs)` as the op's Python constructor makes it.

    Raises MiniTVMError (the caller adds the position) when the constructor rejects the
    arguments. An op without a constructor (or whose constructor makes another op) keeps the
    attributes exactly as written.
    """
    ctor = _constructors().get(op.name)
    if ctor is None:
        return Call(op, tuple(args), attrs or None)
    kwargs = _keyword_args(ctor, op.name, args, attrs)
    try:
        built = ctor(*args, **attrs) if kwargs is None else ctor(**kwargs)
    except (TypeError, ValueError, MiniTVMError) as err:
        raise MiniTVMError(
            f"cannot build a call of `{op.name}` from {len(args)} argument(s) and attributes "
            f"{sorted(attrs)}: {err}"
        ) from err
    if isinstance(built, TupleWrapper):
        built = built.tuple_value
    if isinstance(built, TupleGetItem):  # `nn.dropout` gives output 0 of the op's tuple
        built = built.tuple_value
    if not isinstance(built, Call) or built.op is not op:
        return Call(op, tuple(args), attrs or None)
    if len(built.args) == len(args) and all(a is b for a, b in zip(built.args, args)):
        return built
    return Call(op, tuple(args), built.attrs, built.type_args)
