"""ObjectPath: where a value sits inside an IR object (`root.body.seq[1]`), as TVM's
`tvm.runtime.ObjectPath`; structural equality reports its first mismatch as a pair of these."""

from __future__ import annotations

from typing import Any

from ..error import TVMError


class ObjectPath:
    """An immutable path from a root object: each step is an attribute, an array index or a map
    key. Build with `ObjectPath.root().attr("body").array_index(0)`; paths compare by steps."""

    __slots__ = ("_parent", "_key", "_len")

    def __init__(self, parent: ObjectPath | None, key: Any) -> None:
        if type(self) is ObjectPath:
            raise TVMError("ObjectPath can't be made directly; start from ObjectPath.root()")
        self._parent = parent
        self._key = key
        self._len = 1 if parent is None else len(parent) + 1

    @staticmethod
    def root(root_name: str | None = None) -> RootPath:
        """The path of the root object, optionally named (a name prints instead of `<root>`)."""
        return RootPath(None, root_name)

    @property
    def parent(self) -> ObjectPath | None:
        return self._parent

    def __len__(self) -> int:
        return self._len

    def _steps(self) -> list[ObjectPath]:
        steps, node = [], self
        while node is not None:
            steps.append(node)
            node = node._parent
        return steps[::-1]

    def _same_step(self, other: ObjectPath) -> bool:
        return type(self) is type(other) and self._key == other._key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectPath):
            return NotImplemented
        if len(self) != len(other):
            return False
        return all(a._same_step(b) for a, b in zip(self._steps(), other._steps()))

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(tuple((type(s).__name__, repr(s._key)) for s in self._steps()))

    def get_prefix(self, length: int) -> ObjectPath:
        """The first `length` steps of this path (length 1 is the root)."""
        if length < 1:
            raise IndexError("Prefix length must be at least 1")
        if length > len(self):
            raise IndexError("Attempted to get a prefix longer than the path itself")
        node = self
        while len(node) > length:
            node = node._parent
        return node

    def is_prefix_of(self, other: ObjectPath) -> bool:
        """True when `other` starts with every step of this path (a path is its own prefix)."""
        return len(self) <= len(other) and other.get_prefix(len(self)) == self

    def attr(self, attr_key: str | None) -> ObjectPath:
        """This path followed by attribute `attr_key` (None: an attribute of unknown name)."""
        if attr_key is None:
            return UnknownAttributeAccessPath(self, None)
        return AttributeAccessPath(self, str(attr_key))

    def array_index(self, index: int) -> ArrayIndexPath:
        return ArrayIndexPath(self, int(index))

    def missing_array_element(self, index: int) -> MissingArrayElementPath:
        """Element `index` of an array that has no such element (the shorter side of a pair)."""
        return MissingArrayElementPath(self, int(index))

    def map_value(self, key: Any) -> MapValuePath:
        return MapValuePath(self, key)

    def missing_map_entry(self) -> MissingMapEntryPath:
        """A map entry that the other side of a pair has and this map lacks."""
        return MissingMapEntryPath(self, None)

    def _step_text(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return "".join(step._step_text() for step in self._steps())

    def __repr__(self) -> str:
        return f"ObjectPath({self})"


class RootPath(ObjectPath):
    __slots__ = ()

    @property
    def name(self) -> str | None:
        return self._key

    def _step_text(self) -> str:
        return "<root>" if self._key is None else self._key


class AttributeAccessPath(ObjectPath):
    __slots__ = ()

    @property
    def attr_key(self) -> str:
        return self._key

    def _step_text(self) -> str:
        return f".{self._key}"


class UnknownAttributeAccessPath(ObjectPath):
    __slots__ = ()

    def _step_text(self) -> str:
        return ".<unknown attribute>"


class ArrayIndexPath(ObjectPath):
    __slots__ = ()

    @property
    def index(self) -> int:
        return self._key

    def _step_text(self) -> str:
        return f"[{self._key}]"


class MissingArrayElementPath(ObjectPath):
    __slots__ = ()

    @property
    def index(self) -> int:
        return self._key

    def _step_text(self) -> str:
        return f"[<missing element #{self._key}>]"


class MapValuePath(ObjectPath):
    __slots__ = ()

    @property
    def key(self) -> Any:
        return self._key

    def _step_text(self) -> str:
        key = self._key
        text = (
            '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
            if isinstance(key, str)
            else str(key)
        )
        return f"[{text}]"


class MissingMapEntryPath(ObjectPath):
    __slots__ = ()

    def _step_text(self) -> str:
        return "[<missing entry>]"


class ObjectPathPair(tuple):
    """The two paths, one into each side, where a structural comparison first differs; unpacks
    as `(lhs_path, rhs_path)`."""

    __slots__ = ()

    def __new__(cls, lhs_path: ObjectPath, rhs_path: ObjectPath) -> ObjectPathPair:
        return super().__new__(cls, (lhs_path, rhs_path))

    @property
    def lhs_path(self) -> ObjectPath:
        return self[0]

    @property
    def rhs_path(self) -> ObjectPath:
        return self[1]

    def __repr__(self) -> str:
        return f"ObjectPathPair(lhs={self[0]}, rhs={self[1]})"
