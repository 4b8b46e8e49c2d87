"""nn.KVCache and the effects of export_tvm, and the VM builtins behind them (vm.builtin.*).

The oracles: the IR TVM's `test_frontend_nn_modules.py::test_kv_cache` expects (an
`_initialize_effect` function, effects as inputs after the spec's arguments, `(outputs,
(effects...))` returned), TVM's runtime semantics of the legacy attention KV cache, and numpy
(a cache's view is the concatenation of what was appended).
"""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, DTypeError, MiniTVMError, ShapeError
from minitvm.ir import assert_structural_equal
from minitvm.relax.expr import Call, ExternFunc, PrimValue, ShapeExpr, Tuple, Var
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import modules, spec
from minitvm.relax.struct_info import ObjectStructInfo, TensorStructInfo, TupleStructInfo
from minitvm.tir.expr import IntImm

CREATE = "vm.builtin.attention_kv_cache_create"
APPEND = "vm.builtin.attention_kv_cache_append"
VIEW = "vm.builtin.attention_kv_cache_view"


def _builtin(name):
    return tvm.get_global_func(name)


def _new_cache(capacity, unit, dtype="float32"):
    zeros = tvm.nd.array(np.zeros((capacity, *unit), dtype))
    return _builtin(CREATE)(zeros, (capacity, *unit), 0)


class _AppendThenView(modules.Module):
    """TVM's test_kv_cache module: append x, view 4 elements."""

    def __init__(self) -> None:
        self.cache = modules.KVCache(8, [2, 4])

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        self.cache.append(x)
        return self.cache.view(4)


def _call(name, args, sinfo):
    return Call(ExternFunc(name), tuple(args), sinfo_args=(sinfo,))


# ----------------------------------------------------------------------------- export


def test_export_matches_tvms_kv_cache_ir():
    mod, params = _AppendThenView().export_tvm(
        {"forward": {"x": spec.Tensor((2, 4), "float32")}}, debug=True
    )
    assert params == []
    obj = ObjectStructInfo()
    shape = ShapeExpr((8, 2, 4))
    bb = relax.BlockBuilder()
    with bb.function("_initialize_effect", params=[]):
        with bb.dataflow():
            io = bb.emit(relax.op.null_value(), "_io")
            init = bb.emit(relax.op.zeros(shape, "float32"))
            fill = PrimValue(IntImm("int64", 0))
            cache = bb.emit(_call(CREATE, (init, shape, fill), obj), "cache")
            out = bb.emit_output(bb.emit(Tuple((io, cache))))  # lv, then gv = lv (TVM's form)
        bb.emit_func_output(out)
    x, io_in, cache_in = (
        Var("x", TensorStructInfo((2, 4), "float32")),
        Var("_io", obj),
        Var("c", obj),
    )
    with bb.function("forward", attrs={"num_input": 3}):
        with bb.dataflow():
            appended = bb.emit(_call(APPEND, (cache_in, x), obj))
            view_shape = ShapeExpr((4, 2, 4))
            sinfo = TensorStructInfo(view_shape, "float32")
            view = bb.emit(_call(VIEW, (appended, view_shape), sinfo))
            out = bb.emit_output(Tuple((view, Tuple((io_in, appended)))))
        bb.emit_func_output(out, params=[x, io_in, cache_in])
    expected = bb.get()
    assert_structural_equal(mod["_initialize_effect"], expected["_initialize_effect"])
    assert_structural_equal(mod["forward"], expected["forward"])
    ret = TupleStructInfo((TensorStructInfo((4, 2, 4), "float32"), TupleStructInfo((obj, obj))))
    assert_structural_equal(mod["forward"].ret_struct_info, ret)


def test_effects_follow_the_arguments_and_precede_the_parameters():
    class Layer(nn.Module):
        def __init__(self):
            self.proj = nn.Linear(4, 4, bias=False)
            self.k_cache = nn.KVCache(4, [4])

        def forward(self, x: nn.Tensor, total: int):
            self.k_cache.append(self.proj(x))
            return self.k_cache.view(total)

    class Model(nn.Module):
        def __init__(self):
            self.layers = nn.ModuleList([Layer(), Layer()])

        def forward(self, x: nn.Tensor, total: int):
            return [layer(x, total) for layer in self.layers]

    s = {"forward": {"x": spec.Tensor(("n", 4), "float32"), "total": int}}
    mod, params = Model().export_tvm(s)
    forward = mod["forward"]
    names = [p.name_hint for p in forward.params]
    assert names == ["x", "total", "layers.0.k_cache", "layers.1.k_cache"] + [n for n, _ in params]
    assert forward.attrs["num_input"] == 4
    init = mod["_initialize_effect"]
    assert init.params == () and len(init.ret_struct_info.fields) == 2  # no IO effect
    outputs, effects = forward.ret_struct_info.fields
    assert len(outputs.fields) == 2
    assert_structural_equal(effects, TupleStructInfo((ObjectStructInfo(),) * 2))
    total = forward.params[1].struct_info.values[0]
    assert outputs.fields[0].shape[0] is total and outputs.fields[0].shape[1].value == 4


