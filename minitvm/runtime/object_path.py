"""`tvm.runtime.object_path`: TVM's module name for ObjectPath (the classes live in ir/)."""

from ..ir.object_path import (
    ArrayIndexPath,
    AttributeAccessPath,
    MapValuePath,
    MissingArrayElementPath,
    MissingMapEntryPath,
    ObjectPath,
    ObjectPathPair,
    RootPath,
    UnknownAttributeAccessPath,
)

__all__ = [
    "ArrayIndexPath",
    "AttributeAccessPath",
    "MapValuePath",
    "MissingArrayElementPath",
    "MissingMapEntryPath",
    "ObjectPath",
    "ObjectPathPair",
    "RootPath",
    "UnknownAttributeAccessPath",
]
