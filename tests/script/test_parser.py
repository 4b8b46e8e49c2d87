"""TVMScript parser: decorators, constructs, print → parse round trips and ParseErrors."""

import linecache

import numpy as np
import pytest

import minitvm
import minitvm.driver
import minitvm.runtime.ndarray
from minitvm import tir
from minitvm.error import ParseError
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.script import from_source
from minitvm.script import ir as I
from minitvm.script import tir as T


def _roundtrip(obj):
    again = from_source(obj.script())
    if isinstance(obj, IRModule):
        assert sorted(again) == sorted(obj)
        for name in obj:
            assert_structural_equal(obj[name], again[name])
    else:
        assert_structural_equal(obj, again)
    return again


# ----------------------------------------------------------------------------- the MLC programs


@I.ir_module
class MyModule:
    @T.prim_func
    def mm_relu(
        A: T.Buffer[(128, 128), "float32"],  # noqa: F821 - the 2022 subscript form
        B: T.Buffer[(128, 128), "float32"],  # noqa: F821 - the 2022 subscript form
        C: T.Buffer[(128, 128), "float32"],  # noqa: F821 - the 2022 subscript form
    ):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                vk = T.axis.reduce(128, k)
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


def test_mlc_mm_relu_parses_into_blocks_Y_and_C():
    func = MyModule["mm_relu"]
    assert isinstance(MyModule, IRModule) and list(MyModule) == ["mm_relu"]
    assert func.attrs["global_symbol"] == "mm_relu" and func.attrs["tir.noalias"] is True
    root = func.body.block
    assert root.name_hint == "root" and [b.name for b in root.alloc_buffers] == ["Y"]
    text = MyModule.script()
    assert 'with T.block("Y"):' in text and 'with T.block("C"):' in text
    assert 'vi, vj, vk = T.axis.remap("SSR", [i, j, k])' in text
    _roundtrip(MyModule)


