"""Model zoo: MLP, LeNet, ResNet-18/50, VGG-16, MobileNet-v2 and a BERT-base encoder layer.

`get_model(name)` returns a relax IRModule whose "main" takes the data input followed by the
weights (attr "num_input" = 1, as in TVM), and a dict of deterministic random weights under the
same names, so `relax.transform.BindParams("main", params)` makes them constants:

    mod, params = zoo.get_model("resnet18")
    mod = relax.transform.BindParams("main", params)(mod)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())

`torch_model(name, params)` is the same network as a torch.nn.Module (the reference, and what
the benchmarks export to ONNX). Each architecture is written once, against a small graph
interface (`_Graph`), that a relax backend (BlockBuilder + relax.op) and a torch backend
(torch.nn.functional) both implement: the torch side is the reference for every op's semantics
and the whole compile pipeline, and the parameter-count tests pin the architectures to the
published ones (ResNet-18 11 689 512, MobileNet-v2 3 504 872, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..error import ArgumentError, ShapeError

__all__ = ["get_model", "input_shape", "list_models", "torch_model"]

# ----------------------------------------------------------------------------- initialisation
# Scales keep activations O(1) through the depth: He-like for layers followed by relu, 1/fan_in
# for the rest; the last batch norm of a residual branch gets a small gamma so that the sum of
# 16 residual blocks does not grow without bound. BN statistics are not identity (mean != 0,
# var != 1), so folding them into the conv is exercised.


def _fan_in(shape: tuple) -> int:
    return int(np.prod(shape[1:])) if len(shape) > 1 else 1


def _normal(scale: Callable[[tuple], float]) -> Callable:
    """float32 standard-normal draws times scale(shape)."""
    return lambda rng, s: rng.standard_normal(s, np.float32) * np.float32(scale(s))


_INIT: dict[str, Callable[[np.random.Generator, tuple], np.ndarray]] = {
    "he": _normal(lambda s: math.sqrt(2 / _fan_in(s))),  # a relu follows
    "lecun": _normal(lambda s: math.sqrt(1 / _fan_in(s))),  # logits, attention, FFN
    "bias": _normal(lambda s: 0.05),
    "gamma": lambda rng, s: rng.uniform(0.7, 1.3, s),
    "gamma_residual": lambda rng, s: rng.uniform(0.15, 0.35, s),
    "beta": lambda rng, s: rng.standard_normal(s) * 0.1,
    "mean": lambda rng, s: rng.standard_normal(s) * 0.1,
    "var": lambda rng, s: rng.uniform(0.6, 1.6, s),
}

_BN_PARAMS = (
    ("weight", "gamma"),
    ("bias", "beta"),
    ("running_mean", "mean"),
    ("running_var", "var"),
)


# ----------------------------------------------------------------------------- graph backends


class _Graph(Protocol):
    """What an architecture may call (NCHW images, OIHW weights); both backends implement it."""

    def param(self, name: str, shape: tuple, init: str) -> Any: ...  # a weight, init of _INIT
    def shape(self, x: Any) -> tuple: ...
    def conv2d(self, x: Any, w: Any, stride: int, padding: int, groups: int = 1) -> Any: ...
    def batch_norm(self, x: Any, gamma: Any, beta: Any, mean: Any, var: Any) -> Any: ...
    def relu(self, x: Any) -> Any: ...
    def relu6(self, x: Any) -> Any: ...
    def gelu(self, x: Any) -> Any: ...
    def add(self, a: Any, b: Any) -> Any: ...
    def scale(self, x: Any, s: float) -> Any: ...
    def max_pool2d(self, x: Any, size: int, stride: int, padding: int) -> Any: ...
    def adaptive_avg_pool2d(self, x: Any, size: tuple) -> Any: ...
    def linear(self, x: Any, w: Any, b: Any = None) -> Any: ...
    def matmul(self, a: Any, b: Any) -> Any: ...
    def reshape(self, x: Any, shape: tuple) -> Any: ...
    def permute(self, x: Any, axes: tuple) -> Any: ...
    def softmax(self, x: Any) -> Any: ...  # over the last axis
    def layer_norm(self, x: Any, gamma: Any, beta: Any) -> Any: ...  # over the last axis


class _RelaxGraph:
    """Emits relax ops into an open BlockBuilder dataflow block; draws each weight on declaration."""

    def __init__(self, bb: Any, dtype: str, seed: int):
        from .. import relax

        self.relax, self.op, self.bb, self.dtype = relax, relax.op, bb, dtype
        self.rng = np.random.default_rng(seed)
        self.vars: list = []
        self.arrays: dict[str, np.ndarray] = {}

    def param(self, name, shape, init):
        assert name not in self.arrays, name  # an architecture names each weight once
        self.arrays[name] = _INIT[init](self.rng, shape).astype(self.dtype)
        var = self.relax.Var(name, self.relax.TensorStructInfo(shape, self.dtype))
        self.vars.append(var)
        return var

    def shape(self, x):
        return tuple(x.struct_info.shape)

    def _emit(self, call):
        return self.bb.emit(call)

    def conv2d(self, x, w, stride, padding, groups=1):
        return self._emit(self.op.nn.conv2d(x, w, stride, padding, groups=groups))

    def batch_norm(self, x, gamma, beta, mean, var):
        bn = self._emit(
            self.op.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=1e-5, training=False)
        )
        return self._emit(self.relax.TupleGetItem(bn, 0))

    def relu(self, x):
        return self._emit(self.op.nn.relu(x))

    def relu6(self, x):
        return self._emit(self.op.clip(x, 0.0, 6.0))

    def gelu(self, x):
        return self._emit(self.op.nn.gelu(x))

    def add(self, a, b):
        return self._emit(self.op.add(a, b))

    def scale(self, x, s):
        return self._emit(self.op.multiply(x, s))

    def max_pool2d(self, x, size, stride, padding):
        return self._emit(self.op.nn.max_pool2d(x, size, stride, padding))

    def adaptive_avg_pool2d(self, x, size):
        return self._emit(self.op.nn.adaptive_avg_pool2d(x, size))

    def linear(self, x, w, b=None):
        return self._emit(self.op.linear(x, w, b))

    def matmul(self, a, b):
        return self._emit(self.op.matmul(a, b))

    def reshape(self, x, shape):
        return self._emit(self.op.reshape(x, shape))

    def permute(self, x, axes):
        return self._emit(self.op.permute_dims(x, axes))

    def softmax(self, x):
        return self._emit(self.op.nn.softmax(x, axis=-1))

    def layer_norm(self, x, gamma, beta):
        return self._emit(self.op.nn.layer_norm(x, gamma, beta, axes=-1, epsilon=1e-12))


class _TorchGraph:
    """Runs the same architecture eagerly with torch.nn.functional on given tensors."""

    def __init__(self, tensors: dict):
        import torch
        import torch.nn.functional as F

        self.torch, self.F, self.tensors = torch, F, tensors

    def param(self, name, shape, init):
        return self.tensors[name]

    def shape(self, x):
        return tuple(x.shape)

    def conv2d(self, x, w, stride, padding, groups=1):
        return self.F.conv2d(x, w, None, stride, padding, 1, groups)

    def batch_norm(self, x, gamma, beta, mean, var):
        return self.F.batch_norm(x, mean, var, gamma, beta, False, 0.0, 1e-5)

    def relu(self, x):
        return self.F.relu(x)

    def relu6(self, x):
        return self.F.relu6(x)

    def gelu(self, x):
        return self.F.gelu(x)

    def add(self, a, b):
        return a + b

    def scale(self, x, s):
        return x * s

    def max_pool2d(self, x, size, stride, padding):
        return self.F.max_pool2d(x, size, stride, padding)

    def adaptive_avg_pool2d(self, x, size):
        return self.F.adaptive_avg_pool2d(x, size)

    def linear(self, x, w, b=None):
        return self.F.linear(x, w, b)

    def matmul(self, a, b):
        return self.torch.matmul(a, b)

    def reshape(self, x, shape):
        return self.torch.reshape(x, shape)

    def permute(self, x, axes):
        return x.permute(*axes)

    def softmax(self, x):
        return self.torch.softmax(x, -1)

    def layer_norm(self, x, gamma, beta):
        return self.F.layer_norm(x, gamma.shape, gamma, beta, 1e-12)


# ----------------------------------------------------------------------------- building blocks


def _conv_bn(g: _Graph, x, name, cin, cout, k, stride=1, groups=1, act="relu", gamma="gamma"):
    """conv (no bias) -> batch_norm -> activation (None, "relu" or "relu6")."""
    w = g.param(f"{name}_weight", (cout, cin // groups, k, k), "he")
    x = g.conv2d(x, w, stride, k // 2, groups)
    bn = [g.param(f"{name}_bn_{p}", (cout,), gamma if kind == "gamma" else kind)
          for p, kind in _BN_PARAMS]  # fmt: skip
    x = g.batch_norm(x, *bn)
    return x if act is None else getattr(g, act)(x)


def _dense(g: _Graph, x, name, cin, cout, init="he"):
    return g.linear(x, g.param(f"{name}_weight", (cout, cin), init),
                    g.param(f"{name}_bias", (cout,), "bias"))  # fmt: skip


def _flatten(g: _Graph, x):
    shape = g.shape(x)
    return g.reshape(x, (shape[0], int(np.prod([int(d) for d in shape[1:]]))))


def _classifier(g: _Graph, x, cin, classes=1000):
    """Global average pool, flatten, dense to the class logits."""
    x = _flatten(g, g.adaptive_avg_pool2d(x, (1, 1)))
    return _dense(g, x, "fc", cin, classes, "lecun")


# ----------------------------------------------------------------------------- architectures


def _mlp(g: _Graph, x):
    """TVM's relay.testing.mlp: flatten, 128 relu, 64 relu, 10, softmax."""
    x = _flatten(g, x)
    x = g.relu(_dense(g, x, "fc1", g.shape(x)[1], 128))
    x = g.relu(_dense(g, x, "fc2", 128, 64))
    return g.softmax(_dense(g, x, "fc3", 64, 10, "lecun"))