def test_packed_effects_are_one_tuple_input():
    class M(nn.Module):
        def __init__(self):
            self.k, self.v = nn.KVCache(2, [3]), nn.KVCache(2, [3])

        def forward(self, x: nn.Tensor):
            self.k.append(x)
            self.v.append(x)
            return self.k.view(1)

    s = {"forward": {"x": spec.Tensor((3,), "float32"), "$": {"effect_mode": "packed"}}}
    mod, _ = M().export_tvm(s)
    forward = mod["forward"]
    assert [p.name_hint for p in forward.params] == ["x", "packed_effects"]
    assert_structural_equal(
        forward.params[1].struct_info, TupleStructInfo((ObjectStructInfo(),) * 2)
    )
    assert forward.attrs["num_input"] == 2


def test_debug_threads_the_io_effect_through_a_module_without_state():
    mod, _ = nn.Linear(4, 2).export_tvm(
        {"forward": {"x": spec.Tensor((1, 4), "float32")}}, debug=True
    )
    forward = mod["forward"]
    assert [p.name_hint for p in forward.params] == ["x", "_io", "weight", "bias"]
    assert forward.attrs["num_input"] == 2
    assert_structural_equal(
        forward.ret_struct_info.fields[1], TupleStructInfo((ObjectStructInfo(),))
    )
    assert [p.name_hint for p in nn.Linear(4, 2).export_tvm(
        {"forward": {"x": spec.Tensor((1, 4), "float32")}}
    )[0]["forward"].params] == ["x", "weight", "bias"]  # fmt: skip


# ----------------------------------------------------------------------------- export errors


def test_append_of_another_dtype_is_refused_at_export():
    class M(nn.Module):
        def __init__(self):
            self.cache = nn.KVCache(4, [2], "float16")

        def forward(self, x):
            self.cache.append(x)
            return x

    with pytest.raises(DTypeError, match="cache holds float16.*float32"):
        M().export_tvm({"forward": {"x": spec.Tensor((2,), "float32")}})


@pytest.mark.parametrize("shape", [(3,), (1, 3), (1, 2, 2), (2, 1, 1, 2)])
def test_append_of_another_unit_shape_is_refused_at_export(shape):
    class M(nn.Module):
        def __init__(self):
            self.cache = nn.KVCache(4, [1, 2])

        def forward(self, x):
            self.cache.append(x)
            return x

    with pytest.raises(ShapeError, match=r"elements of shape \[1, 2\]"):
        M().export_tvm({"forward": {"x": spec.Tensor(shape, "float32")}})


def test_cache_used_outside_an_export_says_where_it_works():
    cache = nn.KVCache(4, [2])
    with pytest.raises(MiniTVMError, match="inside forward"):
        cache.view(1)


@pytest.mark.parametrize("args", [(-1, [2]), (4, [2, -3]), (4, [2.5]), (True, [2])], ids=str)
def test_bad_cache_sizes_are_refused(args):
    with pytest.raises(ArgumentError, match="non-negative ints"):
        nn.KVCache(*args)


def test_effect_mode_none_with_a_used_cache_is_refused():
    s = {"forward": {"x": spec.Tensor((2, 4), "float32"), "$": {"effect_mode": "none"}}}
    with pytest.raises(MiniTVMError, match="effect_mode 'none'.*'plain' or 'packed'"):
        _AppendThenView().export_tvm(s)


def test_an_effect_without_its_methods_is_refused():
    class Half(nn.Effect):
        def emit_init(self, name_hint, bb):
            return []

    class M(nn.Module):
        def __init__(self):
            self.state = Half()

        def forward(self, x):
            return x

    with pytest.raises(MiniTVMError, match="'state' \\(Half\\) does not define create"):
        M().export_tvm({"forward": {"x": spec.Tensor((1,), "float32")}})


# ----------------------------------------------------------------------------- builtins


def test_builtins_are_registered_under_tvms_names():
    for name in (CREATE, APPEND, VIEW, "vm.builtin.reshape", "vm.builtin.null_value"):
        assert name in tvm.runtime.list_global_func_names()
    assert _builtin("vm.builtin.null_value")() is None


