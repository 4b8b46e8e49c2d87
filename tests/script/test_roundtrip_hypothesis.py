"""Property: random PrimFuncs print as TVMScript and parse back structurally equal."""

from hypothesis import given, settings
from hypothesis import strategies as st

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.tir import (
    Block,
    BlockRealize,
    BufferStore,
    Cast,
    FloatImm,
    For,
    ForKind,
    IterType,
    IterVar,
    PrimFunc,
    Range,
    Var,
    decl_buffer,
)
from minitvm.tir.analysis.region import infer_access_regions

LEAF = st.one_of(
    st.tuples(st.just("load"), st.integers(0, 1)),
    st.tuples(st.just("const"), st.integers(-8, 8).map(lambda v: v / 4)),
    st.tuples(st.just("index")),
)
EXPR = st.recursive(
    LEAF,
    lambda sub: st.one_of(
        st.tuples(st.sampled_from(["add", "sub", "mul", "max", "min"]), sub, sub),
        st.tuples(st.sampled_from(["exp", "f64", "neg"]), sub),
        st.tuples(st.just("select"), sub, sub),
    ),
    max_leaves=6,
)
KINDS = st.sampled_from(
    [ForKind.SERIAL, ForKind.SERIAL, ForKind.PARALLEL, ForKind.UNROLLED, ForKind.VECTORIZED]
)


def _build_expr(recipe, loads, index):
    op = recipe[0]
    if op == "load":
        return loads[recipe[1] % len(loads)]
    if op == "const":
        return FloatImm("float32", recipe[1])
    if op == "index":
        return Cast("float32", index)
    args = [_build_expr(r, loads, index) for r in recipe[1:]]
    table = {
        "add": lambda a, b: tir.Add(a, b),
        "sub": lambda a, b: tir.Sub(a, b),
        "mul": lambda a, b: tir.Mul(a, b),
        "max": lambda a, b: tir.Max(a, b),
        "min": lambda a, b: tir.Min(a, b),
        "exp": tir.exp,
        "f64": lambda a: Cast("float32", Cast("float64", a)),
        "neg": lambda a: tir.Sub(FloatImm("float32", 0.0), a),
        "select": lambda a, b: tir.Select(tir.LT(index, 2), a, b),
    }
    return table[op](*args)


@st.composite
def prim_funcs(draw):
    symbolic = draw(st.booleans())
    ndim = draw(st.integers(1, 2))
    n = Var("n")
    shape = [n if symbolic and d == 0 else draw(st.integers(2, 6)) for d in range(ndim)]
    reduce = draw(st.integers(0, 4))  # 0: elementwise, else the reduction extent
    in_shape = shape + ([reduce] if reduce else [])
    inputs = [decl_buffer(tuple(in_shape), "float32", name) for name in ("A", "B")]
    out = decl_buffer(tuple(shape), "float32", "C")
    staged = draw(st.booleans())
    mid = decl_buffer(tuple(shape), "float32", "T_mid") if staged and not reduce else None

    def stage(name, srcs, dst, recipe, extents, reduce_extent):
        loops, loop_extents, ivs, values = [], [], [], []
        for d, ext in enumerate(extents):
            ivs.append(IterVar(Range.from_min_extent(0, ext), Var(f"v{d}"), IterType.DataPar))
            if isinstance(ext, int) and ext % 2 == 0 and draw(st.booleans()):
                outer, inner = Var(f"i{d}_0"), Var(f"i{d}_1")  # a split: non-remap binding
                loops += [outer, inner]
                loop_extents += [ext // 2, 2]
                values.append(tir.Add(tir.Mul(outer, 2), inner))
            else:
                loops.append(Var(f"i{d}"))
                loop_extents.append(ext)
                values.append(loops[-1])
        if reduce_extent:
            k = Var("k")
            loops.append(k)
            loop_extents.append(reduce_extent)
            ivs.append(IterVar(Range.from_min_extent(0, reduce_extent), Var("vk"), IterType.CommReduce))
            values.append(k)
        vs = [iv.var for iv in ivs]
        loads = [src[tuple(vs)] for src in srcs]
        value = _build_expr(recipe, loads, vs[0])
        spatial = tuple(vs[: len(extents)])
        init = None
        if reduce_extent:
            init = BufferStore(dst, FloatImm("float32", 0.0), spatial)
            value = tir.Add(dst[spatial], value)
        block = Block(tuple(ivs), (), (), name, BufferStore(dst, value, spatial), init)
        if draw(st.booleans()):
            reads, writes = infer_access_regions(block)
            block = block.replace(reads=reads, writes=writes)
        pred = tir.LT(values[0], 3) if draw(st.booleans()) else True
        body = BlockRealize(tuple(values), pred, block)
        for lv, ext in reversed(list(zip(loops, loop_extents))):
            kind = draw(KINDS) if not isinstance(ext, Var) else ForKind.SERIAL
            body = For(lv, 0, ext, kind, body)
        return body

    stages = []
    if mid is not None:
        stages.append(stage("T_mid", inputs, mid, draw(EXPR), shape, 0))
        stages.append(stage("C", [mid], out, draw(EXPR), shape, 0))
    else:
        stages.append(stage("C", inputs, out, draw(EXPR), shape, reduce))
    allocs = (mid,) if mid is not None else ()
    root = BlockRealize((), True, Block((), (), (), "root", tir.seq(*stages), None, allocs))
    params = [Var(b.name, "handle") for b in (*inputs, out)]
    attrs = {"global_symbol": "rand", "tir.noalias": True} if draw(st.booleans()) else {}
    return PrimFunc(tuple(params), root, None, dict(zip(params, (*inputs, out))), attrs)


@settings(max_examples=50, deadline=None)
@given(prim_funcs())
def test_random_prim_funcs_round_trip_through_tvmscript(func):
    text = func.script()
    again = from_source(text)
    assert_structural_equal(func, again)
    assert again.script() == text
