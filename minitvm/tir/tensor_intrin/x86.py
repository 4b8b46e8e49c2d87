"""x86 dot products (VNNI vpdpbusd, AVX-512 pmaddubsw+pmaddwd shapes): 16 lanes of 4 u8*i8."""

from ..tensor_intrin_base import TensorIntrin
from ._dot import dot_desc_impl

dot_product_16x4_u8i8i32_desc, dot_product_16x4_u8i8i32_impl = dot_desc_impl(
    16, 4, "uint8", "int8", "int32"
)

VNNI_DOT_16x4_INTRIN = "dot_16x4_vnni"
AVX512_DOT_16x4_INTRIN = "dot_16x4_avx512"

for _name in (VNNI_DOT_16x4_INTRIN, AVX512_DOT_16x4_INTRIN):
    TensorIntrin.register(
        _name, dot_product_16x4_u8i8i32_desc, dot_product_16x4_u8i8i32_impl, override=True
    )
