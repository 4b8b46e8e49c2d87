"""TVM's container types as Python ones: `Map` (a dict) and `Array` (a tuple).

IR fields already hold tuples and FrozenDicts; these names exist so that code testing
`isinstance(x, tvm.container.Map)` (TVM's InferBound results) or building `tvm.runtime.convert([...])`
gets the same answers as in TVM.
"""

from __future__ import annotations


class Map(dict):
    """A mapping returned by analyses such as `te.schedule.InferBound` (TVM's `Map`)."""


class Array(tuple):
    """An immutable sequence (TVM's `Array`) made by `tvm.runtime.convert` from a list."""


__all__ = ["Array", "Map"]
