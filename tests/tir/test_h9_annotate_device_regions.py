"""AnnotateDeviceRegions: device regions of a function whose target has a host are wrapped in
a "target" attr holding the target without its host; the result computes the same."""

import numpy as np
import pytest

from minitvm import IRModule, tir
from minitvm.error import BuildError
from minitvm.target import Target
from minitvm.testing import run_prim_func
from minitvm.tir.transform import AnnotateDeviceRegions


def _kernel(target, key="thread_extent"):
    A = tir.decl_buffer((16,), "float32", "A")
    tx = tir.Var("threadIdx_x", "int32")
    store = tir.BufferStore(A, tir.BufferLoad(A, [tx]) * 2.0, [tx])
    if key == "thread_extent":
        node = tir.IterVar(tir.Range(0, 16), tx, tir.IterVar.ThreadIndex, "threadIdx.x")
        body = tir.AttrStmt(node, key, 16, store)
    else:
        body = tir.AttrStmt(0, key, 0, tir.For(tx, 0, 16, tir.ForKind.SERIAL, store))
    body = tir.AttrStmt(0, "pragma_note", 1, body)  # a host-side attr stays outside
    return tir.PrimFunc([A], body).with_attr("target", target)


@pytest.mark.parametrize("key", ["thread_extent", "device_scope"])
def test_device_region_wrapped_in_device_target(key):
    before = _kernel(Target("cuda", host="llvm"), key)
    after = AnnotateDeviceRegions()(IRModule({"main": before}))["main"]
    note = after.body
    assert note.attr_key == "pragma_note"
    wrap = note.body
    assert wrap.attr_key == "target" and wrap.node == Target("cuda") and wrap.node._host is None
    assert wrap.body is before.body.body  # the region itself is untouched
    again = AnnotateDeviceRegions()(IRModule({"main": after}))["main"]
    assert again.body is after.body  # an existing "target" attr is kept, not wrapped twice
    a = np.random.default_rng(0).standard_normal(16).astype("float32")
    sym = {"threadIdx_x": 5} if key == "thread_extent" else {}
    want = run_prim_func(before, a.copy(), **sym)[0]
    got = run_prim_func(after, a.copy(), **sym)[0]
    np.testing.assert_array_equal(got, want)
    changed = np.arange(16) == 5 if key == "thread_extent" else np.ones(16, bool)
    np.testing.assert_array_equal(want, np.where(changed, a * 2.0, a))


def test_target_without_host_is_left_alone_and_missing_target_is_an_error():
    func = _kernel(Target("cuda"))
    assert AnnotateDeviceRegions()(IRModule({"main": func}))["main"] is func
    with pytest.raises(BuildError, match="no 'target' attribute; run .*BindTarget"):
        AnnotateDeviceRegions()(IRModule({"main": func.without_attr("target")}))
