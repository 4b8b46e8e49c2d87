"""TVM's `relax.frontend.nn`: write a model as PyTorch-like modules, export it to relax.

    class MLP(nn.Module):
        def __init__(self):
            self.fc1, self.fc2 = nn.Linear(784, 256), nn.Linear(256, 10)
        def forward(self, x):
            return self.fc2(nn.op.relu(self.fc1(x)))

    mod, params = MLP().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})

See docs/nn.md.
"""

from . import op, spec
from .core import (
    Effect,
    Module,
    ModuleDict,
    ModuleList,
    Object,
    Parameter,
    Sequential,
    Tensor,
    get_default_dtype,
    set_default_dtype,
    wrap_nested,
)
from .exporter import add_extern
from .extern import ExternModule, ObjectModule, SourceModule
from .jit import TorchModule
from .modules import (
    GELU,
    Attention,
    Conv1D,
    Conv2D,
    Conv3D,
    ConvTranspose1D,
    Dropout,
    Embedding,
    GroupNorm,
    Identity,
    IOEffect,
    KVCache,
    LayerNorm,
    Linear,
    PReLU,
    ReLU,
    RMSNorm,
    SiLU,
    TimestepEmbedding,
    Timesteps,
)
from .op import *  # TVM re-exports every nn.op function as nn.<name>
from .op import __all__ as _op_names
from .subroutine import SubroutineMixin
from .visitor import Mutator

__all__ = [  # noqa: PLE0604 (the nn.op names are listed in op.py)
    "GELU", "Attention", "Conv1D", "Conv2D", "Conv3D", "ConvTranspose1D", "Dropout", "Effect",
    "Embedding", "ExternModule", "GroupNorm", "IOEffect", "ObjectModule", "SourceModule",
    "Identity", "KVCache", "LayerNorm", "Linear", "Module", "ModuleDict", "ModuleList", "Mutator",
    "Object", "Parameter", "PReLU", "RMSNorm", "ReLU", "Sequential", "SiLU", "SubroutineMixin",
    "Tensor", "TimestepEmbedding", "Timesteps", "TorchModule", "add_extern", "get_default_dtype", "op",
    "set_default_dtype", "spec", "wrap_nested",
    *_op_names,
]  # fmt: skip
