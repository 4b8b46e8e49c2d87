"""AMD GPU sdot4 (the dp4a shape on int8); registered for matching, not for CPU builds."""

from ..tensor_intrin_base import TensorIntrin
from ._dot import dp4a_desc_impl

AMDGPU_SDOT4_INTRIN = "sdot4"

TensorIntrin.register(AMDGPU_SDOT4_INTRIN, *dp4a_desc_impl("int8", "int8", "int32"), override=True)
