"""The argument-checking wrapper: good calls, and every error path with its message."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llvm_kernels import ADD_INFO, ADD_IR, AXPK_INFO, build_result

from minitvm.error import ArgumentError, DTypeError, MiniTVMError, RuntimeError_, ShapeError
from minitvm.runtime import Module
from minitvm.runtime import ndarray as nd

RNG = np.random.default_rng(1)


def _vectors(n, dtype="float32"):
    return [RNG.standard_normal(n).astype(dtype) for _ in range(2)] + [np.zeros(n, dtype)]


@pytest.mark.parametrize("n", [1, 4, 1000])
def test_add_on_ndarrays(add_module, n):
    a, b, _ = _vectors(n)
    A, B, C = nd.array(a), nd.array(b), nd.empty(n)
    add_module(A, B, C)
    np.testing.assert_allclose(C.numpy(), a + b)


def test_add_on_numpy_arrays_is_zero_copy(add_module):
    a, b, c = _vectors(7)
    add_module["add"](a, b, c)
    np.testing.assert_allclose(c, a + b)


@pytest.fixture(scope="module")
def written_module():
    """The hand-written kernels with what codegen would say: which params they write and
    which (input, output) pairs may be one array (both are elementwise)."""
    add = dict(ADD_INFO, writes=[2], alias_ok=[[0, 2], [1, 2]])
    axpk = dict(AXPK_INFO, writes=[1], alias_ok=[[0, 1]])
    return Module(build_result(ADD_IR, [add, axpk]))


def test_read_only_and_empty_numpy_inputs(written_module):
    a, b, c = _vectors(5)
    a.flags.writeable = False
    written_module["add"](a, b, c)
    np.testing.assert_allclose(c, a + b)
    empty = np.zeros(0, "float32")
    written_module["add"](empty, empty, empty)


def test_without_writes_metadata_every_buffer_counts_as_written(add_module):
    a, b, c = _vectors(5)
    a.flags.writeable = False
    with pytest.raises(ArgumentError, match=r"argument 'A' \(position 0\) is read-only"):
        add_module["add"](a, b, c)


def test_numpy_subclasses_and_scalars_are_converted(add_module):
    X = RNG.standard_normal((3, 6))
    Y = np.zeros((3, 6))
    add_module["axpk"](X.view(np.recarray).view(np.matrix), Y, np.float64(2.0), np.int32(1))
    np.testing.assert_allclose(Y, 2.0 * X + 1)


def test_scalar_params_and_expression_dims(add_module):
    X = RNG.standard_normal((3, 6))
    Y = np.zeros((3, 6))
    add_module["axpk"](nd.array(X), Y, 0.5, 4)
    np.testing.assert_allclose(Y, 0.5 * X + 4)
    add_module["axpk"](X, Y, 2, -0)  # an int for a float scalar is fine
    np.testing.assert_allclose(Y, 2 * X)


def test_failed_assertion_in_native_code_names_the_function(add_module):
    X = np.zeros((2, 4))
    with pytest.raises(
        MiniTVMError,
        match=r"calling 'axpk': an assertion in the compiled code failed \(return code 1\)",
    ):
        add_module["axpk"](X, X.copy(), 1.0, -1)


def test_wrong_argument_count(add_module):
    a, b, _ = _vectors(4)
    with pytest.raises(
        ArgumentError, match=r"calling 'add': expected 3 arguments \(A, B, C\), got 2"
    ):
        add_module(a, b)


def test_wrong_argument_kind(add_module):
    a, _, c = _vectors(4)
    with pytest.raises(
        ArgumentError,
        match=r"argument 'B' \(position 1\) must be a tvm.nd.NDArray or numpy.ndarray, got list",
    ):
        add_module(a, [1.0, 2.0, 3.0, 4.0], c)


def test_wrong_dtype(add_module):
    a, b, c = _vectors(4)
    with pytest.raises(
        DTypeError,
        match=r"calling 'add': argument 'C' \(position 2\) has dtype float64, expected float32; convert with .astype\('float32'\)",
    ):
        add_module(a, b, c.astype("float64"))


def test_wrong_ndim(add_module):
    a, b, c = _vectors(4)
    with pytest.raises(
        ShapeError,
        match=r"argument 'A' \(position 0\) has shape \(2, 2\), expected \(n,\): expected 1 dimensions, got 2",
    ):
        add_module(a.reshape(2, 2), b, c)


def test_symbolic_dim_mismatch_names_where_it_was_set(add_module):
    a, b, c = _vectors(4)
    with pytest.raises(
        ShapeError,
        match=r"calling 'add': argument 'B' \(position 1\) has shape \(3,\), expected \(n,\): "
        r"dim 0 must equal n = 4 \(set by argument 'A' dim 0\)\.",
    ):
        add_module(nd.array(a), nd.array(b[:3]), nd.array(c))


def test_expression_dim_mismatch(add_module):
    with pytest.raises(
        ShapeError,
        match=r"argument 'X' \(position 0\) has shape \(2, 5\), expected \(m, m \* 2\): dim 1 must equal m \* 2 = 4\.",
    ):
        add_module["axpk"](np.zeros((2, 5)), np.zeros((2, 4)), 1.0, 1)


def test_non_contiguous_numpy_is_refused(add_module):
    a, b, c = _vectors(8)
    with pytest.raises(
        ArgumentError,
        match=r"argument 'A' \(position 0\) is not C-contiguous .*np.ascontiguousarray\(A\)",
    ):
        add_module(a[::2], b[:4], c[:4])


@pytest.mark.parametrize(
    "alpha, k, match",
    [
        ("2", 1, r"argument 'alpha' \(position 2\) must be a number \(float64\), got str"),
        (1.0, 1.5, r"argument 'k' \(position 3\) must be an int \(int32\), got float"),
        (1.0, 2**40, r"argument 'k' \(position 3\) = 1099511627776 does not fit in int32"),
    ],
)
def test_bad_scalars(add_module, alpha, k, match):
    X = np.zeros((2, 4))
    with pytest.raises(ArgumentError, match=match):
        add_module["axpk"](X, X.copy(), alpha, k)


def test_static_dim_mismatch_message():
    info = {
        "name": "add",
        "params": [
            {"name": "A", "kind": "buffer", "dtype": "float32", "shape": [500, 784]},
            {"name": "B", "kind": "buffer", "dtype": "float32", "shape": [500, 784]},
            {"name": "C", "kind": "buffer", "dtype": "float32", "shape": [500, 784]},
        ],
        "sym_vars": [],
        "writes": [2],
    }
    ir = ADD_IR.replace("%n = load i64, ptr %scalars", "%n = add i64 0, 392000")
    mod = Module(build_result(ir.split("; Y[i, j]")[0], [info]))
    a = np.ones((500, 784), "float32")
    c = np.zeros_like(a)
    mod(a, a, c)
    assert c.sum() == 2 * a.size
    with pytest.raises(
        ShapeError,
        match=r"calling 'add': argument 'B' \(position 1\) has shape \(784, 500\), expected \(500, 784\): dim 0 must be 500\.",
    ):
        mod(a, np.ones((784, 500), "float32"), c)


def test_concurrent_calls_from_python_threads(add_module):
    n = 256
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        a, b = rng.standard_normal(n).astype("float32"), rng.standard_normal(n).astype("float32")
        A, B, C = nd.array(a), nd.array(b), nd.empty(n)
        for _ in range(300):
            add_module(A, B, C)
            if not np.array_equal(C.numpy(), a + b):
                errors.append(seed)
                return

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_checker_source_is_inspectable_and_positional(add_module):
    src = add_module["add"].checker_source
    assert src.startswith("def fast(*args):") and "# argument 1: buffer slot 1" in src
    for name in ("fast_add", "'add'", "'A'", "'B'", "'n'", "float32"):  # no metadata in code
        assert name not in src


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 50), m=st.integers(0, 50), which=st.integers(1, 2))
def test_symbolic_dims_must_agree(add_module, n, m, which):
    """Any n works; a mismatching length in B or C is always caught before native code."""
    arrays = [np.full(n, 1.5, "float32"), np.full(n, 2.0, "float32"), np.zeros(n, "float32")]
    arrays[which] = np.zeros(m, "float32")
    if n == m:
        add_module(*arrays)
        np.testing.assert_array_equal(arrays[2], arrays[0] + arrays[1])
    else:
        name = "BC"[which - 1]
        with pytest.raises(ShapeError, match=f"argument '{name}' .* dim 0 must equal n = {n}"):
            add_module(*arrays)


def _add_variant(shapes, extra_params=(), sym_vars=()):
    vec = {"kind": "buffer", "dtype": "float32"}
    params = [dict(vec, name=n, shape=s) for n, s in zip("ABC", shapes)] + list(extra_params)
    info = {"name": "add", "params": params, "sym_vars": list(sym_vars), "writes": [2]}
    return Module(build_result(ADD_IR.split("; Y[i, j]")[0], [info]))


def test_shape_may_name_an_int_scalar_param():
    n_param = {"name": "n", "kind": "scalar", "dtype": "int32"}
    mod = _add_variant([["n"], ["n"], ["n"]], [n_param])
    a = np.arange(4, dtype="float32")
    c = np.zeros(4, "float32")
    mod(a, a, c, 4)
    np.testing.assert_array_equal(c, 2 * a)
    with pytest.raises(
        ShapeError, match=r"argument 'A' \(position 0\) .* dim 0 must equal n = 5\."
    ):
        mod(a, a, c, 5)
    with pytest.raises(ArgumentError, match=r"argument 'n' \(position 3\) must be an int"):
        mod(a, a, c, "4")


def test_min_max_expressions_in_shapes():
    sym = {"name": "n", "dtype": "int32", "param": 0, "dim": 0}
    mod = _add_variant([["n"], ["max(n, 3)"], ["min(n, 100) * 1"]], sym_vars=[sym])
    a, b, c = np.ones(2, "float32"), np.ones(3, "float32"), np.zeros(2, "float32")
    mod(a, b, c)
    np.testing.assert_array_equal(c, [2, 2])
    with pytest.raises(
        ShapeError, match=r"expected \(max\(n, 3\),\): dim 0 must equal max\(n, 3\) = 3\."
    ):
        mod(a, np.ones(2, "float32"), c)


@pytest.mark.parametrize(
    "entry, match",
    [
        ('__import__("os")', r"shape entry '__import__\(\"os\"\)' uses Call"),
        ("m + 1", r"shape entry 'm \+ 1' uses unknown name 'm'"),
        ("n + 'x'", r"shape entry \"n \+ 'x'\" uses Constant"),
        ("n * 1.5", r"uses Constant"),
        ("n ** 2", r"uses BinOp"),
        ("n.real", r"uses Attribute"),
        ("(lambda: 0)()", r"uses Call"),
        ("n * " + "9" * 30, r"uses Constant"),
        ("(" * 300 + "n" + ")" * 300, r"is not an expression"),
        ("-" * 900 + "n", r"nests deeper than 64"),
        ("n + " * 300 + "n", r"is too long"),
    ],
)
def test_unsafe_shape_expressions_are_refused(entry, match):
    sym = {"name": "n", "dtype": "int32", "param": 0, "dim": 0}
    with pytest.raises(RuntimeError_, match=r"function 'add': its metadata is invalid: .*" + match):
        _add_variant([["n"], [entry], ["n"]], sym_vars=[sym])
