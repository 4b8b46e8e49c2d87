"""The DCGAN generator (Radford et al.): a dense code, then transposed convs doubling H and W."""

from __future__ import annotations

from ..expr import Expr, Function, var
from ..op import nn, reshape, tanh
from .init import create_workload
from .layers import Net

EPS = 2e-5


def deconv(net: Net, x: Expr, name: str, cin: int, cout: int) -> Expr:
    """4x4 transposed conv, stride 2, padding 1: H and W double."""
    w = net.param(f"{name}_weight", (cin, cout, 4, 4))
    return nn.conv2d_transpose(
        x, w, strides=(2, 2), padding=(1, 1), channels=cout, kernel_size=(4, 4)
    )


def get_net(batch_size, random_len=100, oshape=(3, 64, 64), ngf=128, dtype="float32"):
    """The generator as a Relay Function of the code "data" (batch, random_len) and the weights."""
    net = Net(dtype)
    code = var("data", shape=(batch_size, random_len), dtype=dtype)
    x = nn.relu(nn.dense(code, net.param("dense_weight", (4 * 4 * ngf * 8, random_len))))
    x = reshape(x, (-1, ngf * 8, 4, 4))
    channels = ngf * 8
    for stage in (2, 3, 4):
        x = deconv(net, x, f"g{stage}_deconv", channels, channels // 2)
        x = nn.relu(net.batch_norm(x, f"g{stage}_batch_norm", channels // 2, EPS))
        channels //= 2
    x = deconv(net, x, "g5_deconv", channels, oshape[0])
    return Function([code, *net.params], tanh(x))


def get_workload(batch_size=1, oshape=(3, 64, 64), ngf=128, random_len=100, dtype="float32"):
    """(mod, params) of the DCGAN generator (output 3x64x64)."""
    return create_workload(get_net(batch_size, random_len, tuple(oshape), ngf, dtype))
