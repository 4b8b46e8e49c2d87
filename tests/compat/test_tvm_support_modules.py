"""The supporting modules TVM's unit tests and tutorials import: tvm.testing's pytest helpers,
tvm.topi.testing, tvm.driver.build_module, tvm.tir.stmt_functor, tvm.ir.save_json/load_json,
tvm._ffi, tvm.instrument and tvm.contrib.cc."""

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm as tvm
import minitvm._ffi
import minitvm.instrument
import minitvm.topi.testing
from minitvm import te, tir
from minitvm.contrib import cc, utils
from minitvm.driver.build_module import schedule_to_module
from minitvm.error import ArgumentError, BuildError, TVMError
from minitvm.script import tir as T
from minitvm.tir import stmt_functor

ROOT = pathlib.Path(minitvm.__file__).resolve().parents[1]


# --- tvm.testing: pytest helpers, run in a child pytest on a small test file -----------------

_HELPERS_FILE = """
import os
import pytest
import minitvm as tvm
from minitvm.script import tir as T

size = tvm.testing.parameter(1, 2, 3)
shape = tvm.testing.parameter(by_dict={"small": (2,), "big": (8, 8)})
count, word = tvm.testing.parameters((1, "one"), (2, "two"))


@tvm.testing.fixture(cache_return_value=True)
def expensive(size):
    with open(os.environ["CALLS_FILE"], "a") as f:
        f.write(f"{size}\\n")
    return size * 10


def test_size(size):
    assert size in (1, 2, 3)


def test_shape(shape):
    assert shape in ((2,), (8, 8))


def test_correlated(count, word):
    assert (count, word) in ((1, "one"), (2, "two"))


def test_cached_first(expensive, size):
    assert expensive == size * 10


def test_cached_second(expensive, size):
    assert expensive == size * 10


@tvm.testing.parametrize_targets("llvm", "cuda")
def test_targets(target, dev):
    assert target == "llvm" and dev == tvm.cpu(0)


def test_auto_target(target, dev):
    assert target == "llvm" and dev == tvm.cpu(0)


class TestOwnTarget:
    target = tvm.testing.parameter(by_dict={"own": "llvm -opt-level=1"})

    def test_own_target_parameter_wins(self, target, dev):
        assert target == "llvm -opt-level=1" and dev == tvm.cpu(0)


@tvm.testing.requires_cuda
def test_needs_cuda():
    raise AssertionError("must be skipped")


@tvm.testing.requires_cuda_compute_version(8)
def test_needs_sm80():
    raise AssertionError("must be skipped")


@tvm.testing.requires_llvm
def test_needs_llvm():
    pass


@tvm.testing.uses_gpu
def test_uses_gpu_runs():
    pass


def _fold_if(mod):
    return tvm.tir.transform.Simplify()(mod)


class TestFoldsIf(tvm.testing.CompareBeforeAfter):
    transform = tvm.tir.transform.Simplify()

    def before(A: T.Buffer((1,), "int32")):
        if T.int32(1) < T.int32(2):
            A[0] = 42
        else:
            A[0] = 5

    def expected(A: T.Buffer((1,), "int32")):
        A[0] = 42


class TestWrongExpectedFails(tvm.testing.CompareBeforeAfter):
    transform = tvm.tir.transform.Simplify()

    def before(A: T.Buffer((1,), "int32")):
        A[0] = 1

    def expected(A: T.Buffer((1,), "int32")):
        A[0] = 2


class TestExpectedError(tvm.testing.CompareBeforeAfter):
    @pytest.fixture
    def transform(self):
        def raise_schedule_error(mod):
            tvm.tir.Schedule(mod).get_block("no_such_block")
            return mod

        return raise_schedule_error

    def before(A: T.Buffer((1,), "int32")):
        A[0] = 1

    expected = tvm.tir.ScheduleError


class TestMissingErrorFails(tvm.testing.CompareBeforeAfter):
    transform = tvm.tir.transform.Simplify()

    def before(A: T.Buffer((1,), "int32")):
        A[0] = 1

    expected = ValueError
"""


