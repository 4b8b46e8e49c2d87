"""dp4a: a 4-element dot product into one accumulator (GPU instruction; matching only on CPU)."""

from ..tensor_intrin_base import TensorIntrin
from ._dot import dp4a_desc_impl

DP4A_S8S8S32_INTRIN = "dp4a_s8s8s32"
DP4A_U8S8S32_INTRIN = "dp4a_u8s8s32"
DP4A_S8U8S32_INTRIN = "dp4a_s8u8s32"
DP4A_U8U8U32_INTRIN = "dp4a_u8u8u32"

for _name, _dtypes in (
    (DP4A_S8S8S32_INTRIN, ("int8", "int8", "int32")),
    (DP4A_U8S8S32_INTRIN, ("uint8", "int8", "int32")),
    (DP4A_S8U8S32_INTRIN, ("int8", "uint8", "int32")),
    (DP4A_U8U8U32_INTRIN, ("uint8", "uint8", "uint32")),
):
    TensorIntrin.register(_name, *dp4a_desc_impl(*_dtypes), override=True)
