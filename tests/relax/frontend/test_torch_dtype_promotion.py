"""torch's type promotion through both importers, as a table: every op x dtype pair x operand
form (tensor-tensor, tensor-0-dim, tensor-Python-number, Python-number-tensor) is imported
through from_fx and from_exported_program, built for llvm, run, and compared with torch eager
in dtype and value. A case torch rejects must be a minitvm error; a case the importers cannot
compute must be refused (REFUSED) by OpNotImplemented naming the op and the dtypes."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import minitvm as tvm
from minitvm import relax
from minitvm.error import FrontendError, MiniTVMError, OpNotImplemented
from minitvm.relax.frontend.torch import from_exported_program, from_fx

DTYPES = ("bool", "int32", "int64", "float32", "float64")
_LHS = {"bool": [[1, 0, 1], [0, 1, 0]], "int": [[-7, -2, 0], [3, 5, 9]]}
_LHS["float"] = [[-7.5, -2.25, 0.0], [3.0, 5.5, 9.0]]
_RHS = {"bool": [[1, 1, 1], [1, 1, 1]], "int": [[2, -3, 4], [-2, 3, 1]]}  # no zero divisors
_RHS["float"] = [[2.0, -3.0, 4.0], [-2.5, 3.0, 1.5]]
_ZERO_DIM = {"bool": True, "int": -3, "float": 2.5}
SCALARS = (True, 3, -3, 2.5)
COND = [[True, False, True], [False, False, True]]


def _kind(dtype):
    return dtype if dtype == "bool" else dtype[:-2] if dtype[-2:].isdigit() else dtype


def _tensor(values, dtype):
    return torch.tensor(values, dtype=getattr(torch, dtype))


BINARY = {
    "add": lambda a, b: a + b,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2),
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b,
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "floordiv": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,
    "fmod": lambda a, b: torch.fmod(a, b),
    "pow": lambda a, b: a**b,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "logical_and": torch.logical_and,
    "logical_xor": torch.logical_xor,
    "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
    "where": lambda a, b: torch.where(torch.tensor(COND), a, b),
    "clamp_min": lambda a, b: torch.clamp(a, min=b),
    "clamp_max": lambda a, b: torch.clamp(a, max=b),
}

UNARY = {
    "abs": torch.abs,
    "neg": lambda a: -a,
    "exp": torch.exp,
    "sqrt": torch.sqrt,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "sin": torch.sin,
    "log1p": torch.log1p,
    "reciprocal": torch.reciprocal,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "round_decimals_1": lambda a: torch.round(a, decimals=1),
    "round_decimals_-1": lambda a: torch.round(a, decimals=-1),
    "trunc": torch.trunc,
    "sign": torch.sign,
    "square": torch.square,
    "sum": torch.sum,
    "sum_dim": lambda a: a.sum(1),
    "sum_dtype": lambda a: a.sum(dtype=torch.float64),
    "prod": torch.prod,
    "mean": torch.mean,
    "cumsum": lambda a: torch.cumsum(a, 1),
    "amax": lambda a: torch.amax(a, 1),
    "max": torch.max,
    "var": torch.var,
    "argmax": lambda a: torch.argmax(a, 1),
    "logical_not": torch.logical_not,
    "bitwise_not": lambda a: ~a,
    "clamp_float": lambda a: torch.clamp(a, -1.5, 2.5),
    "clamp_int": lambda a: torch.clamp(a, -1, 2),
    "clamp_min_gt_max": lambda a: torch.clamp(a, 2, -1),
    "clamp_int_min": lambda a: torch.clamp(a, min=0),
    "add_bool_scalar": lambda a: a + True,
    "to_bool": lambda a: a.bool(),
    "to_long": lambda a: a.long(),
}


def refused(op, operands, want):
    """The cases the importers refuse on purpose (OpNotImplemented), by torch's result: integer
    powers by tensor exponents have no exact relax lowering yet (integer bit operations
    convert to relax's bitwise ops and are compared with torch like the rest)."""
    return op == "pow" and want.dtype in (torch.int32, torch.int64) and operands[1] != "scalar"


class _Model(torch.nn.Module):
    """Many cases in one graph; each case reads the inputs it needs and returns one tensor."""

    def __init__(self, cases):
        super().__init__()
        self.cases = cases

    def forward(self, a0, a1, a2, a3, a4, b0, b1, b2, b3, b4):
        a, b = (a0, a1, a2, a3, a4), (b0, b1, b2, b3, b4)
        return tuple(case(a, b) for case in self.cases)


def _inputs(form):
    a = [_tensor(_LHS[_kind(d)], d) for d in DTYPES]
    if form == "tensor-0dim":
        b = [_tensor(_ZERO_DIM[_kind(d)], d) for d in DTYPES]
    else:
        b = [_tensor(_RHS[_kind(d)], d) for d in DTYPES]
    return a + b


def _binary_cases(form):
    """(label, op, dtypes, case) for every op and operand dtype pair of one form."""
    out = []
    for op, fn in BINARY.items():
        for i, lhs in enumerate(DTYPES):
            if form in ("tensor-tensor", "tensor-0dim"):
                for j, rhs in enumerate(DTYPES):
                    case = lambda a, b, fn=fn, i=i, j=j: fn(a[i], b[j])
                    out.append((f"{op}({lhs}, {rhs} {form[7:]})", op, (lhs, rhs), case))
            else:
                for s in SCALARS:
                    if form == "tensor-scalar":
                        case = lambda a, b, fn=fn, i=i, s=s: fn(a[i], s)
                        out.append((f"{op}({lhs}, {s!r})", op, (lhs, "scalar"), case))
                    else:  # the tensor is the divisor, exponent...: the zero-free values
                        case = lambda a, b, fn=fn, i=i, s=s: fn(s, b[i])
                        out.append((f"{op}({s!r}, {lhs})", op, ("scalar", lhs), case))
    return out


def _unary_cases():
    return [
        (f"{op}({d})", op, (d,), lambda a, b, fn=fn, i=i: fn(a[i]))
        for op, fn in UNARY.items()
        for i, d in enumerate(DTYPES)
    ]


def _classify(cases, xs):
    """Split cases into (torch's results of the supported ones, torch-rejected, refused)."""
    ok, rejected, refuse = [], [], []
    for label, op, dtypes, case in cases:
        try:
            want = case(xs[:5], xs[5:])
        except TypeError:
            continue  # not a valid call (torch.maximum(a, 2.5)): nothing to import
        except (RuntimeError, NotImplementedError):
            rejected.append((label, op, case))
            continue
        (refuse if refused(op, dtypes, want) else ok).append((label, op, case, want))
    return ok, rejected, refuse


def _build_run(mod, xs):
    with tvm.transform.PassContext(opt_level=0):  # unfused: 600 ops share ~50 kernels
        vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(x.numpy()) for x in xs])
    return [out] if not isinstance(out, list | tuple) else list(out)


