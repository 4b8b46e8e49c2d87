"""The TVMScript printer: expressions as Python, statements and PrimFuncs as TVMScript."""

import pytest

from minitvm import tir
from minitvm.ir import IRModule
from minitvm.tir import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    Cast,
    Div,
    Evaluate,
    FloatImm,
    FloorDiv,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IterType,
    IterVar,
    LetStmt,
    Mod,
    PrimFunc,
    Range,
    Var,
    decl_buffer,
)


def _matmul(init=True, reads_writes=True, name="mm"):
    A, B, C = (decl_buffer((128, 128), "float32", n) for n in "ABC")
    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    ivs = (
        IterVar(Range.from_min_extent(0, 128), vi, IterType.DataPar),
        IterVar(Range.from_min_extent(0, 128), vj, IterType.DataPar),
        IterVar(Range.from_min_extent(0, 128), vk, IterType.CommReduce),
    )
    body = BufferStore(C, C[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj))
    init_stmt = BufferStore(C, FloatImm("float32", 0), (vi, vj)) if init else None
    block = Block(ivs, (), (), "C", body, init_stmt)
    if reads_writes:
        from minitvm.tir.analysis.region import infer_access_regions

        reads, writes = infer_access_regions(block)
        block = block.replace(reads=reads, writes=writes)
    realize = BlockRealize((i, j, k), True, block)
    loop = For(
        i,
        0,
        128,
        ForKind.SERIAL,
        For(j, 0, 128, ForKind.SERIAL, For(k, 0, 128, ForKind.SERIAL, realize)),
    )
    root = BlockRealize((), True, Block((), (), (), "root", loop))
    params = tuple(Var(n, "handle") for n in "ABC")
    func = PrimFunc(
        params,
        root,
        None,
        dict(zip(params, (A, B, C))),
        {"global_symbol": name, "tir.noalias": True},
    )
    return func, loop, realize


# ----------------------------------------------------------------------------- expressions


