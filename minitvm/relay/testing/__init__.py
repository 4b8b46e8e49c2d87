"""`relay.testing`: classic workloads as (mod, params) — vgg, resnet, mobilenet, mlp."""

from . import init, layers, mlp, mobilenet, resnet, vgg
from .init import create_workload

__all__ = ["create_workload", "init", "layers", "mlp", "mobilenet", "resnet", "vgg"]
