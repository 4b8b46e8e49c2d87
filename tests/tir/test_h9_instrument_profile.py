"""InstrumentProfileIntrinsics: start/end_profile_intrinsic calls around the chosen loops,
ids in TVM's order. Neither codegen nor the interpreter runs these calls, so the semantic
check is that dropping them gives back the original function."""

from minitvm import IRModule, tir, transform
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T
from minitvm.tir.transform import InstrumentProfileIntrinsics


@T.prim_func
def _two_stages(A: T.Buffer((8, 64), "int32"), B: T.Buffer((8, 64), "int32")):
    for i in range(8):
        for k, l in T.grid(4, 16):
            B[i, k * 16 + l] = A[i, k * 16 + l] * 2
        for k, l in T.grid(4, 16):
            B[i, k * 16 + l] = B[i, k * 16 + l] + 1


def _run(func, **extra):
    config = {"tir.reset_start_id": True, "tir.lwp_disable_func_prof": True, **extra}
    with transform.PassContext(config=config):
        return InstrumentProfileIntrinsics()(IRModule({"main": func}))["main"]


def _marks(func):
    out = []
    tir.pre_order_visit(
        func.body,
        lambda n: (
            out.append((n.value.op.name.split(".")[-1][:5], int(n.value.args[0])))
            if isinstance(n, tir.Evaluate) and isinstance(n.value, tir.Call)
            else None
        ),
    )
    return out


class _Strip(tir.Mutator):
    def visit_SeqStmt(self, s):
        kept = [self.visit(p) for p in s.seq if not _is_mark(p)]
        return kept[0] if len(kept) == 1 else s.replace(seq=tuple(kept))


def _is_mark(s):
    return isinstance(s, tir.Evaluate) and "profile_intrinsic" in getattr(s.value.op, "name", "")


def test_sibling_loops_get_ids_in_program_order():
    after = _run(_two_stages)
    # function 0, i 1, first k 2 (its l 3), second k 4: only the siblings are wrapped
    assert _marks(after) == [("start", 2), ("end_p", 2), ("start", 4), ("end_p", 4)]
    assert_structural_equal(_Strip().visit(after.body), _two_stages.body)


def test_depth_limit_and_function_marks():
    after = _run(_two_stages, **{"tir.instr_siblings": False, "tir.lwp_max_depth": 1})
    assert _marks(after) == [("start", 1), ("start", 2), ("end_p", 2), ("start", 4)] + [
        ("end_p", 4),
        ("end_p", 1),
    ]
    with_func = _run(_two_stages, **{"tir.lwp_disable_func_prof": False})
    assert _marks(with_func)[0] == ("start", 0) and _marks(with_func)[-1] == ("end_p", 0)
    assert_structural_equal(_Strip().visit(with_func.body), _two_stages.body)