@pytest.mark.parametrize(
    "build, text",
    [
        (lambda i, j, A: A[i, j] + tir.const(1.0, "float32"), "A[i, j] + T.float32(1)"),
        (lambda i, j, A: (i + j) * 4, "(i + j) * 4"),
        (lambda i, j, A: i + j * 4, "i + j * 4"),
        (lambda i, j, A: i - (j - 1), "i - (j - 1)"),
        (lambda i, j, A: i - j - 1, "i - j - 1"),
        (lambda i, j, A: i // 4, "i // 4"),
        (lambda i, j, A: i % 4, "i % 4"),
        (lambda i, j, A: Div(i, j), "T.truncdiv(i, j)"),
        (lambda i, j, A: Mod(i, j), "T.truncmod(i, j)"),
        (lambda i, j, A: FloorDiv(i + 1, j), "(i + 1) // j"),
        (lambda i, j, A: tir.max(i, j), "T.max(i, j)"),
        (lambda i, j, A: tir.min(i, j), "T.min(i, j)"),
        (lambda i, j, A: tir.exp(A[i, j]), "T.exp(A[i, j])"),
        (lambda i, j, A: Cast("float64", A[i, j]), 'T.Cast("float64", A[i, j])'),
        (
            lambda i, j, A: tir.if_then_else(i < j, A[i, j], 0.0),
            "T.if_then_else(i < j, A[i, j], T.float32(0))",
        ),
        (lambda i, j, A: tir.Select(i < j, i, j), "T.Select(i < j, i, j)"),
        (lambda i, j, A: tir.likely(i < j), "T.likely(i < j)"),
        (lambda i, j, A: tir.Ramp(i, 1, 4), "T.Ramp(i, 1, 4)"),
        (lambda i, j, A: tir.Broadcast(A[i, j], 8), "T.Broadcast(A[i, j], 8)"),
        (lambda i, j, A: IntImm("int64", 5), "T.int64(5)"),
        (lambda i, j, A: IntImm("int32", -5), "-5"),
        (lambda i, j, A: IntImm("bool", 1), "True"),
        (lambda i, j, A: FloatImm("float32", 0.5), "T.float32(0.5)"),
        (lambda i, j, A: FloatImm("float64", float("inf")), 'T.float64("inf")'),
        (lambda i, j, A: (i < j) & (j < 4), "i < j and j < 4"),
        (lambda i, j, A: (i < j) | ((j < 4) & (i > 0)), "i < j or j < 4 and i > 0"),
        (lambda i, j, A: ((i < j) | (j < 4)) & (i > 0), "(i < j or j < 4) and i > 0"),
        (lambda i, j, A: ~(i < j), "not i < j"),
        (lambda i, j, A: tir.EQ(tir.LT(i, j), tir.const(True)), "(i < j) == True"),
    ],
)
def test_expression_prints_as_python(build, text):
    A = decl_buffer((4, 4), "float32", "A")
    assert str(build(Var("i"), Var("j"), A)) == text


def test_two_vars_with_one_name_print_distinct_names():
    a, b = Var("i"), Var("i")
    assert str(a + b) == "i + i_1"


# ----------------------------------------------------------------------------- functions


def test_prim_func_prints_matmul_as_tvmscript():
    func, _, _ = _matmul()
    text = func.script()
    assert text.startswith("# from minitvm.script import tir as T\n\n@T.prim_func\n")
    assert (
        'def mm(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), '
        'C: T.Buffer((128, 128), "float32")):' in text
    )
    assert 'T.func_attr({"tir.noalias": True})' in text
    assert '# with T.block("root"):' in text
    assert "for i, j, k in T.grid(128, 128, 128):" in text
    assert 'vi, vj, vk = T.axis.remap("SSR", [i, j, k])' in text
    assert "with T.init():\n                C[vi, vj] = T.float32(0)" in text
    assert "C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]" in text
    # regions equal to the inferred ones are not printed
    assert "T.reads" not in text and "T.writes" not in text
    assert str(func) == text and repr(func) == text


def test_declared_regions_print_when_they_differ_from_inferred():
    func, _, _ = _matmul(reads_writes=False)
    text = func.script()
    assert "T.reads()" in text and "T.writes()" in text


def test_private_function_and_other_symbol():
    func, _, _ = _matmul()
    assert "@T.prim_func(private=True)\ndef main(" in func.replace(attrs={}).script()
    other = func.with_attr("global_symbol", "other")
    assert (
        'T.func_attr({"global_symbol": "other", "tir.noalias": True})'
        in IRModule({"mm": other}).script()
    )


def test_highlight_marks_loop_and_block_lines():
    func, loop, realize = _matmul()
    text = func.script(highlight={realize: "this block", loop.body: ""})
    lines = text.splitlines()
    assert "    for i in range(128):" in lines
    assert "        for j, k in T.grid(128, 128):  # <--- here" in lines
    assert '            with T.block("C"):  # <--- here: this block' in lines
    assert func.script(mark=[loop]).count("# <--- here") == 1


def test_loop_kinds_and_annotations():
    A = decl_buffer((64,), "float32", "A")
    i = Var("i")
    store = BufferStore(A, FloatImm("float32", 1.0), (i,))
    cases = {
        ForKind.PARALLEL: "for i in T.parallel(64):",
        ForKind.VECTORIZED: "for i in T.vectorized(64):",
        ForKind.UNROLLED: "for i in T.unroll(64):",
    }
    for kind, line in cases.items():
        assert line in str(For(i, 0, 64, kind, store))
    assert "for i in T.serial(2, 66):" in str(For(i, 2, 64, ForKind.SERIAL, store))
    annotated = For(i, 0, 64, ForKind.SERIAL, store, annotations={"pragma_unroll": 4})
    assert 'for i in T.serial(64, annotations={"pragma_unroll": 4}):' in str(annotated)
    tx = IterVar(None, Var("threadIdx.x"), IterType.ThreadIndex, "threadIdx.x")
    bound = For(i, 0, 64, ForKind.THREAD_BINDING, store, tx)
    assert 'for i in T.thread_binding(64, thread="threadIdx.x"):' in str(bound)


def test_if_let_allocate_evaluate():
    A = decl_buffer((8,), "float32", "A")
    i, x = Var("i"), Var("x")
    stmt = IfThenElse(
        i < 4,
        LetStmt(x, i * 2, BufferStore(A, FloatImm("float32", 0.0), (x,))),
        Evaluate(IntImm("int32", 0)),
    )
    text = str(For(i, 0, 8, ForKind.SERIAL, stmt))
    assert "if i < 4:\n        x: T.int32 = i * 2\n        A[x] = T.float32(0)\n    else:\n" in text
    assert "T.evaluate(0)" in text
    data = Var("B", "handle")
    B = decl_buffer((16,), "float32", "B", data=data)
    alloc = Allocate(
        data,
        "float32",
        (16,),
        True,
        BufferStore(B, FloatImm("float32", 1.0), (0,)),
        {"storage_scope": "global"},
    )
    text = str(alloc)
    assert 'B_1 = T.allocate([16], "float32", "global")' in text
    assert 'B = T.Buffer((16,), "float32", data=B_1)' in text


def test_non_remap_bindings_and_predicate():
    A = decl_buffer((128,), "float32", "A")
    io, ii = Var("i_0"), Var("i_1")
    vi = Var("vi")
    block = Block(
        (IterVar(Range.from_min_extent(0, 128), vi, IterType.DataPar),),
        (),
        (),
        "A",
        BufferStore(A, FloatImm("float32", 0.0), (vi,)),
    )
    realize = BlockRealize((io * 4 + ii,), io * 4 + ii < 100, block)
    text = str(For(io, 0, 32, ForKind.SERIAL, For(ii, 0, 4, ForKind.SERIAL, realize)))
    assert "vi = T.axis.spatial(128, i_0 * 4 + i_1)" in text
    assert "T.where(i_0 * 4 + i_1 < 100)" in text


def test_symbolic_shapes_declare_vars_and_match_buffers():
    n = Var("n")
    X = decl_buffer((n, 4), "float32", "X")
    i = Var("i")
    p = Var("X", "handle")
    func = PrimFunc(
        (p,),
        For(i, 0, n, ForKind.SERIAL, BufferStore(X, X[i, 0], (i, 1))),
        None,
        {p: X},
        {"global_symbol": "f"},
    )
    text = func.script()
    assert "def f(var_X: T.handle):\n    n = T.int32()\n" in text
    assert 'X = T.match_buffer(var_X, (n, 4), "float32")' in text
    scalar = PrimFunc((n, p), func.body, None, {p: X}, {"global_symbol": "f"})
    assert 'def f(n: T.int32, X: T.Buffer((n, 4), "float32")):' in scalar.script()


def test_ir_module_prints_every_function_as_a_method():
    f1, _, _ = _matmul(name="a")
    f2, _, _ = _matmul(name="b")
    text = IRModule({"a": f1, "b": f2}).script()
    assert text.startswith("# from minitvm.script import ir as I\n")
    assert "@I.ir_module\nclass Module:\n    @T.prim_func\n    def a(" in text
    assert "\n    @T.prim_func\n    def b(" in text


def test_inferred_regions_do_not_leak_variables_bound_inside_the_block():
    """A block's inferred region covers its inner loops and launched threads (their variables
    do not exist outside the block): A[i] under `for i in range(8)` is A[0:8]."""
    import minitvm as tvm

    src = '''
@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    with T.block("root"):
        for i in range(4):
            A[i] = T.float32(1)
            A[i + 4] = T.float32(1)
        tx = T.launch_thread("threadIdx.x", 8)
        B[tx] = T.float32(2)
'''
    writes = tvm.script.from_source(src).body.block.writes
    shown = sorted(str(w) for w in writes)
    assert shown == ["A[0:8]", "B[0:8]"], shown
