"""TVMScript's R namespace: parsing `@R.function`, printing relax IR, and round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitvm as tvm
from minitvm import relax, tir, topi
from minitvm.error import ParseError
from minitvm.ir import assert_structural_equal
from minitvm.relax.eval_ref import evaluate
from minitvm.relax.op import OP_TABLE
from minitvm.script import from_source
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T

MLC_SRC = """
@I.ir_module
class MyModule:
    @T.prim_func
    def relu0(x: T.handle, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (1, n), "float32")
        Y = T.match_buffer(y, (1, n), "float32")
        for i, j in T.grid(1, n):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @T.prim_func
    def linear0(x: T.handle, w: T.handle, b: T.handle, z: T.handle):
        m, n, k = T.int64(), T.int64(), T.int64()
        X = T.match_buffer(x, (1, m), "float32")
        W = T.match_buffer(w, (n, m), "float32")
        B = T.match_buffer(b, (n, ), "float32")
        Z = T.match_buffer(z, (1, n), "float32")
        Y = T.alloc_buffer((1, n), "float32")
        for i, j, k in T.grid(1, n, m):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, n):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @R.function
    def main(x: R.Tensor((1, "m"), "float32"),
             w0: R.Tensor(("n", "m"), "float32"),
             b0: R.Tensor(("n", ), "float32"),
             w1: R.Tensor(("k", "n"), "float32"),
             b1: R.Tensor(("k", ), "float32")):
        m, n, k = T.int64(), T.int64(), T.int64()
        with R.dataflow():
            lv0 = R.call_tir(cls.linear0, (x, w0, b0), out_sinfo=R.Tensor((1, n), dtype="float32"))
            lv1 = R.call_tir(relu0, (lv0, ), R.Tensor((1, n), "float32"))
            out = R.call_tir(MyModule.linear0, (lv1, w1, b1), R.Tensor((1, k), "float32"))
            R.output(out)
        return out
"""

EXTERN_SRC = """
@I.ir_module
class MyModuleWithExternCall:
    @R.function
    def main(x: R.Tensor((1, "m"), "float32"),
             w0: R.Tensor(("n", "m"), "float32"),
             b0: R.Tensor(("n", ), "float32"),
             w1: R.Tensor(("k", "n"), "float32"),
             b1: R.Tensor(("k", ), "float32")):
        # block 0
        m, n, k = T.int64(), T.int64(), T.int64()
        with R.dataflow():
            lv0 = R.call_dps_packed("env.linear", (x, w0, b0), R.Tensor((1, n), "float32"))
            lv1 = R.call_dps_packed("env.relu", (lv0, ), R.Tensor((1, n), "float32"))
            out = R.call_dps_packed("env.linear", (lv1, w1, b1), R.Tensor((1, k), "float32"))
            R.output(out)
        return out
