"""Arm dot products (NEON, sdot/udot/hdot shapes: 4 lanes of 4 products) and the dp4a names."""

from ..tensor_intrin_base import TensorIntrin
from ._dot import dot_desc_impl
from .dot_product_common import (  # noqa: F401  (TVM re-exports them from here)
    DP4A_S8S8S32_INTRIN,
    DP4A_S8U8S32_INTRIN,
    DP4A_U8S8S32_INTRIN,
    DP4A_U8U8U32_INTRIN,
)

ARM_DOT_4x4_i8_NEON_INTRIN = "dot_4x4_i8i8s32_neon"
ARM_DOT_4x4_i8_SDOT_INTRIN = "dot_4x4_i8i8s32_sdot"
ARM_DOT_4x4_u8_UDOT_INTRIN = "dot_4x4_u8u8u32_udot"
ARM_DOT_4x4_u8_HDOT_INTRIN = "dot_4x4_u8u8i32_hdot"

neon_4x4_i8i8i32_desc, neon_4x4_i8i8i32_impl = dot_desc_impl(4, 4, "int8", "int8", "int32")

_TABLE = (
    (ARM_DOT_4x4_i8_NEON_INTRIN, ("int8", "int8", "int32")),
    (ARM_DOT_4x4_i8_SDOT_INTRIN, ("int8", "int8", "int32")),
    (ARM_DOT_4x4_u8_UDOT_INTRIN, ("uint8", "uint8", "uint32")),
    (ARM_DOT_4x4_u8_HDOT_INTRIN, ("uint8", "uint8", "int32")),
)

for _name, _dtypes in _TABLE:
    TensorIntrin.register(_name, *dot_desc_impl(4, 4, *_dtypes), override=True)
