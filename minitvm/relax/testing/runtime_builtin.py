"""TVM's `relax.testing.runtime_builtin`: the codes the VM's shape builtins take."""

from enum import IntEnum


class MatchShapeCode(IntEnum):
    """How `vm.builtin.match_shape` treats one dimension."""

    ASSERT_EQUAL_TO_IMM = 0
    STORE_TO_HEAP = 1
    NO_OP = 2
    ASSERT_EQUAL_TO_LOAD = 3


class MakeShapeCode(IntEnum):
    """Where `vm.builtin.make_shape` takes one dimension from."""

    USE_IMM = 0
    LOAD_SHAPE = 1
