"""`relax.op.image`: image ops."""

from .image import resize2d

__all__ = ["resize2d"]
