"""BindTarget, AnnotateEntryFunc and Filter (TVM's primfunc_utils): attributes set by TVM's
rules, and a bound function still builds and computes what numpy does."""

import numpy as np

import minitvm as tvm
from minitvm import IRModule, tir
from minitvm.target import Target
from minitvm.tir.transform import AnnotateEntryFunc, BindTarget, Filter


def _add_one(name=None):
    A = tir.decl_buffer((8,), "float32", "A")
    B = tir.decl_buffer((8,), "float32", "B")
    i = tir.Var("i", "int32")
    body = tir.For(
        i, 0, 8, tir.ForKind.SERIAL, tir.BufferStore(B, tir.BufferLoad(A, [i]) + 1.0, [i])
    )
    func = tir.PrimFunc([A, B], body)
    return func.with_attr("global_symbol", name) if name else func


def test_bind_target_host_only_on_exposed_functions():
    target = Target("cuda", host="llvm")
    mod = IRModule({"pub": _add_one("pub"), "internal": _add_one()})
    out = BindTarget(target)(mod)
    assert out["pub"].attrs["target"] == target
    assert out["pub"].attrs["target"].host == Target("llvm")
    internal = out["internal"].attrs["target"]
    assert internal == Target("cuda") and internal._host is None


def test_bind_target_keeps_existing_target_and_adds_host():
    own = _add_one("f").with_attr("target", Target("nvptx"))
    out = BindTarget(Target("cuda", host="llvm -opt-level=0"))(IRModule({"f": own}))
    assert out["f"].attrs["target"] == Target("nvptx", host="llvm -opt-level=0")
    untouched = BindTarget(Target("cuda"))(IRModule({"f": own}))["f"]
    assert untouched.attrs["target"] == Target("nvptx")


def test_bind_target_host_function_gets_the_host():
    func = _add_one("f").with_attr("tir.is_host_func", True)
    out = BindTarget(Target("cuda", host="llvm"))(IRModule({"f": func}))["f"]
    assert out.attrs["target"] == Target("llvm", host="llvm")
    assert "tir.is_host_func" not in out.attrs


def test_bound_function_builds_and_matches_numpy():
    mod = BindTarget(Target("llvm"))(IRModule({"main": _add_one("main")}))
    assert mod["main"].attrs["target"] == Target("llvm")
    lib = tvm.build(mod, target="llvm")
    a = np.random.default_rng(0).standard_normal(8).astype("float32")
    b = np.zeros(8, "float32")
    ta, tb = tvm.nd.array(a), tvm.nd.array(b)
    lib["main"](ta, tb)
    np.testing.assert_allclose(tb.numpy(), a + 1.0, rtol=0, atol=0)


def test_annotate_entry_func_single_or_only_exposed():
    one = AnnotateEntryFunc()(IRModule({"f": _add_one()}))
    assert one["f"].attrs["tir.is_entry_func"]
    mixed = AnnotateEntryFunc()(IRModule({"pub": _add_one("pub"), "g": _add_one()}))
    assert mixed["pub"].attrs["tir.is_entry_func"]
    assert "tir.is_entry_func" not in mixed["g"].attrs
    mod = IRModule({"a": _add_one("a"), "b": _add_one("b")})
    assert AnnotateEntryFunc()(mod) is mod  # no entry can be inferred


def test_filter_drops_functions_failing_the_condition():
    mod = IRModule({"a": _add_one("a").with_attr("temp", 1), "b": _add_one("b")})
    kept = Filter(lambda f: "temp" in f.attrs)(mod)
    assert [gv.name_hint for gv in kept.get_global_vars()] == ["a"]
    assert len(Filter(lambda f: False)(mod).functions) == 0
    assert len(mod.functions) == 2  # the input module is left alone


def test_bound_target_prints_as_t_target_and_parses_back():
    from minitvm.script import from_source

    func = BindTarget(Target("cuda", host="llvm"))(IRModule({"f": _add_one("f")}))["f"]
    text = func.script()
    assert 'T.target("cuda", host="llvm")' in text
    assert from_source(text).attrs["target"] == Target("cuda", host="llvm")
