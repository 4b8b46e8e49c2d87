"""Image operators: resize, crop_and_resize, dilation2d, affine_grid."""

from .affine_grid import affine_grid
from .crop_and_resize import crop_and_resize
from .dilation2d import dilation2d_nchw, dilation2d_nhwc
from .resize import resize2d, resize3d

__all__ = [
    "affine_grid",
    "crop_and_resize",
    "dilation2d_nchw",
    "dilation2d_nhwc",
    "resize2d",
    "resize3d",
]
