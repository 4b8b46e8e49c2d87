"""The fuzz categories of issue 30's surfaces, registered with the shared harness: mutated ONNX
models against ONNX Runtime (fuzz_onnx.py), the command line's arguments and its compiled-model
tar (fuzz_cli.py), and OpenCL kernels against the CPU build (fuzz_opencl.py). A case is its
index (the harness slices CASES); each runner seeds its rng from it."""

import fuzz_cli
import fuzz_onnx
import fuzz_opencl

CASES = range(10**9)

CATEGORIES = {
    "onnx": (CASES, fuzz_onnx.run_case),
    "cli": (CASES, fuzz_cli.run_cli),
    "artifacts": (CASES, fuzz_cli.run_artifact),
    "opencl": (CASES, fuzz_opencl.run_opencl),
}
