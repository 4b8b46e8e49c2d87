"""TVMC's Python API (load, tune, compile, run) over the command line's library code
(minitvm/cli): one importer, one build, one artifact format, one tuner."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any

import numpy as np

from ...error import TVMError


class TVMCException(TVMError):
    """A tvmc call was given something it cannot use."""


class TVMCModel:
    """An imported model: `mod` (relax IRModule, weights bound), `params` (empty: bound)."""

    def __init__(self, mod: Any, params: Any, model_path: str, source_names: list, outputs: list):
        self.mod = mod
        self.params = params
        self.model_path = model_path
        self.source_names = source_names
        self.output_names = outputs

    def summary(self, file: Any = None) -> str:
        """The model's graph program as TVMScript (printed, as TVM does)."""
        text = self.mod.script()
        print(text, file=file)
        return text

    def save(self, model_path: str) -> None:
        """Write the model's TVMScript text to `model_path`."""
        with open(model_path, "w", encoding="utf-8") as f:
            f.write(self.mod.script())


def load(path: str, shape_dict: dict | None = None, model_format: str | None = None, **kw: Any):
    """Import an ONNX model file (other formats are not supported)."""
    from ...cli import _onnx

    if (
        model_format not in (None, "onnx")
        or not str(path).endswith(".onnx")
        and model_format is None
    ):
        raise TVMCException(
            f"tvmc.load('{path}'): only ONNX models (.onnx) are supported; export the model "
            "to ONNX first"
        )
    shapes = {k: tuple(int(d) for d in v) for k, v in (shape_dict or {}).items()}
    model = _onnx.load_model(path)
    declared = _onnx.graph_inputs(model)
    _onnx.check_shapes(path, declared, shapes)
    mod = _onnx.import_model(path, model, shapes)
    return TVMCModel(mod, {}, path, list(declared), _onnx.graph_outputs(model))


def tune(
    tvmc_model: TVMCModel,
    target: str = "llvm",
    tuning_records: str | None = None,
    prior_records: str | None = None,
    trials: int = 64,
    enable_autoscheduler: bool = False,
    timeout: float = 10,
    **unused: Any,
) -> str:
    """Tune the model's kernels with meta_schedule (`enable_autoscheduler` picks the same
    tuner); returns the records folder (`tuning_records`, else a new temporary one)."""
    from ...meta_schedule import relax_integration

    if not isinstance(tvmc_model, TVMCModel):
        raise TVMCException(f"tvmc.tune: expected a TVMCModel, got {type(tvmc_model).__name__}")
    work_dir = tuning_records or tempfile.mkdtemp(prefix="tvmc-records-")
    if prior_records and os.path.abspath(prior_records) != os.path.abspath(work_dir):
        _start_from(prior_records, work_dir)
    relax_integration.tune_relax(
        tvmc_model.mod, None, target, work_dir, int(trials),
        num_trials_per_iter=min(64, int(trials)), verbose=False,
    )  # fmt: skip
    return work_dir


_DATABASE_FILES = ("database_workload.json", "database_tuning_record.json")


def _start_from(prior: str, work_dir: str) -> None:
    """Copy the records folder `prior` (a tune's result) into the empty `work_dir`, so tuning
    starts from its records; the files are read later as data by the database loader."""
    missing = [f for f in _DATABASE_FILES if not os.path.isfile(os.path.join(prior, f))]
    if missing:
        raise TVMCException(
            f"tvmc.tune: prior_records '{prior}' is not a tuning records folder (missing "
            f"{', '.join(missing)}); pass the folder an earlier tvmc.tune returned"
        )
    if any(os.path.exists(os.path.join(work_dir, f)) for f in _DATABASE_FILES):
        raise TVMCException(
            f"tvmc.tune: tuning_records '{work_dir}' already holds records; give a new folder "
            "to start from prior_records, or the same folder to keep adding to it"
        )
    os.makedirs(work_dir, exist_ok=True)
    for f in _DATABASE_FILES:
        shutil.copyfile(os.path.join(prior, f), os.path.join(work_dir, f))


