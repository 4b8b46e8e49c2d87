"""tvm.tir.transform.prim_func_pass in TVM's form (decorator with opt_level; fn(func, mod, ctx);
a class with transform_function): TVM's GPU tests write their checks as such passes. It was
this package's internal factory, so `prim_func_pass(fn, opt_level=0)` was a TypeError."""

import pytest

import minitvm as tvm
from minitvm.error import ArgumentError
from minitvm.script import tir as T


@T.prim_func
def _copy(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = A[i]


def test_function_form_sees_every_prim_func_and_the_context():
    seen = []

    @tvm.tir.transform.prim_func_pass(opt_level=0)
    def record(func, mod, ctx):
        seen.append((func, mod, ctx))
        return func

    mod = tvm.IRModule({"a": _copy, "b": _copy.with_attr("global_symbol", "b")})
    with tvm.transform.PassContext(opt_level=3) as ctx:
        out = record(mod)
    assert isinstance(record, tvm.tir.transform.PrimFuncPass)
    assert len(seen) == 2 and all(m is mod and c is ctx for _, m, c in seen)
    assert out["a"] is _copy, "an unchanged function stays the same object"
    assert record.info.opt_level == 0 and record.info.name == "record"


def test_called_form_rewrites_and_none_drops_the_function():
    def rename(func, mod, ctx):
        return None if func.attrs.get("global_symbol") == "b" else func.with_attr("x", 1)

    p = tvm.tir.transform.prim_func_pass(rename, opt_level=1, name="Rename")
    mod = tvm.IRModule({"a": _copy, "b": _copy.with_attr("global_symbol", "b")})
    out = p(mod)
    assert [gv.name_hint for gv in out.get_global_vars()] == ["a"]
    assert out["a"].attrs["x"] == 1 and p.info.name == "Rename"


def test_class_form_and_missing_opt_level():
    @tvm.tir.transform.prim_func_pass(opt_level=0)
    class Tag:
        def __init__(self, value):
            self.value = value

        def transform_function(self, func, mod, ctx):
            return func.with_attr("tag", self.value)

    out = Tag(7)(tvm.IRModule({"main": _copy}))
    assert out["main"].attrs["tag"] == 7
    with pytest.raises(ArgumentError, match="opt_level is required"):
        tvm.tir.transform.prim_func_pass(lambda f, m, c: f)
