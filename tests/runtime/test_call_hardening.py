"""The argument checker against hostile metadata and hostile arguments (issue 10): metadata is
never code; read-only and overlapping buffers, symbolic dims too wide for their dtype and
same-named variables are caught before native code runs. Old crashes run in a subprocess."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from llvm_kernels import ADD_INFO, ADD_IR, AXPK_INFO, build_result

import minitvm as tvm
from minitvm import te
from minitvm.error import ArgumentError, RuntimeError_, ShapeError
from minitvm.runtime import Module
from minitvm.runtime import ndarray as nd

RNG = np.random.default_rng(10)


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _build(outs, args, name, schedule=None):
    s = te.create_schedule([o.op for o in outs])
    if schedule is not None:
        schedule(s)
    return tvm.build(s, args, "llvm", name=name)[name]


@pytest.fixture(scope="module")
def reverse():
    """C[i] = A[n - 1 - i]: reads A where it does not write C."""
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[n - 1 - i], name="C")
    return _build([C], [A, C], "reverse")


@pytest.fixture(scope="module")
def sgd():
    """X - lr * G on a (37, 100) grid, split by 16 and vectorized (a guarded tail)."""
    X = te.placeholder((37, 100), name="X")
    G = te.placeholder((37, 100), name="G")
    Y = te.compute((37, 100), lambda i, j: X[i, j] - 0.5 * G[i, j], name="Y")

    def schedule(s):
        _, inner = s[Y].split(Y.op.axis[1], factor=16)
        s[Y].vectorize(inner)

    return _build([Y], [X, G, Y], "sgd", schedule)


# --- item 13: metadata is data ----------------------------------------------------------
HOSTILE = [
    "n\nimport os; os.mkdir(MARKER)",
    "n)\n    __import__('os').mkdir(MARKER)  #",
    "n'; __import__('os').mkdir(MARKER); '",
]


@pytest.mark.parametrize("payload", HOSTILE)
def test_hostile_names_in_metadata_never_run(tmp_path, payload):
    marker = tmp_path / "ran"
    payload = payload.replace("MARKER", repr(str(marker)))
    info = {
        "name": "add" + payload,
        "params": [
            {"name": f"{x}{payload}", "kind": "buffer", "dtype": "float32", "shape": [payload]}
            for x in "ABC"
        ],
        "sym_vars": [{"name": payload, "label": payload, "dtype": "int32", "param": 0, "dim": 0}],
        "writes": [2],
        "symbol": "add",
    }
    ir = ADD_IR.split("; Y[i, j]")[0]
    mod = Module(build_result(ir, [info]))
    f = mod[info["name"]]
    assert payload not in f.checker_source
    a, b, c = (np.arange(4, dtype="float32") for _ in range(3))
    f(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    with pytest.raises(ShapeError, match=r"has shape \(3,\)"):
        f(a, b, c[:3])
    assert not marker.exists()


@pytest.mark.parametrize(
    "entry",
    [
        "__import__('os').getcwd()",
        "n.__class__",
        "[c for c in ()]",
        "n if n else 0",
        "'n'",
        "n @ n",
        "f'{n}'",
    ],
)
def test_shape_expressions_outside_the_grammar_are_refused(entry):
    sym = {"name": "n", "dtype": "int32", "param": 0, "dim": 0}
    params = [
        {"name": x, "kind": "buffer", "dtype": "float32", "shape": [s]}
        for x, s in zip("ABC", ["n", entry, "n"])
    ]
    info = {"name": "add", "params": params, "sym_vars": [sym]}
    with pytest.raises(RuntimeError_, match=r"function 'add': its metadata is invalid"):
        Module(build_result(ADD_IR.split("; Y[i, j]")[0], [info]))


def test_division_by_zero_in_a_shape_expression_is_a_shape_error():
    k = {"name": "k", "kind": "scalar", "dtype": "int32"}
    params = [
        {"name": x, "kind": "buffer", "dtype": "float32", "shape": s}
        for x, s in zip("ABC", [["n"], ["n // k"], ["n"]])
    ]
    sym = {"name": "n", "dtype": "int32", "param": 0, "dim": 0}
    info = {"name": "add", "params": [*params, k], "sym_vars": [sym], "writes": [2]}
    mod = Module(build_result(ADD_IR.split("; Y[i, j]")[0], [info]))
    a = np.ones(4, "float32")
    mod(a, np.ones(2, "float32"), np.zeros(4, "float32"), 2)
    with pytest.raises(ShapeError, match=r"dim 0 is n // k, which divides by zero"):
        mod(a, a, np.zeros(4, "float32"), 0)


# --- item 8 of the contract: native return codes -----------------------------------------
def test_native_error_codes_use_the_funcinfo_messages():
    info = dict(AXPK_INFO, writes=[1], errors=["k must be non-negative (got a negative k)"])
    mod = Module(build_result(ADD_IR, [ADD_INFO, info]))
    X = np.zeros((2, 4))
    with pytest.raises(
        RuntimeError_, match=r"calling 'axpk': k must be non-negative \(got a negative k\)"
    ):
        mod["axpk"](X, X.copy(), 1.0, -1)


# --- item 3: read-only outputs ----------------------------------------------------------
def test_read_only_memmap_output_is_refused_not_a_crash(tmp_path):
    out = _python(
        f"""
        import numpy as np
        import minitvm as tvm
        from minitvm import te
        from minitvm.error import ArgumentError
        A = te.placeholder((64,), name="A")
        C = te.compute((64,), lambda i: A[i] + 1, name="C")
        f = tvm.build(te.create_schedule(C.op), [A, C], "llvm", name="inc")
        np.zeros(64, "float32").tofile({str(tmp_path / "c.bin")!r})
        c = np.memmap({str(tmp_path / "c.bin")!r}, dtype="float32", mode="r", shape=(64,))
        try:
            f(np.ones(64, "float32"), c)
        except ArgumentError as err:
            print(err)
        """
    )
    assert out.returncode == 0, out.stderr
    assert "argument 'C' (position 1) is read-only; the function writes it" in out.stdout


def _read_only_outputs():
    frozen = np.zeros(8, "float32")
    frozen.flags.writeable = False
    wrapped = np.zeros(8, "float32")
    wrapped.flags.writeable = False

    class ReadOnlyDLPack:  # what jax arrays and other immutable producers export
        def __init__(self, x):
            self.x = x

        def __dlpack__(self, **kwargs):
            return self.x.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.x.__dlpack_device__()

    return {
        "frombuffer": np.frombuffer(bytes(32), "float32"),
        "writeable=False": frozen,
        "NDArray of a read-only array": nd.NDArray(wrapped),
        "read-only DLPack": ReadOnlyDLPack(frozen),
    }


@pytest.mark.parametrize("kind", list(_read_only_outputs()))
def test_read_only_outputs_are_refused(kind):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2, name="C")
    f = _build([C], [A, C], "double")
    out = _read_only_outputs()[kind]
    before = np.array(out.x if kind == "read-only DLPack" else out).copy()
    with pytest.raises(
        ArgumentError,
        match=r"calling 'double': argument 'C' \(position 1\) is read-only; the function writes "
        r"it; pass a writable array \(np.array\(x\) copies\)",
    ):
        f(np.ones(8, "float32"), out)
    after = np.array(out.x if kind == "read-only DLPack" else out)
    np.testing.assert_array_equal(after, before)


def test_read_only_inputs_are_fine():
    A = te.placeholder((8,), name="A")
    C = te.compute((8,), lambda i: A[i] * 2, name="C")
    f = _build([C], [A, C], "double")
    assert f.info["writes"] == [1]
    a = np.frombuffer(np.arange(8, dtype="float32").tobytes(), "float32")
    c = np.zeros(8, "float32")
    f(a, c)
    np.testing.assert_array_equal(c, 2 * a)


# --- item 9: aliasing -------------------------------------------------------------------
def test_same_array_as_input_and_output_of_a_reversal_is_refused(reverse):
    a = np.arange(6, dtype="float32")
    with pytest.raises(
        ArgumentError,
        match=r"calling 'reverse': arguments 'A' \(position 0\) and 'C' \(position 1\) overlap "
        r"in memory; the function reads A at other positions than it writes C, so the result "
        r"would be wrong; pass a copy",
    ):
        reverse(a, a)
    np.testing.assert_array_equal(a, np.arange(6))  # untouched
    c = np.zeros(6, "float32")
    reverse(a, c)
    np.testing.assert_array_equal(c, a[::-1])


@pytest.mark.parametrize("views", ["shifted", "nd_same", "partial"])
def test_overlapping_views_are_refused(reverse, views):
    base = np.arange(12, dtype="float32")
    a, c = {
        "shifted": (base[1:7], base[0:6]),
        "nd_same": (nd.array(base[:6]),) * 2,
        "partial": (base[0:6], base[5:11]),
    }[views]
    with pytest.raises(ArgumentError, match=r"overlap in memory"):
        reverse(a, c)


def test_matmul_output_aliasing_an_input_is_refused():
    k = te.reduce_axis((0, 8), name="k")
    A = te.placeholder((8, 8), name="A")
    B = te.placeholder((8, 8), name="B")
    C = te.compute((8, 8), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    mm = _build([C], [A, B, C], "mm")
    assert mm.info["alias_ok"] == []
    a = RNG.standard_normal((8, 8)).astype("float32")
    b = RNG.standard_normal((8, 8)).astype("float32")
    with pytest.raises(ArgumentError, match=r"arguments 'A' \(position 0\) and 'C'"):
        mm(a, b, a)
    with pytest.raises(ArgumentError, match=r"arguments 'B' \(position 1\) and 'C'"):
        mm(a, b, b)
    c = np.zeros((8, 8), "float32")
    mm(a, a, c)  # the same array as two inputs is fine
    np.testing.assert_allclose(c, a @ a, rtol=1e-5, atol=1e-5)


def test_in_place_elementwise_update_keeps_working(sgd):
    assert [0, 2] in sgd.info["alias_ok"] and [1, 2] in sgd.info["alias_ok"]
    x = RNG.standard_normal((37, 100)).astype("float32")
    g = RNG.standard_normal((37, 100)).astype("float32")
    want = x - 0.5 * g
    X = nd.array(x)
    sgd(X, nd.array(g), X)
    np.testing.assert_allclose(X.numpy(), want, rtol=1e-6)
    x2 = x.copy()
    sgd(x2, g, x2)
    np.testing.assert_allclose(x2, want, rtol=1e-6)
    with pytest.raises(ArgumentError, match=r"overlap in memory"):  # a shifted view is not
        big = np.zeros(37 * 100 + 1, "float32")
        sgd(big[1:].reshape(37, 100), g, big[:-1].reshape(37, 100))


def test_symbolic_in_place_update_keeps_working():
    n = te.var("n")
    X = te.placeholder((n,), name="X")
    Y = te.compute((n,), lambda i: X[i] * 3, name="Y")
    f = _build([Y], [X, Y], "triple")
    assert f.info["alias_ok"] == [[0, 1]]
    x = np.arange(5, dtype="float32")
    f(x, x)
    np.testing.assert_array_equal(x, 3 * np.arange(5))


def test_two_outputs_in_one_array_are_refused():
    A = te.placeholder((8,), name="A")
    C = te.compute((8,), lambda i: A[i] + 1, name="C")
    D = te.compute((8,), lambda i: A[i] * 2, name="D")
    f = _build([C, D], [A, C, D], "two")
    c = np.zeros(8, "float32")
    with pytest.raises(
        ArgumentError,
        match=r"arguments 'C' \(position 1\) and 'D' \(position 2\) overlap in memory; the "
        r"function writes both",
    ):
        f(np.ones(8, "float32"), c, c)


def test_empty_views_inside_another_array_are_not_overlap():
    A = te.placeholder((te.var("n"),), name="A")
    C = te.compute(A.shape, lambda i: A[i] + 1, name="C")
    f = _build([C], [A, C], "inc")
    base = np.arange(8, dtype="float32")
    f(base[3:3], base[4:4])  # nothing to read or write


# --- item 10: two variables with one name ------------------------------------------------
def test_two_symbolic_dims_with_the_same_name_are_distinct():
    n1, n2 = te.var("n"), te.var("n")
    A = te.placeholder((n1,), name="A")
    B = te.placeholder((n2,), name="B")
    C = te.compute((n1,), lambda i: A[i] * 2, name="C")
    D = te.compute((n2,), lambda i: B[i] + 1, name="D")
    f = _build([C, D], [A, B, C, D], "two_n")
    a, b = np.arange(3, dtype="float32"), np.arange(5, dtype="float32")
    c, d = np.zeros(3, "float32"), np.zeros(5, "float32")
    f(a, b, c, d)  # was refused: B's n "must equal" A's n
    np.testing.assert_array_equal(c, 2 * a)
    np.testing.assert_array_equal(d, b + 1)
    with pytest.raises(ShapeError, match=r"argument 'D' \(position 3\) has shape \(3,\).*n = 5"):
        f(a, b, c, np.zeros(3, "float32"))  # was accepted, and wrote past D's end
    with pytest.raises(ShapeError, match=r"argument 'C' \(position 2\) has shape \(5,\).*n = 3"):
        f(a, b, np.zeros(5, "float32"), d)


def test_int64_vars_with_the_same_name_in_relax_are_distinct():
    """concat of (n,) and (n,) with two different n: one kernel sees both vars."""
    from minitvm import relax, tir
    from minitvm.relax import op
    from minitvm.relax.vm import VirtualMachine, build

    n1, n2 = tir.Var("n", "int64"), tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n1,), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((n2,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            out = bb.emit_output(op.concat([x, y], axis=0))
        bb.emit_func_output(out)
    vm = VirtualMachine(build(bb.get()))
    a, b = np.ones(3, "float32"), np.full(5, 2.0, "float32")
    got = vm["main"](a, b).numpy()  # was refused: "dim 0 must equal n = 5"
    np.testing.assert_array_equal(got, np.concatenate([a, b]))


# --- item 4 (runtime half): a dim that does not fit its symbolic var's dtype -------------
def test_dim_wider_than_int32_symbolic_var_is_refused(tmp_path):
    out = _python(
        f"""
        import numpy as np
        import minitvm as tvm
        from minitvm import te
        from minitvm.error import ArgumentError
        n = te.var("n")
        A = te.placeholder((n,), name="A", dtype="int8")
        C = te.compute((n,), lambda i: A[i] + 1, name="C")
        f = tvm.build(te.create_schedule(C.op), [A, C], "llvm", name="inc")
        size = 2**31 + 64  # sparse files: nothing is read or written
        a = np.memmap({str(tmp_path / "a.bin")!r}, dtype="int8", mode="w+", shape=(size,))
        c = np.memmap({str(tmp_path / "c.bin")!r}, dtype="int8", mode="w+", shape=(size,))
        try:
            f(a, c)
        except ArgumentError as err:
            print(err)
        """
    )
    assert out.returncode == 0, out.stderr
    assert (
        "dim 0 of 'A' is 2147483712, which does not fit symbolic dim 'n' (int32); declare it "
        "te.var('n', 'int64')"
    ) in out.stdout


# --- worst errors: DLPack tensors numpy cannot import -----------------------------------
def test_bfloat16_torch_tensor_says_convert_not_move():
    torch = pytest.importorskip("torch")
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1, name="C")
    f = _build([C], [A, C], "inc")
    with pytest.raises(
        ArgumentError,
        match=r"argument 'A' \(position 0\) is a Tensor of dtype torch.bfloat16, which cannot be "
        r"read through DLPack .*; convert it to float32 first",
    ) as info:
        f(torch.zeros(4, dtype=torch.bfloat16), np.zeros(4, "float32"))
    assert "move it to the CPU" not in str(info.value)


def test_dlpack_tensor_on_another_device_says_move_it():
    class OnGpu:
        dtype = "float32"

        def __dlpack__(self, **kwargs):
            raise BufferError("the tensor lives on device 2")

        def __dlpack_device__(self):
            return (2, 0)

    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1, name="C")
    f = _build([C], [A, C], "inc")
    with pytest.raises(ArgumentError, match=r"on a non-CPU device .*; move it to the CPU first"):
        f(OnGpu(), np.zeros(4, "float32"))


# --- the alias analysis behind "alias_ok" (tir/analysis/alias.py) -------------------------
def _alias_ok(outs, args, schedule=None):
    return _build(outs, args, "k", schedule).info["alias_ok"]


def test_alias_ok_only_for_inputs_read_at_the_written_index():
    A = te.placeholder((16, 8), name="A")
    B = te.placeholder((8,), name="B")
    C = te.compute((16, 8), lambda i, j: A[i, j] + B[j], name="C")
    assert _alias_ok([C], [A, B, C]) == [[0, 2]]  # B is read at j, not at (i, j)
    T = te.compute((8, 16), lambda i, j: A[j, i], name="T")
    assert _alias_ok([T], [A, T]) == []


def test_alias_ok_refused_when_an_element_is_written_twice():
    k = te.reduce_axis((0, 4), name="k")
    A = te.placeholder((8,), name="A")
    C = te.compute((8,), lambda i: te.sum(A[i] * 2.0, axis=k), name="C")
    assert _alias_ok([C], [A, C]) == []  # C[i] is written 1 + 4 times, reading A[i] each time


def test_alias_ok_for_fused_split_and_parallel_loops():
    A = te.placeholder((37, 100), name="A")
    C = te.compute((37, 100), lambda i, j: A[i, j] * 2.0, name="C")

    def schedule(s):
        fused = s[C].fuse(*C.op.axis)
        outer, inner = s[C].split(fused, factor=16)
        s[C].vectorize(inner)
        s[C].parallel(outer)

    assert _alias_ok([C], [A, C], schedule) == [[0, 1]]
    f = _build([C], [A, C], "k", schedule)
    a = RNG.standard_normal((37, 100)).astype("float32")
    want = 2 * a
    f(a, a)
    np.testing.assert_allclose(a, want)


def test_relax_vm_gives_the_same_dlpack_advice():
    torch = pytest.importorskip("torch")
    from minitvm import relax
    from minitvm.relax import op
    from minitvm.relax.vm import VirtualMachine, build

    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(op.add(x, x))
        bb.emit_func_output(out)
    vm = VirtualMachine(build(bb.get()))
    np.testing.assert_array_equal(vm["main"](torch.ones(4)).numpy(), 2 * np.ones(4))
    with pytest.raises(
        ArgumentError,
        match=r"calling relax function 'main': argument 'x' \(position 0\) is a Tensor of dtype "
        r"torch.bfloat16, which cannot be read through DLPack .*; convert it to float32 first",
    ):
        vm["main"](torch.ones(4, dtype=torch.bfloat16))


def test_uint64_scalars_take_the_whole_range():
    b, n = te.var("b", "uint64"), te.var("n")
    A = te.placeholder((n,), "uint64", name="A")
    C = te.compute((n,), lambda i: A[i] & b, name="C")
    f = tvm.build(te.create_schedule(C.op), [A, b, C])
    a = np.array([2**64 - 1, 2**63 + 7, 5, 0], dtype="uint64")
    c = np.zeros(4, "uint64")
    f(a, 2**63 + 5, c)  # above int64's range: passed as its 64-bit pattern
    np.testing.assert_array_equal(c, a & np.uint64(2**63 + 5))
    with pytest.raises(ArgumentError, match=r"does not fit in uint64 \[0, 18446744073709551615\]"):
        f(a, 2**64, c)
    with pytest.raises(ArgumentError, match="does not fit in uint64"):
        f(a, -1, c)