def test_mlc_mm_relu_builds_and_matches_numpy():
    lib = minitvm.driver.build(MyModule, target="llvm")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128)).astype("float32")
    b = rng.standard_normal((128, 128)).astype("float32")
    arrays = [minitvm.runtime.ndarray.array(x) for x in (a, b, np.zeros((128, 128), "float32"))]
    lib["mm_relu"](*arrays)
    np.testing.assert_allclose(arrays[2].numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


SEED_MODULE = """
@tvm.script.ir_module
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
    def linear0(x: T.handle,
                w: T.handle,
                b: T.handle,
                z: T.handle):
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
                Z[vi, vj] =  Y[vi, vj] + B[vj]
"""

SEED_PRINTED = """
# from tvm.script import tir as T
@T.prim_func
def before_fuse(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    # with T.block("root"):
    for i_j_fused in range(16384):
        with T.block("B"):
            vi = T.axis.spatial(128, i_j_fused // 128)
            vj = T.axis.spatial(128, i_j_fused % 128)
            T.reads(A[vi, vj])
            T.writes(B[vi, vj])
            B[vi, vj] = A[vi, vj] * T.float32(2)
"""

SEED_HANDLES = """
@T.prim_func
def before_inline(a: T.handle, c: T.handle) -> None:
    A = T.match_buffer(a, (128, 128))
    B = T.alloc_buffer((128, 128))
    C = T.match_buffer(c, (128, 128))
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0
"""


def test_seed_module_with_symbolic_int64_shapes():
    mod = from_source(SEED_MODULE)
    linear = mod["linear0"]
    n = linear.buffer_map[linear.params[1]].shape[0]
    assert n.dtype == "int64" and isinstance(n, tir.Var)
    assert linear.buffer_map[linear.params[2]].shape[0] is n
    assert "n = T.int64()" in mod.script()
    _roundtrip(mod)


def test_seed_printed_forms_parse_and_round_trip():
    fused = from_source(SEED_PRINTED)
    assert fused.attrs["global_symbol"] == "before_fuse"
    _roundtrip(fused)
    inline = from_source(SEED_HANDLES)
    A = inline.buffer_map[inline.params[0]]
    assert A.dtype == "float32" and A.name == "A"
    block_b = inline.body.block.body.seq[0].body.body.block
    assert isinstance(block_b.body.value.b, tir.FloatImm)  # `* 2.0` on float32 is T.float32(2)
    _roundtrip(inline)


def test_seed_handles_builds_and_matches_numpy():
    lib = minitvm.driver.build(
        IRModule({"before_inline": from_source(SEED_HANDLES)}), target="llvm"
    )
    a = np.random.default_rng(1).standard_normal((128, 128)).astype("float32")
    A, C = minitvm.runtime.ndarray.array(a), minitvm.runtime.ndarray.array(np.zeros_like(a))
    lib["before_inline"](A, C)
    np.testing.assert_allclose(C.numpy(), a * 2 + 1, rtol=1e-6)


# ----------------------------------------------------------------------------- decorator contexts


def test_prim_func_inside_a_function_sees_closure_constants():
    n = 16
    scale = 3.0

    @T.prim_func
    def scale_vec(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
        for i in range(n):
            with T.block("B"):
                vi = T.axis.spatial(n, i)
                B[vi] = A[vi] * scale

    assert isinstance(scale_vec, tir.PrimFunc)
    assert scale_vec.buffer_map[scale_vec.params[0]].shape[0].value == 16
    assert "B[vi] = A[vi] * T.float32(3)" in scale_vec.script()
    _roundtrip(scale_vec)


def test_ir_module_inside_a_function_and_private_functions():
    size = 8

    @I.ir_module
    class Mod:
        @T.prim_func(private=True)
        def helper(A: T.Buffer((size,), "float32")):
            for i in T.serial(size):
                A[i] = T.float32(0)

        @T.prim_func
        def main(A: T.Buffer((size,), "float32")):
            for i in T.parallel(size):
                A[i] = A[i] + T.float32(1)

    assert "global_symbol" not in Mod["helper"].attrs
    assert Mod["main"].attrs["global_symbol"] == "main"
    assert "@T.prim_func(private=True)\n    def helper(" in Mod.script()
    _roundtrip(Mod)


def test_notebook_cell_source_comes_from_linecache():
    cell = (
        "@T.prim_func\n"
        "def cell_func(A: T.Buffer((4,), 'float32')):\n"
        "    for i in range(4):\n"
        "        A[i] = T.float32(1)\n"
    )
    filename = "<ipython-input-7-0123456789ab>"
    linecache.cache[filename] = (len(cell), None, cell.splitlines(keepends=True), filename)
    try:
        scope = {"T": T}
        exec(compile(cell, filename, "exec"), scope)  # noqa: S102 - simulates a notebook cell
    finally:
        del linecache.cache[filename]
    assert isinstance(scope["cell_func"], tir.PrimFunc)
    assert scope["cell_func"].attrs["global_symbol"] == "cell_func"


def test_tvm_script_ir_module_alias():
    from minitvm import script

    assert script.ir_module is I.ir_module
    mod = from_source(SEED_MODULE.replace("@tvm.script.ir_module", "@I.ir_module"))
    assert list(mod) == ["relu0", "linear0"]


# ----------------------------------------------------------------------------- constructs


def test_constructs_round_trip():
    @T.prim_func
    def everything(a: T.handle, B: T.Buffer((16, 16), "float32"), n: T.int32):
        m = T.int32()
        A = T.match_buffer(a, (m, 16), "float32")
        T.func_attr({"tir.noalias": True, "note": "x"})
        for i in T.unroll(4):
            for j in T.vectorized(4):
                B[i, j] = T.Cast("float32", i) + T.float32(0.5)
        for i in T.thread_binding(16, thread="threadIdx.x"):
            for j in T.serial(2, 16, annotations={"pragma": 1}):
                if i < j and not i == 3:  # noqa: SIM201 - exercises Not
                    B[i, j] = T.if_then_else(i < n, A[i, j], T.float32(0))
                else:
                    B[i, j] = T.Select(j > 4, T.exp(A[i, j]), T.sqrt(A[i, j]))
        for i in range(16):
            x: T.int32 = i * 2 + 1
            B[i, 0] = T.Cast("float32", T.truncdiv(x, 3) + T.truncmod(x, 3) + x // 2 + x % 2)
            T.evaluate(T.likely(x < 4))
        for i in range(m):
            buf = T.allocate([16], "float32", "global")
            tmp = T.Buffer((16,), "float32", data=buf)
            tmp[0] = T.max(A[i, 0], T.min(A[i, 1], T.float32(-1)))
            A[i, 0] = tmp[0] + T.abs(A[i, 2]) + T.floor(A[i, 3]) + T.tanh(A[i, 4])
            A[i, 1] += T.sigmoid(A[i, 5]) * T.log(A[i, 6]) - T.ceil(A[i, 7]) / T.float32(2)
        B[0, 0] = T.Cast("float32", T.int64(5) + T.Cast("int64", n))

    text = everything.script()
    for line in [
        "for i in T.unroll(4):",
        "for j in T.vectorized(4):",
        'for i in T.thread_binding(16, thread="threadIdx.x"):',
        'for j in T.serial(2, 16, annotations={"pragma": 1}):',
        "x: T.int32 = i * 2 + 1",
        'buf = T.allocate([16], "float32", "global")',
        "A[i, 1] = A[i, 1] + (T.sigmoid(A[i, 5]) * T.log(A[i, 6]) - T.ceil(A[i, 7]) / T.float32(2))",
        "if i < j and not i == 3:",
        "else:",
        "m = T.int32()",
    ]:
        assert line in text, line
    _roundtrip(everything)


def test_where_reads_writes_block_attr_and_inner_alloc():
    @T.prim_func
    def tiled(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
        for io, ii in T.grid(25, 4):
            with T.block("B"):
                vi = T.axis.spatial(100, io * 4 + ii)
                T.where(io * 4 + ii < 100)
                T.reads(A[vi])
                T.writes(B[vi])
                T.block_attr({"meta_schedule.tiling": "SSR"})
                tmp = T.alloc_buffer((1,), "float32", scope="local")
                tmp[0] = A[vi] * T.float32(2)
                B[vi] = tmp[0]
        for i in range(4):
            with T.block("slices"):
                vi = T.axis.spatial(4, i)
                T.reads(A[vi * 25 : vi * 25 + 25])
                T.writes(B[vi])
                B[vi] = A[vi * 25]

    realize = tiled.body.block.body.seq[0].body.body
    assert "T.where(io * 4 + ii < 100)" in tiled.script()
    assert realize.block.annotations["meta_schedule.tiling"] == "SSR"
    assert realize.block.alloc_buffers[0].scope() == "local"
    assert "T.reads(A[vi * 25:vi * 25 + 25])" in tiled.script()
    _roundtrip(tiled)


def test_omitted_reads_writes_are_inferred():
    func = MyModule["mm_relu"]
    block_y = func.body.block.body.seq[0].body.body.body.block
    from minitvm.tir.analysis.region import infer_access_regions

    reads, _ = infer_access_regions(block_y)
    assert [r.buffer.name for r in block_y.reads] == [r.buffer.name for r in reads]
    assert [w.buffer.name for w in block_y.writes] == ["Y"]


def test_python_level_if_and_names_are_evaluated_at_parse_time():
    use_relu = False

    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in range(4):
            if use_relu:
                A[i] = T.max(A[i], T.float32(0))
            else:
                A[i] = A[i] * T.float32(2)

    assert "T.max" not in f.script()


# ----------------------------------------------------------------------------- errors


def _error(src: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        from_source(src, "f.py")
    return info.value


def _where(err: ParseError) -> tuple[int, int]:
    return err.lineno, err.col


ERROR_CASES = [
    (
        "unknown T name",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    for i in range(4):\n"
            "        A[i] = T.foo(1)\n"
        ),
        r"f\.py:4:15: error: unknown name 'T\.foo' in TVMScript",
        (4, 15),
    ),
    (
        "wrong argument count",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    for i in range(4):\n"
            "        A[i] = T.max(A[i])\n"
        ),
        r"wrong arguments to T\.max",
        (4, 15),
    ),
    (
        "undefined variable",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    for i in range(4):\n"
            "        A[i] = x\n"
        ),
        r"undefined variable 'x'",
        (4, 15),
    ),
    (
        "remap kinds length",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4, 4), 'float32')):\n    for i, j in T.grid(4, 4):\n"
            "        with T.block('A'):\n            vi, vj = T.axis.remap('S', [i, j])\n"
            "            A[vi, vj] = T.float32(0)\n"
        ),
        r'T\.axis\.remap: kinds "S" has 1 letters but 2 loop variables',
        (5, 21),
    ),
    (
        "wrong number of indices",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4, 4), 'float32')):\n    for i in range(4):\n"
            "        A[i] = T.float32(0)\n"
        ),
        r"buffer 'A' has 2 dimensions but is indexed with 1 indices",
        (4, 8),
    ),
    (
        "wrong number of indices in a load",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4, 4), 'float32')):\n    for i in range(4):\n"
            "        A[i, 0] = A[i, 0, 1]\n"
        ),
        r"buffer 'A' has 2 dimensions but is indexed with 3 indices",
        (4, 18),
    ),
    (
        "while with a python condition",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    while True:\n"
            "        A[0] = T.float32(0)\n"
        ),
        r"unsupported Python syntax in TVMScript: while needs a TIR condition",
        (3, 10),
    ),
    (
        "try",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    try:\n        pass\n"
            "    except ValueError:\n        pass\n"
        ),
        r"unsupported Python syntax in TVMScript: try",
        (3, 4),
    ),
    (
        "list comprehension",
        "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    xs = [i for i in range(3)]\n",
        r"unsupported Python syntax in TVMScript: list comprehensions",
        (3, 9),
    ),
    (
        "set comprehension",  # (a lambda is TVMScript, as in TVM: T.comm_reducer's combiner)
        "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    g = {i for i in range(3)}\n",
        r"unsupported Python syntax in TVMScript: set comprehensions",
        (3, 8),
    ),
    (
        "loop target count",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    for i, j in T.grid(4, 4, 4):\n"
            "        pass\n"
        ),
        r"2 loop variables for 3 loops",
        (3, 8),
    ),
    (
        "axis outside a block",
        (
            "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    for i in range(4):\n"
            "        vi = T.axis.spatial(4, i)\n"
        ),
        r"T\.axis\.\* must be inside a T\.block",
        (4, 8),
    ),
]