@pytest.fixture(scope="module")
def helper_run(tmp_path_factory):
    """Outcome per test id of the helpers file, run by a child pytest and read from its JUnit XML
    report (machine-readable: warnings and summary lines of newer pytest versions cannot break
    it), with the child's text output kept for the failure messages."""
    folder = tmp_path_factory.mktemp("helpers")
    (folder / "test_helpers.py").write_text(_HELPERS_FILE)
    calls = folder / "calls.txt"
    report = folder / "report.xml"
    env = dict(os.environ, PYTHONPATH=str(ROOT), CALLS_FILE=str(calls))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:xdist", "-rs",
         f"--junitxml={report}", "-o", "junit_family=xunit2", "test_helpers.py"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    log = proc.stdout + proc.stderr
    assert report.exists(), log
    outcomes = _junit_outcomes(report)
    cached = calls.read_text().split() if calls.exists() else []
    return outcomes, cached, log


def _junit_outcomes(report):
    """{'Class::test[id]': 'PASSED' | 'FAILED' | 'SKIPPED' | 'ERROR'} from a JUnit XML file."""
    import xml.etree.ElementTree as ElementTree

    outcomes = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        owner = case.get("classname", "").rpartition(".")[2]
        name = case.get("name")
        test_id = name if owner == "test_helpers" else f"{owner}::{name}"
        kinds = {child.tag for child in case}
        outcome = "PASSED"
        for tag, word in (("skipped", "SKIPPED"), ("failure", "FAILED"), ("error", "ERROR")):
            if tag in kinds:
                outcome = word
        outcomes[test_id] = outcome
    return outcomes


def test_parameter_runs_once_per_value_with_ids(helper_run):
    outcomes, _, log = helper_run
    assert [k for k in outcomes if k.startswith("test_size")] == [
        "test_size[1]",
        "test_size[2]",
        "test_size[3]",
    ], log
    assert outcomes["test_shape[small]"] == outcomes["test_shape[big]"] == "PASSED"


def test_parameters_vary_together_not_as_a_product(helper_run):
    outcomes, _, log = helper_run
    correlated = {k: v for k, v in outcomes.items() if k.startswith("test_correlated")}
    assert len(correlated) == 2 and set(correlated.values()) == {"PASSED"}, log


def test_cached_fixture_is_computed_once_per_parameter(helper_run):
    outcomes, cached, log = helper_run
    assert outcomes["test_cached_second[2]"] == "PASSED", log
    assert sorted(cached) == ["1", "2", "3"], log


def test_targets_run_on_llvm_and_skip_cuda(helper_run):
    outcomes, _, log = helper_run
    assert outcomes["test_targets[llvm]"] == "PASSED", log
    assert outcomes["test_targets[cuda]"] == "SKIPPED", log
    assert outcomes["test_auto_target[llvm]"] == "PASSED", log
    assert outcomes["TestOwnTarget::test_own_target_parameter_wins[own]"] == "PASSED"


def test_feature_marks_skip_absent_devices_with_a_reason(helper_run):
    outcomes, _, log = helper_run
    assert outcomes["test_needs_cuda"] == "SKIPPED"
    assert outcomes["test_needs_sm80"] == "SKIPPED"
    assert outcomes["test_needs_llvm"] == outcomes["test_uses_gpu_runs"] == "PASSED"
    assert "CUDA is not available" in log and "compute capability >= 8.0" in log


def test_compare_before_after_generates_a_test_that_can_fail(helper_run):
    outcomes, _, log = helper_run
    assert outcomes["TestFoldsIf::test_compare"] == "PASSED", log
    assert outcomes["TestWrongExpectedFails::test_compare"] == "FAILED", log
    assert re.search(r"E +# expected\nE +# from minitvm", log), log  # scripts as text, not repr
    assert outcomes["TestExpectedError::test_compare"] == "PASSED", log
    assert outcomes["TestMissingErrorFails::test_compare"] == "FAILED", log