def test_appends_then_view_equal_numpy_concatenation():
    rng = np.random.default_rng(0)
    cache = _new_cache(2, (2, 3))
    appended = []
    for n in (1, 3, 0, 2, 5):  # grows past its room twice
        rows = rng.standard_normal((n, 2, 3)).astype("float32")
        appended.append(rows)
        assert _builtin(APPEND)(cache, tvm.nd.array(rows)) is cache
        total = sum(len(a) for a in appended)
        view = _builtin(VIEW)(cache, (total, 2, 3))
        assert isinstance(view, tvm.nd.NDArray)
        np.testing.assert_array_equal(view.numpy(), np.concatenate(appended))
    np.testing.assert_array_equal(_builtin(VIEW)(cache).numpy(), np.concatenate(appended))


def test_one_element_of_unit_shape_appends_one_row():
    cache = _new_cache(4, (3,), "int32")
    for i in range(3):
        _builtin(APPEND)(cache, tvm.nd.array(np.full((3,), i, "int32")))
    np.testing.assert_array_equal(
        _builtin(VIEW)(cache, (3, 3)).numpy(), np.repeat(np.arange(3), 3).reshape(3, 3)
    )


def test_a_view_is_unchanged_by_later_appends():
    cache = _new_cache(1, (2,))
    _builtin(APPEND)(cache, tvm.nd.array(np.array([1, 2], "float32")))
    first = _builtin(VIEW)(cache, (1, 2))
    for _ in range(4):  # regrows the buffer
        _builtin(APPEND)(cache, tvm.nd.array(np.array([9, 9], "float32")))
    np.testing.assert_array_equal(first.numpy(), [[1, 2]])


def test_create_keeps_init_data_when_fill_count_is_minus_one():
    init = np.arange(6, dtype="float32").reshape(3, 2)
    cache = _builtin(CREATE)(tvm.nd.array(init), (4, 2), -1)
    np.testing.assert_array_equal(_builtin(VIEW)(cache, (3, 2)).numpy(), init)
    cache = _builtin(CREATE)(tvm.nd.array(init), (4, 2), 1)
    np.testing.assert_array_equal(_builtin(VIEW)(cache, (1, 2)).numpy(), init[:1])


def test_popn_and_clear_forget_elements():
    a, b = _new_cache(4, (1,)), _new_cache(4, (1,))
    for cache in (a, b):
        _builtin(APPEND)(cache, tvm.nd.array(np.arange(3, dtype="float32").reshape(3, 1)))
    _builtin("vm.builtin.attention_kv_cache_array_popn")([a, b], 2)
    np.testing.assert_array_equal(_builtin(VIEW)(a, (1, 1)).numpy(), [[0]])
    with pytest.raises(ArgumentError, match="cannot pop 2 elements from a cache holding 1"):
        _builtin("vm.builtin.attention_kv_cache_array_popn")([a], 2)
    _builtin("vm.builtin.attention_kv_cache_array_clear")([a, b])
    assert _builtin(VIEW)(b).shape == (0, 1)


def test_reshape_views_the_same_elements():
    x = tvm.nd.array(np.arange(6, dtype="int64"))
    np.testing.assert_array_equal(
        _builtin("vm.builtin.reshape")(x, (2, 3)).numpy(), np.arange(6).reshape(2, 3)
    )
    with pytest.raises(ShapeError, match=r"shape \(6,\) \(6 elements\) as shape \(4,\)"):
        _builtin("vm.builtin.reshape")(x, (4,))


def test_view_longer_than_appended_is_refused():
    cache = _new_cache(8, (2,))
    _builtin(APPEND)(cache, tvm.nd.array(np.zeros((3, 2), "float32")))
    with pytest.raises(ShapeError, match="view of 5 elements, but the cache holds 3"):
        _builtin(VIEW)(cache, (5, 2))
    with pytest.raises(ShapeError, match="view of 2 elements, but the cache holds 3"):
        _builtin(VIEW)(cache, (2, 2))
    with pytest.raises(ShapeError, match=r"view's shape must be \(3, 2\)"):
        _builtin(VIEW)(cache, (3, 4))


@pytest.mark.parametrize("shape", [(4,), (1, 4), (2, 2, 1), ()])
def test_append_of_another_unit_shape_is_refused(shape):
    cache = _new_cache(8, (2,))
    with pytest.raises(ShapeError, match=r"stores elements of shape \(2,\)"):
        _builtin(APPEND)(cache, tvm.nd.array(np.zeros(shape, "float32")))
    assert cache.fill_count == 0


