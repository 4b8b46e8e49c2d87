"""TVM's `relay.data_dep_optimization`: rewrites that look at the weights' values
(`bsr_dense.convert` makes sparse dense layers sparse, `simplify_fc_transpose.convert` folds a
weight transpose into the weight)."""

from . import bsr_dense, simplify_fc_transpose

__all__ = ["bsr_dense", "simplify_fc_transpose"]
