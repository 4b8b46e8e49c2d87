"""`relax.op.vision`: detection ops (TVM's namespace)."""

from ..data_dependent import all_class_non_max_suppression

__all__ = ["all_class_non_max_suppression"]