"""


def _mlp_params(rng, m=32, n=16, k=10):
    return (
        rng.standard_normal((1, m)).astype("float32"),
        (rng.standard_normal((n, m)) * 0.2).astype("float32"),
        rng.standard_normal(n).astype("float32"),
        (rng.standard_normal((k, n)) * 0.2).astype("float32"),
        rng.standard_normal(k).astype("float32"),
    )


def _numpy_mlp(x, w0, b0, w1, b1):
    return np.maximum(x @ w0.T + b0, 0) @ w1.T + b1


def _roundtrip(mod):
    text = mod.script()
    back = from_source(text)
    assert_structural_equal(mod, back)
    assert back.script() == text
    return back


def _vm():
    try:
        from minitvm.relax.vm import VirtualMachine, build
    except ImportError:  # relax.build is another engineer's work in progress
        pytest.skip("relax.build / VirtualMachine not available")
    return build, VirtualMachine


# --------------------------------------------------------------------------- the MLC programs


def test_mlc_module_parses_and_matches_numpy():
    mod = from_source(MLC_SRC)
    assert sorted(mod) == ["linear0", "main", "relu0"]
    main = mod["main"]
    assert isinstance(main, relax.Function) and main.attrs["global_symbol"] == "main"
    (block,) = main.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    # cls.linear0, bare relu0 and MyModule.linear0 all name the module's GlobalVars
    callees = [b.value.args[0] for b in block.bindings]
    assert callees[0] is mod.get_global_var("linear0") is callees[2]
    assert callees[1] is mod.get_global_var("relu0")
    # one shared symbolic var per string dim
    m_x = main.params[0].struct_info.shape[1]
    assert m_x is main.params[1].struct_info.shape[1]
    assert [type(b.var) for b in block.bindings] == [relax.DataflowVar] * 2 + [relax.Var]
    args = _mlp_params(np.random.default_rng(0))
    np.testing.assert_allclose(evaluate(mod, *args), _numpy_mlp(*args), rtol=1e-4, atol=1e-4)


def test_mlc_module_builds_and_runs_on_the_vm():
    build, VirtualMachine = _vm()
    mod = from_source(MLC_SRC)
    args = _mlp_params(np.random.default_rng(1))
    vm = VirtualMachine(build(mod, target="llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(a) for a in args])
    np.testing.assert_allclose(out.numpy(), _numpy_mlp(*args), rtol=1e-4, atol=1e-4)


def test_mlc_decorated_class_in_python_source():
    @I.ir_module
    class Module:
        @T.prim_func
        def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                B[i] = A[i] + T.float32(1)

        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            cls = Module
            with R.dataflow():
                y = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((4,), "float32"))
                z = R.multiply(y, R.const(2.0, "float32"))
                R.output(z)
            return z

    x = np.arange(4, dtype="float32")
    np.testing.assert_allclose(evaluate(Module, x), (x + 1) * 2)
    _roundtrip(Module)


def _register_env_funcs():
    @tvm.register_func("env.linear", override=True)
    def _linear(x, w, b, out):
        np.from_dlpack(out)[...] = np.from_dlpack(x) @ np.from_dlpack(w).T + np.from_dlpack(b)

    @tvm.register_func("env.relu", override=True)
    def _relu(x, out):
        np.from_dlpack(out)[...] = np.maximum(np.from_dlpack(x), 0)


def test_call_dps_packed_env_linear_matches_numpy():
    _register_env_funcs()
    mod = from_source(EXTERN_SRC)
    call = mod["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.call_dps_packed"
    assert call.args[0].global_symbol == "env.linear"
    args = _mlp_params(np.random.default_rng(2))
    np.testing.assert_allclose(evaluate(mod, *args), _numpy_mlp(*args), rtol=1e-4, atol=1e-4)
    _roundtrip(mod)
    build, VirtualMachine = _vm()
    out = VirtualMachine(build(mod, target="llvm"), tvm.cpu())["main"](*args)
    np.testing.assert_allclose(out.numpy(), _numpy_mlp(*args), rtol=1e-4, atol=1e-4)


def test_older_positional_call_tir_shape_and_dtype_form():
    src = MLC_SRC.replace(
        'R.call_tir(MyModule.linear0, (lv1, w1, b1), R.Tensor((1, k), "float32"))',
        'R.call_tir(linear0, (lv1, w1, b1), (1, k), dtype="float32")',
    )
    assert src != MLC_SRC
    assert_structural_equal(from_source(src), from_source(MLC_SRC))


def test_mlc_module_round_trips():
    mod = from_source(MLC_SRC)
    text = mod.script()
    assert text.startswith("# from minitvm.script import ir as I, tir as T, relax as R")
    assert '@R.function\n    def main(x: R.Tensor((1, "m"), dtype="float32")' in text
    assert (
        'R.call_tir(cls.linear0, (x, w0, b0), out_sinfo=R.Tensor((1, "n"), dtype="float32"))'
        in text
    )
    assert "with R.dataflow():" in text and "R.output(out)" in text
    _roundtrip(mod)


# --------------------------------------------------------------------------- BlockBuilder modules


def test_blockbuilder_emit_te_mlp_round_trips():
    x = relax.Var("x", relax.TensorStructInfo((4, 16), "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((8, 16), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((3, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w0, w1]):
        with bb.dataflow():
            lv0 = bb.emit_te(topi.nn.dense, x, w0)
            lv1 = bb.emit_te(topi.nn.relu, lv0)
            gv = bb.emit_output(bb.emit_te(topi.nn.dense, lv1, w1))
        bb.emit_func_output(gv)
    mod = bb.get()
    back = _roundtrip(mod)
    rng = np.random.default_rng(3)
    args = [
        rng.standard_normal(p.struct_info.static_shape()).astype("float32") for p in (x, w0, w1)
    ]
    np.testing.assert_allclose(evaluate(back, *args), evaluate(mod, *args), rtol=1e-5)


def test_blockbuilder_emit_te_mlp_with_symbolic_batch_round_trips():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 16), "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((8, 16), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((3, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w0, w1]):
        with bb.dataflow():
            lv0 = bb.emit_te(topi.nn.dense, x, w0)
            lv1 = bb.emit_te(topi.nn.relu, lv0)
            gv = bb.emit_output(bb.emit_te(topi.nn.dense, lv1, w1))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert 'def main(x: R.Tensor(("n", 16), dtype="float32")' in mod.script()
    back = _roundtrip(mod)
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s).astype("float32") for s in ((5, 16), (8, 16), (3, 8))]
    want = np.maximum(args[0] @ args[1].T, 0) @ args[2].T
    np.testing.assert_allclose(evaluate(back, *args), want, rtol=1e-4, atol=1e-4)


def test_blockbuilder_symbolic_batch_round_trips():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, m), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((n, m), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit_te(topi.add, x, y)
            lv1 = bb.emit(relax.op.nn.relu(lv0))
            lv2 = bb.emit(relax.op.sum(lv1, axis=[1], keepdims=True))
            gv = bb.emit_output(relax.op.multiply(lv1, lv2))
        bb.emit_func_output(gv)
    mod = bb.get()
    text = mod.script()
    assert 'R.Tensor(("n", "m"), dtype="float32")' in text and "    @R.function\n" in text
    back = _roundtrip(mod)
    a = np.random.default_rng(4).standard_normal((3, 5)).astype("float32")
    np.testing.assert_allclose(evaluate(back, a, a), evaluate(mod, a, a), rtol=1e-5)


# --------------------------------------------------------------------------- the pass tutorial


@I.ir_module
class PassTutorial:
    @R.function
    def main(
        x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32")
    ) -> R.Tensor((1, 4, 8, 8), "float32"):
        with R.dataflow():
            c = R.const([[[1.0]], [[2.0]], [[3.0]], [[4.0]]], "float32")
            lv0 = R.nn.conv2d(x, w, strides=(1, 1), padding=(1, 1))
            lv1 = R.add(c, c)
            lv2 = R.multiply(lv1, R.const(2.0, "float32"))
            lv3 = R.add(lv0, lv2)
            lv4 = R.add(lv0, lv2)
            gv = R.add(lv3, lv4)
            R.output(gv)
        return gv


def test_pass_tutorial_program_round_trips_before_and_after_legalize():
    _roundtrip(PassTutorial)
    legal = relax.transform.LegalizeOps()(PassTutorial)
    assert any(isinstance(f, tir.PrimFunc) for f in legal.functions.values())
    back = _roundtrip(legal)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    np.testing.assert_allclose(
        evaluate(back, x, w), evaluate(PassTutorial, x, w), rtol=1e-4, atol=1e-4
    )


# --------------------------------------------------------------------------- high-level ops, tuples, If


@I.ir_module
class HighLevel:
    @R.function
    def main(
        x: R.Tensor((1, 2, 6, 6), "float32"), w: R.Tensor((3, 2, 3, 3), "float32")
    ) -> R.Tensor((9, 3), "float32"):
        with R.dataflow():
            a = R.nn.conv2d(x, w, strides=(2, 2), padding=(1, 1, 1, 1))
            s = R.sum(a, axis=[1], keepdims=True)
            b = R.subtract(a, s)
            r = R.reshape(b, R.shape([3, 9]))
            p: R.Tensor((9, 3), dtype="float32") = R.permute_dims(r, axes=[1, 0])
            R.output(p)
        return p


def test_high_level_ops_with_attrs_round_trip_and_evaluate():
    text = HighLevel.script()
    assert "R.nn.conv2d(x, w, strides=(2, 2), padding=(1, 1, 1, 1))" in text
    assert "R.sum(a, axis=(1,), keepdims=True)" in text
    assert "R.permute_dims(r, axes=(1, 0))" in text
    back = _roundtrip(HighLevel)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2, 6, 6)).astype("float32")
    w = rng.standard_normal((3, 2, 3, 3)).astype("float32")
    got = evaluate(back, x, w)
    a = _np_conv2d(x, w, stride=2, pad=1)
    b = a - a.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, b.reshape(3, 9).T, rtol=1e-4, atol=1e-4)


def _np_conv2d(x, w, stride, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = xp.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), "float32")
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


@I.ir_module
class TuplesMatchCastIf:
    @R.function
    def main(x: R.Tensor((2, "n"), "float32"), c: R.Tensor((), "bool")) -> R.Tuple(
        R.Tensor((2, "n"), "float32"), R.Tensor((2, "n"), "float32")
    ):
        n = T.int64()
        t = (x, R.nn.relu(x))
        a = t[1]
        y = R.match_cast(a, R.Tensor((2, "k"), "float32"))
        if c:
            z0 = R.exp(y)
            z = z0
        else:
            z = R.negative(y)
        u = R.match_cast(z, R.Tensor((2, n), "float32"))
        return (u, R.add(t[0], x))

    @R.function(private=True, pure=False)
    def other(
        x: R.Tensor(ndim=2), y: R.Tensor(("a", 3)), s: R.Shape(["a", 3]), o: R.Object
    ) -> R.Tensor(ndim=2):
        R.func_attr({"foo": 1})
        if R.const(True, "bool"):
            return x
        else:
            return R.add(x, x)


def test_tuples_match_cast_and_if_round_trip_and_evaluate():
    main = TuplesMatchCastIf["main"]
    bindings = main.body.blocks[0].bindings
    # normal form, as TVM parses: the relu nested in the tuple is bound first
    assert isinstance(bindings[0].value, relax.Call) and bindings[0].var.name_hint == "lv"
    assert isinstance(bindings[1].value, relax.Tuple) and bindings[1].value.fields[1].same_as(
        bindings[0].var
    )
    assert isinstance(bindings[2].value, relax.TupleGetItem)
    assert isinstance(bindings[3], relax.MatchCast)
    assert isinstance(bindings[4].value, relax.If)
    other = TuplesMatchCastIf["other"]
    assert "global_symbol" not in other.attrs and other.attrs["foo"] == 1 and not other.is_pure
    assert isinstance(other.body.body, relax.If)
    back = _roundtrip(TuplesMatchCastIf)
    x = np.arange(6, dtype="float32").reshape(2, 3) - 2
    for flag in (True, False):
        u, v = evaluate(back, x, np.array(flag))
        np.testing.assert_allclose(u, np.exp(np.maximum(x, 0)) if flag else -np.maximum(x, 0))
        np.testing.assert_allclose(v, x + x)


def test_standalone_function_decorator_and_from_source():
    @R.function
    def f(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n", 4), "float32"):
        with R.dataflow():
            y = R.nn.relu(x)
            z = R.add(y, R.const(1.0, "float32"))
            R.output(z)
        return z

    assert isinstance(f, relax.Function) and f.attrs["global_symbol"] == "f"
    text = f.script()
    assert text.startswith("# from minitvm.script import relax as R")
    assert_structural_equal(f, from_source(text))
    x = np.linspace(-1, 1, 8, dtype="float32").reshape(2, 4)
    np.testing.assert_allclose(evaluate(f, x), np.maximum(x, 0) + 1)


def test_variable_annotation_may_be_less_specific_than_inference():
    @R.function
    def f(x: R.Tensor((2, 3), "float32")):
        y: R.Tensor(ndim=2, dtype="float32") = R.exp(x)
        z: R.Object = R.exp(y)
        return z

    bindings = f.body.blocks[0].bindings
    assert bindings[0].var.struct_info.shape is None and bindings[0].var.struct_info.ndim == 2
    assert isinstance(bindings[1].var.struct_info, relax.ObjectStructInfo)
    assert_structural_equal(f, from_source(f.script()))


def test_an_annotation_without_a_dtype_keeps_the_inferred_dtype():
    @R.function
    def f(x: R.Tensor((6,), "float32"), y: R.Tensor((2, 3), "int32")):
        a: R.Tensor((1, 6, 1, 1)) = R.reshape(x, [1, 6, 1, 1])
        b: R.Tuple(R.Tensor((2, 3)), R.Tensor(ndim=1)) = (y, x)
        c: R.Tensor(ndim=2) = R.negative(y)
        return (a, b, c)

    a, b, c = (bd.var.struct_info for bd in f.body.blocks[0].bindings)
    assert a.dtype == "float32" and [int(d) for d in a.shape] == [1, 6, 1, 1]
    assert [fld.dtype for fld in b.fields] == ["int32", "float32"] and b.fields[1].shape is None
    assert c.dtype == "int32" and c.shape is None and c.ndim == 2  # the annotation's rank only
    assert_structural_equal(f, from_source(f.script()))


def test_large_constants_print_through_metadata_unless_show_meta():
    x = relax.Var("x", relax.TensorStructInfo((100,), "float32"))
    bb = relax.BlockBuilder()
    big = np.arange(100, dtype="float32")
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.add(x, relax.const(big))))
    mod = bb.get()
    assert 'R.add(x, metadata["relax.expr.Constant"][0])' in mod.script()
    assert_structural_equal(mod, from_source(mod.script()))
    assert_structural_equal(mod, from_source(mod.script(show_meta=True)))
    # a lone expression has no section to point into: it keeps a readable placeholder
    assert relax.const(big).script() == "R.const(<array of shape (100,) float32>)"


# --------------------------------------------------------------------------- the op table


def test_every_table_op_has_an_R_name():
    for name in OP_TABLE:
        if name in ("relax.call_tir", "relax.call_dps_packed"):
            continue
        parts = name.split(".")[1:]
        obj = R
        for part in parts:
            obj = getattr(obj, part)
        assert callable(obj), name
        namespaced = {
            f"{ns}.{n}"
            for ns in ("nn", "image", "grad", "random", "vision", "ccl", "memory")
            for n in getattr(R, ns).__all__
        }
        assert ".".join(parts) in {*R.__all__} | namespaced


def _v(name, shape, dtype="float32"):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


_X = _v("x", (2, 3, 4, 4))
_M = _v("m", (3, 4))
_SAMPLES = {
    "add": lambda o: o.add(_M, _M),
    "power": lambda o: o.power(_M, relax.const(2.0, "float32")),
    "sqrt": lambda o: o.sqrt(_M),
    "matmul": lambda o: o.matmul(_M, o.permute_dims(_M)),
    "nn.linear": lambda o: o.nn.linear(_M, _M, out_dtype="float32"),
    "nn.softmax": lambda o: o.nn.softmax(_M, axis=0),
    "nn.log_softmax": lambda o: o.nn.log_softmax(_M),
    "nn.gelu": lambda o: o.nn.gelu(_M),
    "nn.conv2d": lambda o: o.nn.conv2d(_X, _v("w", (5, 3, 3, 3)), strides=2, padding=1, dilation=1),
    "nn.max_pool2d": lambda o: o.nn.max_pool2d(_X, pool_size=(2, 2), strides=(2, 2)),
    "nn.avg_pool2d": lambda o: o.nn.avg_pool2d(
        _X, pool_size=2, padding=(1, 1), count_include_pad=True
    ),
    "nn.adaptive_avg_pool2d": lambda o: o.nn.adaptive_avg_pool2d(_X, output_size=(1, 1)),
    "nn.batch_norm": lambda o: o.nn.batch_norm(_X, *[_v(c, (3,)) for c in "gbmv"], epsilon=1e-3),
    "nn.layer_norm": lambda o: o.nn.layer_norm(_M, _v("g", (4,)), _v("b", (4,)), axes=[-1]),
    "mean": lambda o: o.mean(_X, axis=[2, 3]),
    "max": lambda o: o.max(_M),
    "reshape": lambda o: o.reshape(_M, (4, 3)),
    "flatten": lambda o: o.flatten(_M),
    "concat": lambda o: o.concat([_M, _M], axis=1),
    "split": lambda o: o.split(_M, 2, axis=1),
    "strided_slice": lambda o: o.strided_slice(_M, [1], [0], [4], [2]),
    "take": lambda o: o.take(_M, _v("i", (2,), "int32"), axis=1),
    "astype": lambda o: o.astype(_M, "float16"),
    "expand_dims": lambda o: o.expand_dims(_M, 0),
    "zeros": lambda o: o.zeros((2, 3), "int32"),
    "full": lambda o: o.full((2, 3), relax.const(1.5, "float32"), "float32"),
}


@pytest.mark.parametrize("name", sorted(_SAMPLES))
def test_table_op_call_prints_and_parses_back(name):
    call = _SAMPLES[name](relax.op)
    params = sorted({a for a in _walk_vars(call)}, key=lambda v: "xwmgbvi".index(v.name_hint[0]))
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        bb.emit_func_output(bb.emit(call))
    mod = bb.get()
    assert "R." + name + "(" in mod.script()
    _roundtrip(mod)


def _walk_vars(e):
    if isinstance(e, relax.Var):
        yield e
    for a in getattr(e, "args", ()) + getattr(e, "fields", ()):
        yield from _walk_vars(a)


# --------------------------------------------------------------------------- random programs

_UNARY = ["exp", "negative", "sigmoid", "tanh", "nn.relu", "abs"]
_BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


def _op(name):
    fn = relax.op
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn


@st.composite
def _programs(draw):
    sym = draw(st.booleans())
    n = tir.Var("n", "int64") if sym else draw(st.integers(1, 4))
    inner = draw(st.integers(1, 4))
    x = relax.Var("x", relax.TensorStructInfo((n, inner), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((inner,), "float32"))  # broadcasts over rows
    steps = draw(
        st.lists(st.tuples(st.sampled_from(_UNARY + _BINARY), st.integers(0, 99)), max_size=6)
    )
    dataflow = draw(st.booleans())
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        values = [x, y]

        def body():
            for name, pick in steps:
                a = values[pick % len(values)]
                if name in _BINARY:
                    b = values[(pick // 7) % len(values)]
                    values.append(bb.emit(_op(name)(a, b)))
                else:
                    values.append(bb.emit(_op(name)(a)))
            return values[-1]

        if dataflow:
            with bb.dataflow():
                out = bb.emit_output(body())
        else:
            out = body()
        bb.emit_func_output(out)
    return bb.get(), sym


@settings(max_examples=30, deadline=None)
@given(_programs())
def test_random_relax_programs_round_trip(program):
    mod, _ = program
    _roundtrip(mod)


# --------------------------------------------------------------------------- errors


def _error(src, match, line_text):
    """Parsing `src` raises ParseError matching `match`, located on the line containing
    `line_text`."""
    with pytest.raises(ParseError, match=match) as info:
        from_source(src)
    lines = src.splitlines()
    want = next(i for i, line in enumerate(lines, 1) if line_text in line)
    assert info.value.lineno == want, str(info.value)
    return info.value


_F = """
@R.function
def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((4, 5), "float32")):
{body}
"""


def _fn(*lines):
    return _F.format(body="\n".join("    " + line for line in lines))


def test_error_unknown_R_name():
    err = _error(_fn("y = R.frobnicate(x)", "return y"), r"unknown name 'R\.frobnicate'", "frob")
    assert "^" in str(err)
    _error(_fn("y = R.nn.frobnicate(x)", "return y"), r"unknown name 'R\.nn\.frobnicate'", "frob")


def test_error_wrong_arity():
    _error(_fn("y = R.add(x)", "return y"), r"wrong arguments to R\.add", "R.add")


def test_error_undefined_variable():
    _error(_fn("y = R.add(x, q)", "return y"), "undefined variable 'q'", "R.add")


def test_error_shape_inference_reraised_at_the_binding():
    _error(
        _fn("y = R.exp(x)", "z = R.matmul(y, w)", "return z"),
        r"relax\.matmul.*\(2, 3\).*\(4, 5\)|relax\.matmul",
        "R.matmul",
    )
    _error(_fn("y = R.add(x, w)", "return y"), "do not broadcast", "R.add")


def test_error_output_outside_dataflow_block():
    _error(_fn("y = R.exp(x)", "R.output(y)", "return y"), r"R\.output\(\.\.\.\) must be", "output")


def test_error_dataflow_var_used_after_its_block():
    src = _fn(
        "with R.dataflow():",
        "    lv = R.exp(x)",
        "    gv = R.exp(lv)",
        "    R.output(gv)",
        "return lv",
    )
    _error(src, "dataflow var 'lv' is used outside its dataflow block", "return lv")


def test_error_dataflow_block_must_end_with_output():
    src = _fn("with R.dataflow():", "    lv = R.exp(x)", "return x")
    _error(src, r"must end with R\.output", "lv = R.exp")
    src = _fn("with R.dataflow():", "    lv = R.exp(x)", "    R.output(q)", "return x")
    _error(src, "undefined variable 'q'|not a variable bound", "R.output(q)")


def test_error_annotation_mismatch_names_the_var():
    src = _fn('y: R.Tensor((3, 2), "float32") = R.exp(x)', "return y")
    _error(src, r"binding 'y': annotated struct info", "y: R.Tensor")
    src = _fn('y: R.Tensor((2, 3), "int32") = R.exp(x)', "return y")
    _error(src, "binding 'y'", "y: R.Tensor")


def test_error_missing_return_and_bad_call_tir_callee():
    _error(_fn("y = R.exp(x)"), "must end with `return", "def main")
    src = _fn('y = R.call_tir("f", (x,), out_sinfo=R.Tensor((2, 3), "float32"))', "return y")
    _error(src, r"R\.call_tir: the callee must be a PrimFunc", "R.call_tir")


def test_error_unknown_module_function():
    src = MLC_SRC.replace("cls.linear0", "cls.linear9")
    _error(src, "has no function 'linear9'", "cls.linear9")


def test_error_param_without_annotation():
    _error("@R.function\ndef main(x):\n    return x\n", "needs a struct info", "def main")


def test_tir_only_modules_print_as_before():
    @I.ir_module
    class Only:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                A[i] = T.float32(1)

    text = Only.script()
    assert text.startswith(
        "# from minitvm.script import ir as I\n# from minitvm.script import tir as T"
    )
    assert_structural_equal(Only, from_source(text))


def test_calls_between_relax_functions_round_trip():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("double", [x]):
        bb.emit_func_output(bb.emit(relax.op.add(x, x)))
    gv = bb.get().get_global_var("double")
    y = relax.Var("y", relax.TensorStructInfo((2,), "float32"))
    with bb.function("main", [y]):
        z = bb.emit(relax.Call(gv, (y,)))
        bb.emit_func_output(bb.emit(relax.op.multiply(z, y)))
    mod = bb.get()
    text = mod.script()
    assert 'gv1: R.Tensor((2,), dtype="float32") = cls.double(y)' in text
    back = _roundtrip(mod)
    np.testing.assert_allclose(evaluate(back, np.array([1, 2], "float32")), [2, 8])
    # an unannotated call takes the callee's return annotation (as in TVM) ...
    src = text.replace('gv1: R.Tensor((2,), dtype="float32") = cls.double', "gv1 = cls.double")
    assert_structural_equal(from_source(src), back)
    # ... and is refused when the callee has none
    bare = src.replace(
        'def double(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):',
        'def double(x: R.Tensor((2,), dtype="float32")):',
    )
    assert bare != src
    with pytest.raises(ParseError, match="annotate the result of calling 'double'"):
        from_source(bare)


def test_parsed_high_level_programs_build_and_run_on_the_vm():
    build, VirtualMachine = _vm()
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    for mod, args in ((PassTutorial, (x, w)), (HighLevel, (x[:, :2, :6, :6].copy(), w[:3, :2]))):
        vm = VirtualMachine(build(mod, target="llvm"), tvm.cpu())
        np.testing.assert_allclose(
            vm["main"](*args).numpy(), evaluate(mod, *args), rtol=1e-4, atol=1e-4
        )


def test_image_namespace_round_trips():
    """`R.image.resize2d` prints and parses back (the importers emit it for interpolate/Resize)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, 3, 8, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.image.resize2d(x, (16, 16), method="nearest_neighbor"))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    mod = bb.get()
    text = mod.script()
    assert "R.image.resize2d" in text
    tvm.ir.assert_structural_equal(mod, tvm.script.from_source(text))