def test_device_enabled_and_enabled_targets(monkeypatch):
    from minitvm.testing import utils as testing_utils

    monkeypatch.delenv("TVM_TEST_TARGETS", raising=False)
    assert tvm.testing.device_enabled("llvm -mcpu=generic")
    assert tvm.testing.device_enabled("opencl") == tvm.opencl(0).exist
    assert tvm.testing.device_enabled("cuda") == tvm.cuda(0).exist
    # a GPU kind runs exactly where its device exists
    monkeypatch.setattr(testing_utils, "_device_exists", lambda kind: kind == "opencl")
    assert [t for t, _ in tvm.testing.enabled_targets()] == ["llvm", "opencl"]
    assert not tvm.testing.device_enabled("cuda") and tvm.testing.device_enabled("opencl")
    monkeypatch.setattr(testing_utils, "_device_exists", lambda kind: False)
    assert tvm.testing.enabled_targets() == [("llvm", tvm.cpu(0))]
    monkeypatch.setenv("TVM_TEST_TARGETS", "cuda; llvm -opt-level=2")
    assert tvm.testing.enabled_targets() == [("llvm -opt-level=2", tvm.cpu(0))]
    with pytest.raises(ArgumentError, match="expected a target string"):
        tvm.testing.device_enabled(tvm.target.Target("llvm"))


def test_feature_knows_its_parents():
    assert tvm.testing.requires_llvm.is_available()
    assert not tvm.testing.requires_tensorcore.is_available()  # needs cuda, which needs a gpu
    assert tvm.testing.requires_cuda.marks(support_required="optional") == []
    with pytest.raises(ArgumentError, match="support_required"):
        tvm.testing.requires_cuda(support_required="sometimes")


def test_assert_prim_expr_equal_proves_or_raises():
    x = tir.Var("x", "int32")
    tvm.testing.assert_prim_expr_equal(x + x, x * 2)
    with pytest.raises(ValueError, match="are not equal"):
        tvm.testing.assert_prim_expr_equal(x, x + 1)


def test_check_numerical_grads_accepts_right_and_rejects_wrong_gradients():
    x = np.random.default_rng(0).standard_normal((3, 2))
    tvm.testing.check_numerical_grads(lambda a: float(np.sum(a**3)), [x], [3 * x**2])
    tvm.testing.check_numerical_grads(lambda a: float(np.sum(a**3)), {"a": x}, {"a": 3 * x**2})
    with pytest.raises(AssertionError, match="differ"):
        tvm.testing.check_numerical_grads(lambda a: float(np.sum(a**3)), [x], [2 * x])
    with pytest.raises(AssertionError, match="shape"):
        tvm.testing.check_numerical_grads(lambda a: float(np.sum(a)), [x], [np.ones(6)])


# --- tvm.topi.testing ---------------------------------------------------------------------------


def _conv_loops(a, w, stride, pads):
    """Convolution by explicit loops: the slow, obvious reference."""
    top, left, bottom, right = pads
    a = np.pad(a, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, _, h, wd = a.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for b, f, y, x in np.ndindex(n, o, oh, ow):
        out[b, f, y, x] = np.sum(
            a[b, :, y * stride : y * stride + kh, x * stride : x * stride + kw] * w[f]
        )
    return out


@pytest.mark.parametrize(
    "padding,pads",
    [(1, (1, 1, 1, 1)), ((1, 2), (1, 2, 1, 2)), ("SAME", (1, 1, 1, 1)), ("VALID", (0,) * 4)],
)
def test_conv2d_references_match_explicit_loops(padding, pads):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 7, 6)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    for stride in (1, 2):
        want = _conv_loops(a, w, stride, pads)
        got = tvm.topi.testing.conv2d_nchw_python(a, w, stride, padding)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        nhwc = tvm.topi.testing.conv2d_nhwc_python(
            a.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), stride, padding
        )
        np.testing.assert_allclose(nhwc, want.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    with pytest.raises(ArgumentError, match="SAME"):
        tvm.topi.testing.conv2d_nchw_python(a, w, 1, "FULL")


def test_conv2d_implement_and_schedules_build_and_match_numpy():
    conv, schedule = tvm.topi.testing.get_conv2d_nchw_implement("llvm")
    A = te.placeholder((1, 2, 6, 6), name="A")
    W = te.placeholder((3, 2, 3, 3), name="W")
    B = conv(A, W, 1, 1, 1, "float32")
    C = te.compute(B.shape, lambda *i: B(*i) * 2.0, name="C")
    f = tvm.build(schedule([C]), [A, W, C], "llvm")
    rng = np.random.default_rng(2)
    a, w = rng.random((1, 2, 6, 6), "float32"), rng.random((3, 2, 3, 3), "float32")
    c = tvm.nd.empty((1, 3, 6, 6), "float32")
    f(tvm.nd.array(a), tvm.nd.array(w), c)
    want = 2 * tvm.topi.testing.conv2d_nchw_python(a, w, 1, 1)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-5, atol=1e-5)
    D = te.compute((4,), lambda i: A[0, 0, 0, i] + 1.0, name="D")
    assert tvm.topi.testing.get_elemwise_schedule("llvm")(D).outputs


