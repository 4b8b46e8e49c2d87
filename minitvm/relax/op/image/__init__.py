"""`relax.op.image`: image ops."""

from .image import resize2d, resize3d

__all__ = ["resize2d", "resize3d"]