def _fx(model, xs):
    info = [(tuple(x.shape), str(x.dtype).removeprefix("torch.")) for x in xs]
    return from_fx(torch.fx.symbolic_trace(model), info)


def _ep(model, xs):
    return from_exported_program(torch.export.export(model, tuple(xs)))


def _compare(labels, got, want, importer):
    assert len(got) == len(want)
    bad = []
    for label, g, w in zip(labels, got, want):
        g, w = g.numpy(), w.numpy()
        if g.dtype != w.dtype:
            bad.append(f"{label}: dtype {g.dtype}, torch {w.dtype}")
        elif w.dtype.kind == "f":
            if not np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True):
                bad.append(f"{label}: {g.tolist()} != torch {w.tolist()}")
        elif not np.array_equal(g, w):
            bad.append(f"{label}: {g.tolist()} != torch {w.tolist()}")
    assert not bad, f"{importer}: {len(bad)} of {len(want)} cases differ:\n" + "\n".join(bad)


# torch.export's fake tensors give bool ** True the dtype int64 while eager (and the exported
# program run by torch) give bool: from_exported_program refuses the disagreement
EXPORT_META_DISAGREES = {"pow(bool, True)"}


def _check_table(cases, xs):
    ok, rejected, refuse = _classify(cases, xs)
    model = _Model([case for _, _, case, _ in ok])
    labels, want = [label for label, *_ in ok], [w for *_, w in ok]
    _compare(labels, _build_run(_fx(model, xs), xs), want, "from_fx")
    exported = [c for c in ok if c[0] not in EXPORT_META_DISAGREES]
    model = _Model([case for _, _, case, _ in exported])
    labels, want = [label for label, *_ in exported], [w for *_, w in exported]
    _compare(labels, _build_run(_ep(model, xs), xs), want, "from_exported_program")
    for label, op, case, _ in ok:
        if label in EXPORT_META_DISAGREES:
            with pytest.raises(FrontendError, match="computes bool where torch computes int64"):
                _ep(_Model([case]), xs)
    for label, op, case in rejected:  # fx traces without running: the importer must refuse
        with pytest.raises(MiniTVMError):
            _fx(_Model([case]), xs)
    seen = set()
    for label, op, case, _ in refuse:
        with pytest.raises(OpNotImplemented, match=f"{op.split('_')[0]}.*(int|bool)"):
            _fx(_Model([case]), xs)
        if op not in seen:  # one export per op keeps the table fast
            seen.add(op)
            with pytest.raises(OpNotImplemented, match=f"{op.split('_')[0]}.*(int|bool)"):
                _ep(_Model([case]), xs)
    return len(ok), len(rejected), len(refuse)


