"""CPU rules of the default schedule (`dl.cpu`): one rule per file, each backed by the
schedule functions it names; DEFAULT_RULES is what `relax.transform.DefaultSchedule` applies.

mod = dl.ApplyDefaultSchedule(*dl.cpu.DEFAULT_RULES)(mod)
"""

from ..base.analysis import IS_SCHEDULED, is_scheduled
from .analysis import BlockKind, is_matmul
from .base import BlockRule, CPUScheduleRule, NotApplicable, PerBlock
from .default import DEFAULT_BLOCK_RULES, DEFAULT_RULES, default_schedule, default_schedule_func
from .elementwise import ElementWise, schedule_spatial
from .fallback import Fallback, schedule_rows
from .gemv import GEMV, schedule_row_reduction
from .general_reduction import GeneralReduction
from .matmul import (
    MATMUL_MAX_ROWS,
    Matmul,
    MatmulTile,
    RegisterFile,
    matmul_tile,
    schedule_matmul,
    schedule_product,
    tile_max_rows,
)
from .reduction import Reduction, schedule_column_reduction, schedule_reduction
from .utils import MATMUL_PACK_MIN_ROWS_TRANSPOSED, PARALLEL_MIN_WORK, VECTOR_LANES

__all__ = [
    "DEFAULT_BLOCK_RULES",
    "DEFAULT_RULES",
    "GEMV",
    "IS_SCHEDULED",
    "MATMUL_MAX_ROWS",
    "MATMUL_PACK_MIN_ROWS_TRANSPOSED",
    "PARALLEL_MIN_WORK",
    "VECTOR_LANES",
    "BlockKind",
    "BlockRule",
    "CPUScheduleRule",
    "ElementWise",
    "Fallback",
    "GeneralReduction",
    "Matmul",
    "MatmulTile",
    "NotApplicable",
    "PerBlock",
    "Reduction",
    "RegisterFile",
    "default_schedule",
    "default_schedule_func",
    "is_matmul",
    "is_scheduled",
    "matmul_tile",
    "schedule_column_reduction",
    "schedule_matmul",
    "schedule_product",
    "schedule_reduction",
    "schedule_row_reduction",
    "schedule_rows",
    "schedule_spatial",
    "tile_max_rows",
]