@pytest.mark.parametrize("what, src, match, where", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_parse_errors_carry_file_line_column_and_caret(what, src, match, where):
    err = _error(src)
    assert isinstance(err, minitvm.MiniTVMError)
    with pytest.raises(ParseError, match=match):
        raise err
    assert _where(err) == where
    line, col = where
    text = str(err).splitlines()
    assert text[1] == src.splitlines()[line - 1]
    assert text[2] == " " * col + "^"


def test_error_from_a_decorated_function_points_into_this_file():
    with pytest.raises(ParseError, match=r"test_parser\.py:\d+:\d+: error: unknown name 'T\.nope'"):

        @T.prim_func
        def bad(A: T.Buffer((4,), "float32")):
            A[0] = T.nope(1)


def test_explicit_root_block_decl_buffer_attr_assert_while_round_trip():
    @T.prim_func
    def misc(A: T.Buffer((8,), "float32"), n: T.int32):
        with T.block("root"):
            T.reads(A[0:8])
            T.writes(A[0:8])
            for i in range(8):
                assert i < n, "i out of range"
                A[i] = T.float32(1)
            with T.attr(n, "pragma_note", 1):
                k: T.int32 = 0
                while k < n:
                    A[0] = A[0] + T.float32(1)
            p = T.allocate([8], "float32")
            V = T.decl_buffer((2, 4), "float32", data=p)
            V[1, 3] = A[7]

    root = misc.body.block
    assert root.name_hint == "root" and root.reads[0].region[0].extent.value == 8
    text = misc.script()
    assert 'with T.block("root"):' in text and "# with" not in text
    assert 'assert i < n, "i out of range"' in text
    assert "while k < n:" in text
    assert 'V = T.decl_buffer((2, 4), "float32", data=p)' in text
    _roundtrip(misc)


def test_int64_axes_size_vars_and_vector_ops_round_trip():
    n = tir.SizeVar("n")
    X = tir.decl_buffer((n,), "float32", "X")
    i = tir.Var("i", "int64")
    vi = tir.Var("vi", "int64")
    block = tir.Block(
        (
            tir.IterVar(
                tir.Range.from_min_extent(tir.IntImm("int64", 0), tir.IntImm("int64", 64)), vi, tir.IterType.DataPar
            ),
        ),
        (),
        (),
        "B",
        tir.BufferStore(X, tir.Cast("float32", vi), (tir.Cast("int32", vi),)),
    )
    realize = tir.BlockRealize((i * tir.IntImm("int64", 2),), True, block)
    loop = tir.For(i, 0, tir.IntImm("int64", 32), tir.ForKind.SERIAL, realize)
    vec = tir.BufferStore(X, tir.Broadcast(tir.FloatImm("float32", 1.0), 4), (tir.Ramp(0, 1, 4),))
    param = tir.Var("X", "handle")
    root = tir.BlockRealize((), True, tir.Block((), (), (), "root", tir.seq(loop, vec)))
    func = tir.PrimFunc((param,), root, None, {param: X}, {"global_symbol": "f"})
    text = func.script()
    assert "n = T.int32(is_size_var=True)" in text
    assert "vi = T.axis.spatial(T.int64(64), i * T.int64(2))" in text
    assert "X[T.Ramp(0, 1, 4)] = T.Broadcast(T.float32(1), 4)" in text
    _roundtrip(func)


def test_unsafe_python_is_not_reachable_from_script_text():
    err = _error("@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    x = open('f')\n")
    assert "undefined variable 'open'" in str(err)
    err = _error("@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    x = A.__class__\n")
    assert "private attribute '__class__'" in str(err)


def test_aliases_sblock_ramp_broadcast_and_int64_shapes():
    @T.prim_func
    def f(A: T.Buffer((T.int64(8),), "float32")):
        for i in range(T.int64(2)):
            with T.sblock("A"):
                vi = T.axis.spatial(T.int64(2), i)
                A[T.ramp(vi * T.int64(4), T.int64(1), 4)] = T.broadcast(T.float32(2), 4)

    block = f.body.block.body.body.block
    assert block.name_hint == "A"
    assert isinstance(block.body.indices[0], tir.Ramp) and block.body.value.lanes == 4
    assert f.buffer_map[f.params[0]].shape[0].dtype == "int64"
    _roundtrip(f)


def test_source_that_cannot_be_found_is_a_parse_error():
    scope = {"T": T}
    code = "@T.prim_func\ndef lost(A: T.Buffer((4,), 'float32')):\n    A[0] = T.float32(1)\n"
    with pytest.raises(ParseError, match="cannot find the source of 'lost'"):
        exec(compile(code, "<no-such-file>", "exec"), scope)  # noqa: S102


def test_tvm_script_ir_module_decorator_on_a_class():
    import minitvm as tvm

    @tvm.script.ir_module
    class Mod:
        @T.prim_func
        def add(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    B[vi] = A[vi] + T.float32(1)

    assert isinstance(Mod, IRModule) and list(Mod) == ["add"]
    _roundtrip(Mod)
