"""DefaultSchedule: the default CPU schedule of every PrimFunc nobody scheduled. The rules live
in `minitvm.dlight.cpu` (a rule per file); this module keeps the names relax code imports."""

from ...dlight.cpu import (
    IS_SCHEDULED,
    MATMUL_PACK_MIN_ROWS_TRANSPOSED,
    BlockKind,
    MatmulTile,
    default_schedule,
    default_schedule_func,
    is_matmul,
    is_scheduled,
    matmul_tile,
    schedule_column_reduction,
    schedule_matmul,
    schedule_product,
    schedule_reduction,
    schedule_spatial,
)

__all__ = [
    "IS_SCHEDULED",
    "MATMUL_PACK_MIN_ROWS_TRANSPOSED",
    "BlockKind",
    "MatmulTile",
    "default_schedule",
    "default_schedule_func",
    "is_matmul",
    "is_scheduled",
    "matmul_tile",
    "schedule_column_reduction",
    "schedule_matmul",
    "schedule_product",
    "schedule_reduction",
    "schedule_spatial",
]