def _lenet(g: _Graph, x):
    """LeNet-5 with relu and max pooling (conv 6@5x5 pad 2, pool, conv 16@5x5, pool, 120-84-10)."""
    cin = int(g.shape(x)[1])
    x = g.conv2d(x, g.param("conv1_weight", (6, cin, 5, 5), "he"), 1, 2)
    x = g.max_pool2d(g.relu(g.add(x, g.param("conv1_bias", (6, 1, 1), "bias"))), 2, 2, 0)
    x = g.conv2d(x, g.param("conv2_weight", (16, 6, 5, 5), "he"), 1, 0)
    x = g.max_pool2d(g.relu(g.add(x, g.param("conv2_bias", (16, 1, 1), "bias"))), 2, 2, 0)
    x = _flatten(g, x)
    x = g.relu(_dense(g, x, "fc1", g.shape(x)[1], 120))
    x = g.relu(_dense(g, x, "fc2", 120, 84))
    return _dense(g, x, "fc3", 84, 10, "lecun")


def _resnet_stem(g: _Graph, x):
    x = _conv_bn(g, x, "conv1", int(g.shape(x)[1]), 64, 7, stride=2)
    return g.max_pool2d(x, 3, 2, 1)


def _basic_block(g: _Graph, x, name, cin, cout, stride):
    y = _conv_bn(g, x, f"{name}_conv1", cin, cout, 3, stride)
    y = _conv_bn(g, y, f"{name}_conv2", cout, cout, 3, act=None, gamma="gamma_residual")
    if stride != 1 or cin != cout:
        x = _conv_bn(g, x, f"{name}_downsample", cin, cout, 1, stride, act=None)
    return g.relu(g.add(y, x))


