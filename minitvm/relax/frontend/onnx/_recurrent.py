"""RNN, GRU and LSTM: the recurrence unrolled over a sequence length known at import time.

The input projection of every step is one matmul; each step then adds its hidden projection and
applies the gates as ONNX defines them (gate orders: GRU z r h; LSTM i o f c; peepholes i o f).
Directions forward, reverse and bidirectional, layout 0 and 1, initial states, clip and the
activations Sigmoid / Tanh / Relu (with their ONNX names) are supported. With a `sequence_lens`
input (per-batch lengths, known at run time) a step at or past a sequence's length keeps its
states and writes zeros to Y, as ONNX Runtime does (the reverse direction then starts at each
sequence's own last step; an empty sequence's final states are zeros).
"""

from __future__ import annotations

import numpy as np

from ....error import OpAttributeInvalid, OpAttributeUnImplemented
from ....tir.expr import PrimExpr
from ... import op as R
from ...expr import Expr
from ._helpers import _const_like, _dtype, _required, _unsupported, shape_of

_ACTIVATIONS = {"Sigmoid": R.sigmoid, "Tanh": R.tanh, "Relu": R.nn.relu}
# op -> (gates, default activations per direction)
_KINDS = {
    "RNN": (1, ["Tanh"]),
    "GRU": (3, ["Sigmoid", "Tanh"]),
    "LSTM": (4, ["Sigmoid", "Tanh", "Tanh"]),
}


def _activations(attrs: dict, kind: str, directions: int) -> list:
    default = _KINDS[kind][1]
    names = list(attrs.get("activations", default * directions))
    if attrs.get("activation_alpha") or attrs.get("activation_beta"):
        _unsupported("activation_alpha/beta", attrs.get("activation_alpha"), "none")
    if len(names) != len(default) * directions:
        raise OpAttributeInvalid(
            f"attribute activations={names} must name {len(default)} per direction"
        )
    for n in names:
        if n not in _ACTIVATIONS:
            _unsupported("activations", n, sorted(_ACTIVATIONS))
    per = len(default)
    return [[_ACTIVATIONS[n] for n in names[d * per : (d + 1) * per]] for d in range(directions)]


def _slice(ctx, x: Expr, axis: int, begin: int, end: int) -> Expr:
    return ctx.emit(R.strided_slice(x, [axis], [begin], [end]))


def _row(ctx, x: Expr, index: int) -> Expr:
    """x[index] of a tensor's leading axis, with that axis dropped."""
    part = _slice(ctx, x, 0, index, index + 1)
    return ctx.emit(R.squeeze(part, [0]))