# --- tvm.driver.build_module ----------------------------------------------------------------


def _split_add(factor):
    A = te.placeholder((43,), name="A")
    B = te.compute(A.shape, lambda i: A[i] + 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=factor)
    return s, A, B


def _has_if(stmt):
    ifs = []
    stmt_functor.post_order_visit(stmt, lambda n: ifs.append(isinstance(n, tir.IfThenElse)))
    return any(ifs)


def test_schedule_to_module_keeps_split_guards_as_if_statements():
    found = []
    for factor, guarded in ((4, True), (43, False)):
        s, A, B = _split_add(factor)
        mod = schedule_to_module(s, [A, B], "main")
        found.append(_has_if(mod["main"].body) == guarded)
    assert all(found)
    assert tvm.driver.build_module.build is tvm.build
    with pytest.raises(BuildError, match="expected a te.Schedule"):
        schedule_to_module(tvm.lower(s, [A, B])["main"], [A, B])


# --- tvm.tir.stmt_functor -----------------------------------------------------------------------


@T.prim_func
def _two_loops(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        A[i] = T.float32(1)
    for j in range(8):
        B[j] = A[j] + T.float32(2)


def test_ir_transform_postorder_rewrites_only_enabled_kinds():
    seen = []

    def unroll(node):
        seen.append(type(node).__name__)
        return node.replace(kind=tir.ForKind.UNROLLED)

    body = stmt_functor.ir_transform(_two_loops.body, None, unroll, ["tir.For"])
    assert seen == ["For", "For"]
    kinds = []
    stmt_functor.post_order_visit(
        body, lambda n: kinds.append(n.kind) if isinstance(n, tir.For) else None
    )
    assert kinds == [tir.ForKind.UNROLLED] * 2
    func = _two_loops.replace(body=body)
    a, b = np.zeros(8, "float32"), np.zeros(8, "float32")
    tvm.build(func, target="llvm")(a, b)
    np.testing.assert_array_equal(b, np.full(8, 3, "float32"))


def test_ir_transform_preorder_replacement_skips_children():
    visited = []

    def drop_first_loop(node):
        if isinstance(node, tir.For) and node.loop_var.name == "i":
            return tir.Evaluate(0)
        return None

    body = stmt_functor.ir_transform(
        _two_loops.body,
        drop_first_loop,
        lambda n: visited.append(n) if isinstance(n, tir.BufferStore) else None,
    )
    assert [n.buffer.name for n in visited] == ["B"]  # A's store was inside the replaced loop
    with pytest.raises(ArgumentError, match="type keys"):
        stmt_functor.ir_transform(body, None, None, [3])


def test_substitute_makes_numbers_constants_of_the_var_dtype():
    n = tir.Var("n", "int64")
    out = stmt_functor.substitute(n * 2 + 1, {n: 5})
    assert out.dtype == "int64"
    assert tvm.arith.Analyzer().simplify(out).value == 11
    assert stmt_functor.pre_order_visit is tir.pre_order_visit


# --- tvm.ir.save_json / load_json ---------------------------------------------------------------


def test_json_round_trips_prim_funcs_modules_and_keeps_shared_vars():
    mod = tvm.IRModule({"main": _two_loops})
    for ir in (_two_loops, mod, _two_loops.body):
        tvm.ir.assert_structural_equal(tvm.ir.load_json(tvm.ir.save_json(ir)), ir)
    loaded = tvm.ir.load_json(tvm.ir.save_json(_two_loops))
    first_loop = loaded.body.seq[0]
    assert first_loop.body.indices[0] is first_loop.loop_var  # one object, as before saving
    a, b = np.zeros(8, "float32"), np.zeros(8, "float32")
    tvm.build(loaded, target="llvm")(a, b)
    np.testing.assert_array_equal(b, np.full(8, 3, "float32"))


def test_json_round_trips_te_tensors_with_attrs():
    n = te.size_var("n")
    A = te.placeholder((n, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((n,), lambda i: te.sum(A[i, k] * 2.0, axis=k), name="C", attrs={"arr": [10, 12]})
    C2 = tvm.ir.load_json(tvm.ir.save_json(C))
    assert isinstance(C2, te.Tensor) and str(C2) == str(C)
    assert list(C2.op.attrs["arr"]) == [10, 12]
    A2 = C2.op.input_tensors[0]
    f = tvm.build(te.create_schedule(C2.op), [A2, C2], "llvm")
    a = np.arange(12, dtype="float32").reshape(3, 4)
    c = tvm.nd.empty((3,), "float32")
    f(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), 2 * a.sum(axis=1))


def _doc(nodes, root):
    return json.dumps({"format": "minitvm.json", "version": 1, "root": root, "nodes": nodes})


@pytest.mark.parametrize(
    "text,match",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"root": 1}), "not a minitvm IR document"),
        (_doc([{"type": "os.system", "fields": {}}], {"ref": 0}), "not a minitvm IR node"),
        (_doc([{"type": "builtins.eval", "fields": {}}], {"ref": 0}), "not a minitvm IR node"),
        (
            _doc(
                [{"type": "tir.expr.IntImm", "fields": {"value": {"ref": 0}, "dtype": None}}],
                {"ref": 0},
            ),
            "not to an earlier node",
        ),
        (
            _doc([{"type": "tir.expr.IntImm", "fields": {"value": 1}}], {"ref": 0}),
            "exactly the fields",
        ),
        (_doc([], {"ref": 5}), "not to an earlier node"),
        (_doc([], {"__reduce__": "os.system"}), "unknown tag"),
        (_doc([], {"ndarray": {"dtype": "O", "shape": [1], "data": ""}}), "bad array"),
        (_doc([], {"enum": "builtins.object", "name": "x"}), "unknown enum"),
        (_doc([], "[" * 5000 + "]" * 5000), None),
    ],
)
def test_load_json_refuses_anything_but_minitvm_nodes(text, match):
    if match is None:  # a plain string root is just a string: nothing is evaluated
        assert tvm.ir.load_json(text) == "[" * 5000 + "]" * 5000
        return
    with pytest.raises(TVMError, match=match):
        tvm.ir.load_json(text)