def _bottleneck(g: _Graph, x, name, cin, cout, stride):
    """torchvision's ResNet v1.5 bottleneck: the stride is on the 3x3 conv."""
    mid = cout // 4
    y = _conv_bn(g, x, f"{name}_conv1", cin, mid, 1)
    y = _conv_bn(g, y, f"{name}_conv2", mid, mid, 3, stride)
    y = _conv_bn(g, y, f"{name}_conv3", mid, cout, 1, act=None, gamma="gamma_residual")
    if stride != 1 or cin != cout:
        x = _conv_bn(g, x, f"{name}_downsample", cin, cout, 1, stride, act=None)
    return g.relu(g.add(y, x))


def _resnet(block, depths, expansion):
    def build(g: _Graph, x: Any) -> Any:
        x, cin = _resnet_stem(g, x), 64
        for stage, (n, width) in enumerate(zip(depths, (64, 128, 256, 512)), start=1):
            for i in range(n):
                stride = 2 if stage > 1 and i == 0 else 1
                x = block(g, x, f"layer{stage}_{i}", cin, width * expansion, stride)
                cin = width * expansion
        return _classifier(g, x, cin)

    return build


_VGG16 = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


def _vgg16(g: _Graph, x):
    """torchvision's VGG-16 (no batch norm): 13 convs with bias, adaptive pool to 7x7, 3 dense."""
    cin = int(g.shape(x)[1])
    for i, c in enumerate(_VGG16):
        if c == "M":
            x = g.max_pool2d(x, 2, 2, 0)
            continue
        x = g.conv2d(x, g.param(f"conv{i}_weight", (c, cin, 3, 3), "he"), 1, 1)
        x, cin = g.relu(g.add(x, g.param(f"conv{i}_bias", (c, 1, 1), "bias"))), c
    x = _flatten(g, g.adaptive_avg_pool2d(x, (7, 7)))
    x = g.relu(_dense(g, x, "fc1", 512 * 7 * 7, 4096))
    x = g.relu(_dense(g, x, "fc2", 4096, 4096))
    return _dense(g, x, "fc3", 4096, 1000, "lecun")


