"""Hexagon HVX dot products (vrmpy: 32 lanes of 4 bytes, vdmpy: 32 lanes of 2 int16)."""

from ..tensor_intrin_base import TensorIntrin
from ._dot import dot_desc_impl

VRMPY_u8u8i32_INTRIN = "dot_32x4_u8u8i32_vrmpy"
VRMPY_u8i8i32_INTRIN = "dot_32x4_u8i8i32_vrmpy"
VDMPY_i16i16i32_INTRIN = "dot_product_32x2_i16i16i32_vdmpy"
VRMPY_u8u8i32_VTCM_INTRIN = "dot_32x4_u8u8i32_vtcm_vrmpy"
VRMPY_u8i8i32_VTCM_INTRIN = "dot_32x4_u8i8i32_vtcm_vrmpy"

for _name, _args in (
    (VRMPY_u8u8i32_INTRIN, (32, 4, "uint8", "uint8", "int32")),
    (VRMPY_u8i8i32_INTRIN, (32, 4, "uint8", "int8", "int32")),
    (VDMPY_i16i16i32_INTRIN, (32, 2, "int16", "int16", "int32")),
    (VRMPY_u8u8i32_VTCM_INTRIN, (32, 4, "uint8", "uint8", "int32", "global.vtcm")),
    (VRMPY_u8i8i32_VTCM_INTRIN, (32, 4, "uint8", "int8", "int32", "global.vtcm")),
):
    TensorIntrin.register(_name, *dot_desc_impl(*_args), override=True)