def test_load_json_survives_deep_nesting_and_save_refuses_non_ir():
    deep = (
        '{"format": "minitvm.json", "version": 1, "nodes": [], "root": '
        + "[" * 100000
        + "]" * 100000
        + "}"
    )
    with pytest.raises(TVMError):
        tvm.ir.load_json(deep)
    with pytest.raises(TVMError, match="no JSON form"):
        tvm.ir.save_json(lambda: 0)


# --- tvm._ffi -------------------------------------------------------------------------------------


def test_ffi_names_are_the_runtime_registry():
    name = "test_support.add_one"
    tvm._ffi.register_func(name, lambda x: x + 1, override=True)
    assert tvm.get_global_func(name)(1) == 2
    assert tvm._ffi.get_global_func(name) is tvm.runtime.get_global_func(name)
    assert tvm._ffi.base.TVMError is tvm.error.TVMError
    tvm.runtime.remove_global_func(name)

    @tvm._ffi.register_object("test_support.Thing")
    class Thing:
        pass

    assert tvm._ffi.registry.get_object_type("test_support.Thing") is Thing
    with pytest.raises(ArgumentError, match="already registered"):
        tvm._ffi.register_object("test_support.Thing")(type("Other", (), {}))


# --- tvm.instrument -------------------------------------------------------------------------------


def _recorder(skip=None, fail_enter=False):
    @tvm.instrument.pass_instrument
    class Recorder:
        def __init__(self):
            self.log = []

        def enter_pass_ctx(self):
            if fail_enter:
                raise RuntimeError("enter failed")
            self.log.append("enter")

        def exit_pass_ctx(self):
            self.log.append("exit")

        def should_run(self, mod, info):
            self.log.append(f"should_run {info.name}")
            return info.name != skip

        def run_before_pass(self, mod, info):
            self.log.append(f"before {info.name}")

        def run_after_pass(self, mod, info):
            self.log.append(f"after {info.name}")

    return Recorder()