# (expansion t, out channels c, repeats n, first stride s), as in the MobileNet-v2 paper
_MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                 (6, 160, 3, 2), (6, 320, 1, 1))  # fmt: skip


def _inverted_residual(g: _Graph, x, name, cin, cout, stride, t):
    hidden = cin * t
    residual = stride == 1 and cin == cout
    y = x if t == 1 else _conv_bn(g, x, f"{name}_expand", cin, hidden, 1, act="relu6")
    y = _conv_bn(g, y, f"{name}_dw", hidden, hidden, 3, stride, groups=hidden, act="relu6")
    gamma = "gamma_residual" if residual else "gamma"
    y = _conv_bn(g, y, f"{name}_project", hidden, cout, 1, act=None, gamma=gamma)
    return g.add(y, x) if residual else y


def _mobilenet_v2(g: _Graph, x):
    """torchvision's MobileNet-v2 (width 1.0): ReLU6, depthwise 3x3, linear bottlenecks."""
    x, cin = _conv_bn(g, x, "conv1", int(g.shape(x)[1]), 32, 3, 2, act="relu6"), 32
    for b, (t, c, n, s) in enumerate(_MOBILENET_V2):
        for i in range(n):
            x = _inverted_residual(g, x, f"block{b}_{i}", cin, c, s if i == 0 else 1, t)
            cin = c
    x = _conv_bn(g, x, "conv_last", cin, 1280, 1, act="relu6")
    return _classifier(g, x, 1280)


_BERT_HIDDEN, _BERT_HEADS, _BERT_FFN = 768, 12, 3072


def _bert_layer(g: _Graph, x):
    """One BERT-base encoder layer (post-LN): self-attention, add & norm, GELU FFN, add & norm."""
    batch, seq, hidden = g.shape(x)
    heads, dh = _BERT_HEADS, _BERT_HIDDEN // _BERT_HEADS

    def heads_first(name, order):  # (b, s, h*d) -> (b, h, s, d) or (b, h, d, s)
        y = _dense(g, x, name, hidden, hidden, "lecun")
        return g.permute(g.reshape(y, (batch, seq, heads, dh)), order)

    q = heads_first("query", (0, 2, 1, 3))
    k = heads_first("key", (0, 2, 3, 1))
    v = heads_first("value", (0, 2, 1, 3))
    probs = g.softmax(g.scale(g.matmul(q, k), 1.0 / math.sqrt(dh)))
    ctx = g.reshape(g.permute(g.matmul(probs, v), (0, 2, 1, 3)), (batch, seq, hidden))
    attn = _dense(g, ctx, "attn_out", hidden, hidden, "lecun")
    x1 = g.layer_norm(g.add(x, attn), g.param("ln1_gamma", (hidden,), "gamma"),
                      g.param("ln1_beta", (hidden,), "beta"))  # fmt: skip
    h = g.gelu(_dense(g, x1, "ffn1", hidden, _BERT_FFN, "lecun"))
    h = _dense(g, h, "ffn2", _BERT_FFN, hidden, "lecun")
    return g.layer_norm(g.add(x1, h), g.param("ln2_gamma", (hidden,), "gamma"),
                        g.param("ln2_beta", (hidden,), "beta"))  # fmt: skip


@dataclass(frozen=True)
class _Model:
    build: Callable  # (graph, data) -> output
    image_shape: tuple | None  # (C, H, W) default; None for sequence models
    seq_len: int | None = None  # default sequence length of a sequence model


