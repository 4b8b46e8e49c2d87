"""Image operators: resize."""

from .resize import resize2d

__all__ = ["resize2d"]