def _mod_with_if():
    s, A, B = _split_add(4)
    return tvm.lower(s, [A, B])


def test_instruments_are_called_in_order_around_each_pass():
    rec = _recorder()
    seq = tvm.transform.Sequential([tvm.tir.transform.Simplify(), tvm.tir.transform.RemoveNoOp()])
    with tvm.transform.PassContext(instruments=[rec]):
        seq(_mod_with_if())
    assert isinstance(rec, tvm.instrument.PassInstrument)
    assert rec.log == [
        "enter",
        "should_run sequential",
        "before sequential",
        "should_run Simplify",
        "before Simplify",
        "after Simplify",
        "should_run RemoveNoOp",
        "before RemoveNoOp",
        "after RemoveNoOp",
        "after sequential",
        "exit",
    ]


def test_should_run_false_skips_the_pass():
    rec = _recorder(skip="Simplify")
    mod = _mod_with_if()
    with tvm.transform.PassContext(instruments=[rec]):
        out = tvm.tir.transform.Simplify()(mod)
    assert out is mod
    assert "before Simplify" not in rec.log and "should_run Simplify" in rec.log


def test_a_failing_enter_exits_the_instruments_already_entered():
    first, second = _recorder(), _recorder(fail_enter=True)
    with (
        pytest.raises(RuntimeError, match="enter failed"),
        tvm.transform.PassContext(instruments=[first, second]),
    ):
        pass
    assert first.log == ["enter", "exit"]
    with pytest.raises(ArgumentError, match="expected a class"):
        tvm.instrument.pass_instrument(lambda: None)


def test_printing_and_timing_instruments(capsys):
    timing = tvm.instrument.PassTimingInstrument()
    with tvm.transform.PassContext(instruments=[tvm.instrument.PrintBeforeAll(), timing]):
        tvm.tir.transform.Simplify()(_mod_with_if())
        table = timing.render()
    assert "Before Running Pass" in capsys.readouterr().out
    assert table.startswith("Pass Timing:") and "Simplify:" in table
    with tvm.transform.PassContext(instruments=[tvm.instrument.PrintAfterAll()]):
        tvm.tir.transform.Simplify()(_mod_with_if())
    assert "After Running Pass" in capsys.readouterr().out


# --- tvm.contrib.cc -------------------------------------------------------------------------------


def test_create_shared_packs_a_saved_object_that_load_module_runs():
    s, A, B = _split_add(4)
    f = tvm.build(s, [A, B], "llvm", name="addtwo")
    temp = utils.tempdir()
    f.save(temp.relpath("add.o"))
    cc.create_shared(temp.relpath("add.so"), [temp.relpath("add.o")])
    loaded = tvm.runtime.load_module(temp.relpath("add.so"))
    a = np.random.default_rng(3).random(43, "float32")
    b = tvm.nd.empty((43,), "float32")
    loaded(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a + 2)
    assert cc.create_shared.output_format == "so"


def test_create_shared_refuses_foreign_objects():
    temp = utils.tempdir()
    foreign = temp.relpath("gcc.o")
    with open(foreign, "wb") as out:
        out.write(b"\x7fELF\x02\x01\x01" + bytes(57))
    with pytest.raises(BuildError, match="never runs a C compiler"):
        cc.create_shared(temp.relpath("gcc.so"), [foreign])
    with pytest.raises(BuildError, match="exactly one"):
        cc.create_shared(temp.relpath("two.so"), [foreign, foreign])
    assert not os.path.exists(temp.relpath("gcc.so"))