_MODELS: dict[str, _Model] = {
    "mlp": _Model(_mlp, (1, 28, 28)),
    "lenet": _Model(_lenet, (1, 28, 28)),
    "resnet18": _Model(_resnet(_basic_block, (2, 2, 2, 2), 1), (3, 224, 224)),
    "resnet50": _Model(_resnet(_bottleneck, (3, 4, 6, 3), 4), (3, 224, 224)),
    "vgg16": _Model(_vgg16, (3, 224, 224)),
    "mobilenet_v2": _Model(_mobilenet_v2, (3, 224, 224)),
    "bert_layer": _Model(_bert_layer, None, seq_len=128),
}


# ----------------------------------------------------------------------------- public API


def list_models() -> list[str]:
    """Names accepted by `get_model` and `torch_model`."""
    return list(_MODELS)


def _model(name: str) -> _Model:
    if name not in _MODELS:
        raise ArgumentError(
            f"zoo: unknown model {name!r}; choose one of {', '.join(_MODELS)} (zoo.list_models())"
        )
    return _MODELS[name]


def input_shape(
    name: str, batch_size: Any = 1, image_shape: tuple | None = None, seq_len: int | None = None
) -> tuple:
    """The data input's shape: (batch, C, H, W) for image models, (batch, seq_len, 768) for BERT."""
    m = _model(name)
    if m.image_shape is None:
        if image_shape is not None:
            raise ArgumentError(
                f"zoo: {name!r} takes a sequence, not an image: pass seq_len, not image_shape"
            )
        seq = m.seq_len if seq_len is None else int(seq_len)
        if seq <= 0:
            raise ShapeError(f"zoo: seq_len of {name!r} must be positive, got {seq_len}")
        return (batch_size, seq, _BERT_HIDDEN)
    if seq_len is not None:
        raise ArgumentError(f"zoo: {name!r} is an image model: pass image_shape, not seq_len")
    shape = m.image_shape if image_shape is None else tuple(int(d) for d in image_shape)
    if len(shape) != 3 or min(shape) <= 0:
        raise ShapeError(
            f"zoo: image_shape of {name!r} must be (C, H, W) with positive dims, got {image_shape}"
        )
    return (batch_size, *shape)


def get_model(
    name: str,
    batch_size: int | None = 1,
    dtype: str = "float32",
    seed: int = 0,
    image_shape: tuple | None = None,
    seq_len: int | None = None,
) -> tuple[Any, dict[str, np.ndarray]]:
    """(IRModule, params): "main"(data, *weights) with attr num_input=1; weights drawn from `seed`.

    batch_size=None makes the batch a symbolic dim "n". Image models take image_shape (C, H, W)
    (default (3, 224, 224), or (1, 28, 28) for mlp/lenet); bert_layer takes seq_len (default 128).
    >>> mod, params = get_model("resnet18"); mod = relax.transform.BindParams("main", params)(mod)
    """
    from .. import relax, tir

    m = _model(name)
    if batch_size is not None and int(batch_size) <= 0:
        raise ShapeError(f"zoo: batch_size must be positive or None (symbolic), got {batch_size}")
    batch = tir.Var("n", "int64") if batch_size is None else int(batch_size)
    shape = input_shape(name, batch, image_shape, seq_len)
    data = relax.Var("data", relax.TensorStructInfo(shape, dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", attrs={"num_input": 1}):
        graph = _RelaxGraph(bb, dtype, seed)
        with bb.dataflow():
            out = bb.emit_output(m.build(graph, data))
        bb.emit_func_output(out, params=[data, *graph.vars])
    return bb.get(), graph.arrays


def torch_model(name: str, params: dict[str, np.ndarray]) -> Any:
    """The same network as a torch.nn.Module holding `params` (from `get_model`), in eval mode."""
    import torch

    build = _model(name).build

    class ZooModel(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.names = list(params)
            for i, key in enumerate(self.names):  # buffers: names may not contain dots
                self.register_buffer(f"p{i}", torch.from_numpy(np.ascontiguousarray(params[key])))

        def forward(self, data: Any) -> Any:
            tensors = {key: getattr(self, f"p{i}") for i, key in enumerate(self.names)}
            return build(_TorchGraph(_Checked(tensors, name)), data)

    return ZooModel().eval()


class _Checked(dict):
    """A params dict that names the model and the missing weight when a lookup fails."""

    def __init__(self, tensors: dict, model: str):
        super().__init__(tensors)
        self.model = model

    def __missing__(self, key: str) -> Any:
        raise ArgumentError(
            f"zoo.torch_model({self.model!r}): params has no weight {key!r}; pass the dict "
            f"returned by get_model({self.model!r})"
        )
