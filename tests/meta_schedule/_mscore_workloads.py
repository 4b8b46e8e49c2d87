"""Tiny workloads shared by the meta_schedule tests (seconds each)."""

from minitvm import te


def matmul_mod(n: int = 32, m: int = 32, k: int = 32):
    """An IRModule {"main": C = A @ B} made with te (no TVMScript source needed)."""
    from minitvm.ir import IRModule

    a = te.placeholder((n, k), name="A")
    b = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return IRModule({"main": te.create_prim_func([a, b, c])})


def tile_j(sch):
    """A stochastic schedule: split j by a sampled perfect tile, k outside the inner j."""
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2))
    sch.reorder(i, j0, k, j1)
    return sch


def space(fn):
    """ScheduleFn(fn) with no postprocessors or mutators: the tests measure exactly fn's space."""
    from minitvm import meta_schedule as ms

    return ms.space_generator.ScheduleFn(fn, sch_rules=[], postprocs=[], mutator_probs={})


def fast_runner():
    """A LocalRunner timing one call twice: enough to rank candidates in a test."""
    from minitvm import meta_schedule as ms

    return ms.LocalRunner(evaluator_config=ms.EvaluatorConfig(number=1, repeat=2, min_repeat_ms=0))


def split_first_loops(sch):
    """A space for any kernel: each block's innermost loop split by a sampled perfect tile."""
    from minitvm import tir

    names = []
    tir.stmt_functor.post_order_visit(
        sch.mod["main"].body,
        lambda n: names.append(n.name_hint) if isinstance(n, tir.Block) else None,
    )
    for name in names:
        if name == "root":
            continue
        loops = sch.get_loops(sch.get_block(name))
        if loops:
            sch.split(loops[-1], factors=sch.sample_perfect_tile(loops[-1], n=2))
