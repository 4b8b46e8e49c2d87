"""minitvm.driver.tvmc: TVM's TVMC Python API and `python -m minitvm.driver.tvmc`, front ends
onto minitvm's command line (minitvm/cli): ONNX import, relax.build, meta_schedule tuning."""

from .model import (
    TVMCException,
    TVMCModel,
    TVMCPackage,
    TVMCResult,
    compile,
    load,
    run,
    tune,
)

__all__ = [
    "TVMCException", "TVMCModel", "TVMCPackage", "TVMCResult", "compile", "load", "run", "tune",
]  # fmt: skip