@pytest.mark.parametrize("form", ["tensor-tensor", "tensor-0dim", "tensor-scalar", "scalar-tensor"])
def test_binary_ops_promote_as_torch(form):
    _check_table(_binary_cases(form), _inputs(form))


def test_unary_ops_and_reductions_keep_torch_dtypes():
    _check_table(_unary_cases(), _inputs("tensor-tensor"))


class _One(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _both(fn, x):
    """fn(x) through both importers, built and run: the torch result and the two outputs."""
    want = fn(x)
    model = _One(fn)
    mods = [
        from_fx(torch.fx.symbolic_trace(model), [(tuple(x.shape), str(x.dtype)[6:])]),
        from_exported_program(torch.export.export(model, (x,))),
    ]
    return want, [_build_run(mod, [x]) for mod in mods]


def test_creation_ops_take_torch_default_dtypes():
    def fn(x):
        return (
            torch.arange(5) + x.sum(),
            torch.arange(0, 1, 0.25),
            torch.arange(5.0),
            torch.arange(3, dtype=torch.float64),
            torch.full((2,), 2) * x[0],
            torch.full((2,), 2.5),
            torch.full((2,), True),
        )

    want, outs = _both(fn, torch.tensor([1, 2], dtype=torch.int32))
    for got in outs:
        _compare([str(i) for i in range(len(want))], got, list(want), "creation")


@pytest.mark.parametrize(
    "fn, dtype, match",
    [
        (lambda x: x.mean(), "int32", "mean of a int32 tensor is rejected by torch itself"),
        (lambda x: x**-3, "int64", r"pow of \(int64 tensor, Python int\).*negative"),
        (lambda x: x - x, "bool", r"sub of \(bool tensor, bool tensor\) is rejected by torch"),
        (lambda x: x.round(decimals=1), "int32", r"round\(decimals=1\) of \(int32 tensor\)"),
        (lambda x: torch.clamp(x, False, True), "bool", r"clamp of \(bool tensor, Python bool"),
    ],
)
def test_combinations_torch_rejects_are_clear_errors(fn, dtype, match):
    x = _tensor(_LHS[_kind(dtype)][0], dtype)
    with pytest.raises(RuntimeError):  # torch itself
        fn(x)
    with pytest.raises(FrontendError, match=match):
        from_fx(torch.fx.symbolic_trace(_One(fn)), [((3,), dtype)])


@pytest.mark.parametrize(
    "fn, match",
    [
        (lambda x: x**x, r"pow of \(int32 tensor, int32 tensor\): an integer power by a tensor"),
    ],
)
def test_unsupported_integer_ops_are_refused_naming_op_and_dtypes(fn, match):
    x = torch.tensor([1, 2, 3], dtype=torch.int32)
    for convert in (
        lambda: from_fx(torch.fx.symbolic_trace(_One(fn)), [((3,), "int32")]),
        lambda: from_exported_program(torch.export.export(_One(fn), (x,))),
    ):
        with pytest.raises(OpNotImplemented, match=match):
            convert()


def test_export_refuses_a_converter_whose_dtype_differs_from_torchs():
    def narrow_sum(node, importer):  # forgets torch's widening of int32 sums to int64
        x = importer.retrieve_args(node)[0]
        return importer.block_builder.emit(relax.op.sum(x))

    ep = torch.export.export(_One(torch.sum), (torch.tensor([1, 2], dtype=torch.int32),))
    with pytest.raises(FrontendError, match="computes int32 where torch computes int64"):
        from_exported_program(ep, custom_convert_map={"sum.default": narrow_sum})


def test_int_power_by_python_int_is_exact_and_wraps_as_torch():
    x = torch.tensor([-3, 2, 7, 40], dtype=torch.int32)
    want, outs = _both(lambda x: (x**3, x**0, x**13, (x > 0) ** 2), x)
    for got in outs:
        _compare(["x**3", "x**0", "x**13", "bool**2"], got, list(want), "int pow")