class TVMCPackage:
    """A compiled model file (the command line's artifact: Executable + metadata)."""

    def __init__(self, package_path: str, project_dir: Any = None) -> None:
        from ...cli import artifact

        self.package_path = package_path
        self.artifact = artifact.load(package_path)


def compile(
    tvmc_model: TVMCModel,
    target: str = "llvm",
    tuning_records: str | None = None,
    package_path: str | None = None,
    opt_level: int = 3,
    **unused: Any,
) -> TVMCPackage:
    """Build the model (with tuning records when given) and write the package file."""
    from ... import relax
    from ...cli import _records
    from ...cli.compile import save_artifact
    from ...ir import transform

    if not isinstance(tvmc_model, TVMCModel):
        raise TVMCException(f"tvmc.compile: expected a TVMCModel, got {type(tvmc_model).__name__}")
    path = package_path or os.path.join(tempfile.mkdtemp(prefix="tvmc-"), "module.tar")
    with transform.PassContext(opt_level=opt_level):
        if tuning_records:
            exe, _ = _records.apply_to_build(_records.load(tuning_records), tvmc_model.mod, target)
        else:
            exe = relax.build(tvmc_model.mod, target=target)
    save_artifact(
        path, exe, tvmc_model.mod, tvmc_model.model_path, tvmc_model.source_names, target,
        tvmc_model.output_names,
    )  # fmt: skip
    return TVMCPackage(path)


class TVMCResult:
    """Outputs by name and the times of the timed runs (seconds)."""

    def __init__(self, outputs: dict, times: list) -> None:
        self.outputs = outputs
        self.times = times

    def get_output(self, name: str) -> np.ndarray:
        if name not in self.outputs:
            raise TVMCException(f"no output named '{name}'; the outputs are {list(self.outputs)}")
        return self.outputs[name]

    def format_times(self) -> str:
        ms = np.asarray(self.times) * 1000
        return (
            "Execution time summary:\n mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)\n"
            f"{ms.mean():10.4f} {np.median(ms):13.4f} {ms.max():11.4f} {ms.min():12.4f} "
            f"{ms.std():12.4f}\n"
        )

    def __str__(self) -> str:
        return self.format_times() + f"\nOutput Names:\n {list(self.outputs)}"


def run(
    tvmc_package: TVMCPackage,
    device: str = "cpu",
    inputs: dict | None = None,
    fill_mode: str = "random",
    repeat: int = 1,
    number: int = 1,
    **unused: Any,
) -> TVMCResult:
    """Run the package once per timed call; inputs not given are filled (`fill_mode`:
    random, zeros or ones)."""
    from ...cli._common import model_inputs
    from ...cli.run import Session, output_names, outputs_of

    if not isinstance(tvmc_package, TVMCPackage):
        raise TVMCException(f"tvmc.run: expected a TVMCPackage, got {type(tvmc_package).__name__}")
    if fill_mode not in ("random", "zeros", "ones"):
        raise TVMCException(f"tvmc.run(fill_mode={fill_mode!r}): use random, zeros or ones")
    art = tvmc_package.artifact
    given = {k: np.asarray(v) for k, v in (inputs or {}).items()}
    args = model_inputs(art.inputs, given, True, 0)
    if fill_mode != "random":
        fill = 0 if fill_mode == "zeros" else 1
        named = {i["name"]: i.get("source_name") for i in art.inputs}
        args = [
            a if (n in given or named[n] in given) else np.full_like(a, fill)
            for a, n in zip(args, named)
        ]
    session = Session(art, device)
    placed = session.place(args)
    result = session.call(placed)
    times = []
    for _ in range(max(1, int(repeat)) * max(1, int(number))):
        start = time.perf_counter()
        session.call(placed)
        times.append(time.perf_counter() - start)
    outs = outputs_of(result)
    return TVMCResult(dict(zip(output_names(art, len(outs)), outs)), times)