def _recurrent(kind: str):
    gates = _KINDS[kind][0]

    def convert(ctx, inputs, attrs):
        inputs = list(inputs) + [None] * (8 - len(inputs))
        x, w, r, b, seq_lens, h0 = (inputs[k] for k in range(6))
        hidden = int(_required(attrs, "hidden_size"))
        direction = attrs.get("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            _unsupported("direction", direction, ["forward", "reverse", "bidirectional"])
        dirs = 2 if direction == "bidirectional" else 1
        acts = _activations(attrs, kind, dirs)
        layout = int(attrs.get("layout", 0))
        if kind == "LSTM" and int(attrs.get("input_forget", 0)):
            _unsupported("input_forget", 1, [0])
        clip = attrs.get("clip")
        x = ctx.expr(x)
        if layout == 1:
            x = ctx.emit(R.permute_dims(x, [1, 0, 2]))
            if h0 is not None:
                h0 = ctx.emit(R.permute_dims(ctx.expr(h0), [1, 0, 2]))
            if kind == "LSTM" and inputs[6] is not None:
                inputs[6] = ctx.emit(R.permute_dims(ctx.expr(inputs[6]), [1, 0, 2]))
        seq, batch = shape_of(x)[:2]
        if isinstance(seq, PrimExpr):
            raise OpAttributeUnImplemented(
                f"{kind} over a symbolic sequence length ({seq}); fix it in shape_dict"
            )
        w, r = ctx.expr(w), ctx.expr(r)
        dtype = _dtype(x)
        lens = None if seq_lens is None else _lengths(ctx, ctx.expr(seq_lens), batch)
        outs_y, outs_h, outs_c = [], [], []
        for d in range(dirs):
            reverse = direction == "reverse" or d == 1
            wd, rd = _row(ctx, w, d), _row(ctx, r, d)  # [G*H, in], [G*H, H]
            xw = ctx.emit(R.matmul(x, ctx.emit(R.permute_dims(wd, [1, 0]))))  # [seq, b, G*H]
            wb = rb = None
            if b is not None:
                bd = _row(ctx, ctx.expr(b), d)
                wb, rb = (
                    _slice(ctx, bd, 0, 0, gates * hidden),
                    _slice(ctx, bd, 0, gates * hidden, 2 * gates * hidden),
                )
                if kind != "GRU":
                    xw = ctx.emit(R.add(xw, ctx.emit(R.add(wb, rb))))
                else:
                    xw = ctx.emit(R.add(xw, wb))
            h = _initial(ctx, h0, d, batch, hidden, dtype)
            c = _initial(ctx, inputs[6], d, batch, hidden, dtype) if kind == "LSTM" else None
            peep = (
                _row(ctx, ctx.expr(inputs[7]), d)
                if kind == "LSTM" and inputs[7] is not None
                else None
            )
            rt = ctx.emit(R.permute_dims(rd, [1, 0]))
            steps = []
            for t in reversed(range(seq)) if reverse else range(seq):
                pre = _row(ctx, xw, t)  # [b, G*H]
                h_new, c_new = _STEP[kind](
                    ctx, pre, h, c, rt, rb, peep, acts[d], hidden, clip, attrs
                )
                if lens is None:
                    h, c = h_new, c_new
                    steps.append((t, h))
                    continue
                live = ctx.emit(R.less(ctx.expr(np.int64(t)), lens))  # [b, 1]
                h = ctx.emit(R.where(live, h_new, h))
                c = None if c is None else ctx.emit(R.where(live, c_new, c))
                steps.append((t, ctx.emit(R.where(live, h_new, _const_like(ctx, h_new, 0.0)))))
            steps.sort(key=lambda s: s[0])
            outs_y.append(_stack(ctx, [s[1] for s in steps]))
            if lens is not None:  # an empty sequence's final states are zeros (ONNX Runtime)
                ran = ctx.emit(R.greater(lens, ctx.expr(np.int64(0))))
                h = ctx.emit(R.where(ran, h, _const_like(ctx, h, 0.0)))
                c = None if c is None else ctx.emit(R.where(ran, c, _const_like(ctx, c, 0.0)))
            outs_h.append(h)
            outs_c.append(c)
        y = ctx.emit(R.concat(outs_y, 1)) if dirs > 1 else outs_y[0]  # [seq, dirs, b, H]
        y_h = _stack_dirs(ctx, outs_h)  # [dirs, b, H]
        results = [y, y_h]
        if kind == "LSTM":
            results.append(_stack_dirs(ctx, outs_c))
        if layout == 1:
            results = [
                ctx.emit(R.permute_dims(results[0], [2, 0, 1, 3])),
                *[ctx.emit(R.permute_dims(v, [1, 0, 2])) for v in results[1:]],
            ]
        return results

    return convert


def _lengths(ctx, seq_lens: Expr, batch) -> Expr:
    """sequence_lens as an int64 [b, 1] column, to compare with each step's index."""
    sinfo = seq_lens.struct_info
    if sinfo.ndim != 1 or not str(sinfo.dtype).startswith("int"):
        raise OpAttributeInvalid(
            f"input sequence_lens is {sinfo}; it must be a 1-d integer tensor of batch_size values"
        )
    column = ctx.emit(R.astype(seq_lens, "int64"))
    return ctx.emit(R.reshape(column, (batch, 1)))


def _initial(ctx, value, d: int, batch, hidden: int, dtype: str) -> Expr:
    if value is None:
        return (
            ctx.expr(np.zeros((int(batch), hidden), dtype))
            if isinstance(batch, int)
            else (ctx.emit(R.full((batch, hidden), ctx.expr(np.asarray(0, dtype)), dtype)))
        )
    return _row(ctx, ctx.expr(value), d)


def _stack(ctx, steps: list) -> Expr:
    """[b, H] per step -> [seq, 1, b, H]."""
    parts = [ctx.emit(R.expand_dims(ctx.emit(R.expand_dims(s, 0)), 0)) for s in steps]
    return ctx.emit(R.concat(parts, 0)) if len(parts) > 1 else parts[0]


def _stack_dirs(ctx, states: list) -> Expr:
    parts = [ctx.emit(R.expand_dims(s, 0)) for s in states]
    return ctx.emit(R.concat(parts, 0)) if len(parts) > 1 else parts[0]


def _gate(ctx, pre: Expr, k: int, hidden: int) -> Expr:
    return _slice(ctx, pre, 1, k * hidden, (k + 1) * hidden)


def _clipped(ctx, x: Expr, clip) -> Expr:
    if clip is None:
        return x
    return ctx.emit(R.clip(x, -float(clip), float(clip)))


def _rnn_step(ctx, pre, h, c, rt, rb, peep, acts, hidden, clip, attrs):
    total = ctx.emit(R.add(pre, ctx.emit(R.matmul(h, rt))))
    return ctx.emit(acts[0](_clipped(ctx, total, clip))), None


def _gru_step(ctx, pre, h, c, rt, rb, peep, acts, hidden, clip, attrs):
    f, g = acts
    hr = ctx.emit(R.matmul(h, rt))  # [b, 3H]: z r h parts of H R^T
    if rb is not None:
        hr = ctx.emit(R.add(hr, rb))
    z = ctx.emit(
        f(
            _clipped(
                ctx, ctx.emit(R.add(_gate(ctx, pre, 0, hidden), _gate(ctx, hr, 0, hidden))), clip
            )
        )
    )
    r = ctx.emit(
        f(
            _clipped(
                ctx, ctx.emit(R.add(_gate(ctx, pre, 1, hidden), _gate(ctx, hr, 1, hidden))), clip
            )
        )
    )
    if int(attrs.get("linear_before_reset", 0)):
        cand = ctx.emit(R.multiply(r, _gate(ctx, hr, 2, hidden)))
    else:  # (r * H) R_h^T + Rb_h
        rh = _slice(ctx, rt, 1, 2 * hidden, 3 * hidden)
        cand = ctx.emit(R.matmul(ctx.emit(R.multiply(r, h)), rh))
        if rb is not None:
            cand = ctx.emit(R.add(cand, _slice(ctx, rb, 0, 2 * hidden, 3 * hidden)))
    n = ctx.emit(g(_clipped(ctx, ctx.emit(R.add(_gate(ctx, pre, 2, hidden), cand)), clip)))
    one = _const_like(ctx, z, 1.0)
    new = ctx.emit(
        R.add(ctx.emit(R.multiply(ctx.emit(R.subtract(one, z)), n)), ctx.emit(R.multiply(z, h)))
    )
    return new, None


def _lstm_step(ctx, pre, h, c, rt, rb, peep, acts, hidden, clip, attrs):
    f, g, hact = acts
    total = ctx.emit(R.add(pre, ctx.emit(R.matmul(h, rt))))  # i o f c
    gi, go, gf, gc = (_gate(ctx, total, k, hidden) for k in range(4))
    if peep is not None:
        pi, po, pf = (_slice(ctx, peep, 0, k * hidden, (k + 1) * hidden) for k in range(3))
        gi = ctx.emit(R.add(gi, ctx.emit(R.multiply(pi, c))))
        gf = ctx.emit(R.add(gf, ctx.emit(R.multiply(pf, c))))
    i = ctx.emit(f(_clipped(ctx, gi, clip)))
    fg = ctx.emit(f(_clipped(ctx, gf, clip)))
    cand = ctx.emit(g(_clipped(ctx, gc, clip)))
    c_new = ctx.emit(R.add(ctx.emit(R.multiply(fg, c)), ctx.emit(R.multiply(i, cand))))
    if peep is not None:
        go = ctx.emit(R.add(go, ctx.emit(R.multiply(po, c_new))))
    o = ctx.emit(f(_clipped(ctx, go, clip)))
    return ctx.emit(R.multiply(o, ctx.emit(hact(c_new)))), c_new


_STEP = {"RNN": _rnn_step, "GRU": _gru_step, "LSTM": _lstm_step}