def test_append_of_another_dtype_is_refused():
    cache = _new_cache(8, (2,))
    with pytest.raises(DTypeError, match="dtype float64, but the cache stores float32"):
        _builtin(APPEND)(cache, tvm.nd.array(np.zeros((1, 2), "float64")))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: _builtin(VIEW)(np.zeros(2), (1,)), ArgumentError, "must be an attention KV"),
        (lambda: _builtin(APPEND)(None, np.zeros(2)), ArgumentError, "must be an attention KV"),
        (lambda: _new_cache(2, (3,)).append([1, 2, 3]), ArgumentError, "expected a tensor"),
        (
            lambda: _builtin(CREATE)(np.zeros((2, 3), "float32"), (2, 4), 0),
            ShapeError,
            "same unit shape",
        ),
        (
            lambda: _builtin(CREATE)(np.zeros((2, 3), "float32"), (2, 3), 5),
            ArgumentError,
            "init_fill_count is 5",
        ),
        (
            lambda: _builtin(CREATE)(np.zeros((2, 3), "float32"), (2, -3), 0),
            ShapeError,
            "non-negative ints",
        ),
    ],
    ids=["view-not-cache", "append-not-cache", "list-value", "unit", "fill", "negative"],
)
def test_builtin_misuse_names_the_builtin(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------- on the VM


class _TwoCaches(nn.Module):
    def __init__(self):
        self.k_cache = nn.KVCache(2, [2, 4])
        self.v_cache = nn.KVCache(2, [2, 4])

    def forward(self, k: nn.Tensor, v: nn.Tensor, total: int):
        self.k_cache.append(k)
        self.v_cache.append(v)
        return self.k_cache.view(total) + self.v_cache.view(total) * 2.0


@pytest.mark.parametrize("debug", [False, True])
def test_decode_steps_on_the_vm_match_numpy(debug):
    s = {
        "forward": {
            "k": spec.Tensor(("n", 2, 4), "float32"),
            "v": spec.Tensor(("n", 2, 4), "float32"),
            "total": int,
        }
    }
    mod, _ = _TwoCaches().export_tvm(s, debug=debug)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    effects = vm["_initialize_effect"]()
    rng = np.random.default_rng(1)
    keys, values = [], []
    for n in (3, 1, 1, 2):  # a prompt, then decode steps; the caches grow twice
        keys.append(rng.standard_normal((n, 2, 4)).astype("float32"))
        values.append(rng.standard_normal((n, 2, 4)).astype("float32"))
        total = sum(len(k) for k in keys)
        out, effects = vm["forward"](keys[-1], values[-1], (total,), *effects)
        expect = np.concatenate(keys) + 2 * np.concatenate(values)
        np.testing.assert_allclose(out.numpy(), expect, rtol=1e-6)
    with pytest.raises(ShapeError, match="view of 7 elements, but the cache holds 9"):
        vm["forward"](keys[-1], values[-1], (total,), *effects)  # appends 2 more: 9 stored


def test_jit_keeps_the_effects_between_calls():
    torch = pytest.importorskip("torch")

    class Running(nn.Module):
        def __init__(self):
            self.cache = nn.KVCache(1, [3])

        def forward(self, x: nn.Tensor, total: int):
            self.cache.append(x)
            return nn.op.sum(self.cache.view(total), axis=0)

    jm = Running().jit({"forward": {"x": spec.Tensor((1, 3), "float32"), "total": int}})
    rows = torch.arange(12, dtype=torch.float32).reshape(4, 1, 3)
    for i in range(4):
        out = jm["forward"](rows[i], i + 1)
        np.testing.assert_array_equal(out.numpy(), rows[: i + 1, 0].sum(0).numpy())


def test_common_subexpression_elimination_keeps_two_caches_apart():
    s = {
        "forward": {
            "k": spec.Tensor(("n", 2, 4), "float32"),
            "v": spec.Tensor(("n", 2, 4), "float32"),
            "total": int,
        }
    }
    mod, _ = _TwoCaches().export_tvm(s)
    init = relax.transform.EliminateCommonSubexpr()(mod)["_initialize_effect"]
    k_cache, v_cache = init.body.blocks[0].bindings[-2].value.fields  # lv = (k, v); gv = lv
    assert k_cache is not v_cache


def test_an_exported_executable_with_builtin_calls_loads_and_runs(tmp_path):
    """The VM's CallBuiltin instruction passes the loader's program checks: the cache module
    exported and loaded back runs the same steps."""
    s = {"forward": {"k": spec.Tensor(("n", 2, 4), "float32"),
                     "v": spec.Tensor(("n", 2, 4), "float32"), "total": int}}  # fmt: skip
    mod, _ = _TwoCaches().export_tvm(s)
    path = str(tmp_path / "kv.so")
    relax.build(mod, "llvm").export_library(path)
    vm = relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
    effects = vm["_initialize_effect"]()
    k = np.ones((3, 2, 4), "float32")
    out, effects = vm["forward"](k, 2 * k, (3,), *effects)
    np.testing.assert_allclose(out.numpy(), 5 * k)