def test_nested_calls_are_bound_first_so_they_fuse():
    """`w = R.add(R.exp(y), lv)` parses to `lv1 = R.exp(y); w = R.add(lv1, lv)` (TVM's normal
    form; the fresh name avoids the user's `lv`), so FuseOps fuses the two into one kernel."""

    @R.function
    def f(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
        with R.dataflow():
            lv = R.multiply(x, x)
            w = R.add(R.exp(y), lv)
            R.output(w)
        return w

    bindings = f.body.blocks[0].bindings
    assert [b.var.name_hint for b in bindings] == ["lv", "lv1", "w"]
    assert bindings[2].value.args[0].same_as(bindings[1].var)
    assert_structural_equal(f, from_source(f.script()))
    mod = tvm.IRModule({"main": f})
    seq = tvm.transform.Sequential(
        [
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
        ]
    )
    fused = seq(mod)
    kernels = [gv for gv, fn in fused.functions.items() if isinstance(fn, tvm.tir.PrimFunc)]
    assert len(kernels) == 1, [gv.name_hint for gv in kernels]
    x = np.linspace(-1, 1, 4, dtype="float32")
    y = np.linspace(0, 2, 4, dtype="float32")
    np.testing.assert_allclose(evaluate(f, x, y), np.exp(y) + x * x, rtol=1e-6)


def test_a_name_bound_twice_leaves_the_dataflow_block_from_its_last_binding():
    # TVM's rule: R.output(gv) makes only gv's last binding a Var; the earlier ones, and every
    # binding of lv, stay DataflowVars (the value is unchanged: checked against numpy)
    import numpy as np

    import minitvm as tvm
    from minitvm import relax

    src = """
@R.function
def f(x: R.Tensor((2,), "float32")):
    with R.dataflow():
        lv = R.add(x, x)
        lv = R.multiply(lv, lv)
        gv = lv
        gv = R.add(gv, x)
        R.output(gv)
    return gv
"""
    f = tvm.script.from_source(src)
    kinds = [type(b.var).__name__ for b in f.body.blocks[0].bindings]
    assert kinds == ["DataflowVar", "DataflowVar", "DataflowVar", "Var"]
    ex = relax.build(tvm.IRModule({"main": f}), "llvm")
    x = np.array([1.0, 2.0], "float32")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
    np.testing.assert_allclose(out, (x + x) ** 2 + x)
