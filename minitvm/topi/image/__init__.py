"""Image operators: resize."""

from .resize import resize2d, resize3d

__all__ = ["resize2d", "resize3d"]
