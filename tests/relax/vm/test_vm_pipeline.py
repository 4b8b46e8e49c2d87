"""The default build pipeline: one list; passes join when they exist; opt_level gates fusion."""

from __future__ import annotations

import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import pipeline


def _names(**ctx):
    with tvm.transform.PassContext(**ctx):
        return [p.name for p in pipeline.default_passes("llvm")]


def test_order_and_opt_level_gating():
    full = _names(opt_level=2)
    assert full[0] == "LegalizeOps" and full[-1] == "StaticPlanBlockMemory"
    assert full.index("DeadCodeElimination") < full.index("StaticPlanBlockMemory")
    no_fusion = _names(opt_level=0)
    assert "FuseOps" not in no_fusion and "FuseTIR" not in no_fusion
    if hasattr(relax.transform, "FuseOps") and hasattr(relax.transform, "FuseTIR"):
        assert full.index("FuseOps") < full.index("FuseTIR") < full.index("DeadCodeElimination")
        assert "FuseOps" in _names(opt_level=0, required_pass=["FuseOps"])
    assert "StaticPlanBlockMemory" not in _names(disabled_pass=["StaticPlanBlockMemory"])


def test_passes_are_looked_up_when_the_pipeline_is_built(monkeypatch):
    made = []

    def FuseOps():
        made.append("FuseOps")
        return tvm.transform.Pass(lambda mod: mod, "FuseOps")

    def FuseTIR():
        return tvm.transform.Pass(lambda mod: mod, "FuseTIR")

    monkeypatch.setattr(relax.transform, "FuseOps", FuseOps, raising=False)
    monkeypatch.setattr(relax.transform, "FuseTIR", FuseTIR, raising=False)
    assert "FuseOps" in _names(opt_level=1) and made == ["FuseOps"]
    monkeypatch.delattr(relax.transform, "FuseTIR")  # FuseOps alone would leave fused functions
    assert "FuseOps" not in _names(opt_level=3)


@pytest.mark.parametrize("name", ["DefaultSchedule", "DefaultCPUSchedule"])
def test_default_schedule_step_accepts_its_names(monkeypatch, name):
    step = next(s for s in pipeline.DEFAULT_PIPELINE if "DefaultSchedule" in s.names)
    for other in step.names:
        monkeypatch.delattr(relax.transform, other, raising=False)
    monkeypatch.setattr(
        relax.transform, name, lambda: tvm.transform.Pass(lambda m: m, name), raising=False
    )
    assert name in _names()
