"""Helpers for tuning tests (TVM's `tvm.meta_schedule.testing`): design-space checks,
small TE workloads and builder/runner stand-ins. Not imported by `meta_schedule` itself."""

from . import dummy_object, space_generation, te_workload

__all__ = ["dummy_object", "space_generation", "te_workload"]