def test_the_tutorial_cell_runs_under_the_shim():
    code = textwrap.dedent(
        """
        import sys, minitvm
        sys.modules["tvm"] = minitvm
        import numpy as np
        import tvm
        from tvm import te
        from tvm.contrib import cc, utils
        n = te.var("n")
        A = te.placeholder((n,), name="A"); B = te.placeholder((n,), name="B")
        C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
        fadd = tvm.build(te.create_schedule(C.op), [A, B, C], "llvm", name="myadd")
        temp = utils.tempdir()
        fadd.save(temp.relpath("myadd.o"))
        cc.create_shared(temp.relpath("myadd.so"), [temp.relpath("myadd.o")])
        fadd1 = tvm.runtime.load_module(temp.relpath("myadd.so"))
        a = tvm.nd.array(np.arange(5, dtype="float32")); b = tvm.nd.array(np.ones(5, "float32"))
        c = tvm.nd.empty((5,), "float32")
        fadd1(a, b, c)
        tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
        print("cell ok")
        """
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and "cell ok" in proc.stdout, proc.stderr


def test_every_lazily_loaded_testing_name_resolves():
    from minitvm.testing import utils

    for name in tvm.testing._PYTEST_HELPERS:
        assert getattr(tvm.testing, name) is getattr(utils, name)
    with pytest.raises(AttributeError, match="no attribute 'no_such_helper'"):
        tvm.testing.no_such_helper  # noqa: B018


class _RecordingSchedule:
    """Stands in for a GPU-capable Schedule: records each primitive call, returns fresh names."""

    def __init__(self):
        self.calls = []
        self.count = 0

    def __getattr__(self, name):
        def primitive(*args, **kwargs):
            names_so_far = [c[0] for c in self.calls]
            self.calls.append((name, args, kwargs))
            self.count += 1
            if name == "get_loops":
                depth = 3 if names_so_far == ["get_block"] else 6  # the matmul: i, j, k
                return [f"loop{self.count}_{i}" for i in range(depth)]
            if name == "split":
                factors = kwargs["factors"] if "factors" in kwargs else args[1]
                return [f"split{self.count}_{i}" for i in range(len(factors))]
            return f"{name}{self.count}"

        return primitive


@pytest.mark.parametrize("kind,warp,aligned", [("mma", 32, True), ("mfma", 64, False)])
def test_tensor_core_schedules_issue_the_primitive_sequence(kind, warp, aligned):
    from minitvm.testing import tir as testing_tir

    sch = _RecordingSchedule()
    build = getattr(testing_tir, f"{kind}_schedule")
    intrins = ["load_a", "load_b", "mma", "fill", "store"]
    maps = ["map_a", "map_b", "map_c"]
    args = ["workload", 16, "float16", False, [1, 2, 2, 1, 1], [1, 2, 2, 1, 1], [4, 2, 1], *maps]
    original = testing_tir._schedule_of
    testing_tir._schedule_of = lambda workload: sch
    try:
        assert build(*args, *intrins) is sch
    finally:
        testing_tir._schedule_of = original
    names = [c[0] for c in sch.calls]
    assert [c[1][1] for c in sch.calls if c[0] == "tensorize"] == intrins
    assert [c[1][2] for c in sch.calls if c[0] == "transform_layout"] == maps
    binds = [c[1][1] for c in sch.calls if c[0] == "bind"]
    assert binds == ["blockIdx.x", "blockIdx.y", "threadIdx.y"] + ["threadIdx.x", "threadIdx.y"] * 2
    copies = [c for c in sch.calls if c[0] == "split" and len(c[2].get("factors", ())) == 4]
    assert [c[2]["factors"][2] for c in copies] == [warp, warp]
    assert ("storage_align" in names) == aligned
    assert names.index("blockize") < names.index("decompose_reduction") < names.index("tensorize")


@T.prim_func
def _add_one_any_length(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + T.float32(1)


def _var_ids(node):
    ids = set()
    stmt_functor.post_order_visit(
        node, lambda n: ids.add(id(n)) if isinstance(n, tir.Var) else None
    )
    return ids


def test_renew_defs_copies_every_definition_and_keeps_behaviour():
    new = stmt_functor.renew_defs(_add_one_any_length)
    tvm.ir.assert_structural_equal(new, _add_one_any_length)
    old_ids, new_ids = _var_ids(_add_one_any_length), _var_ids(new)
    assert len(new_ids) == len(old_ids) and not (old_ids & new_ids)
    a, b = np.arange(5, dtype="float32"), np.zeros(5, "float32")
    tvm.build(new, target="llvm")(a, b)
    np.testing.assert_array_equal(b, a + 1)
    with pytest.raises(ArgumentError, match="expected a tir.PrimFunc"):
        stmt_functor.renew_defs(_add_one_any_length.body)
