"""Fixtures: the hand-written kernels of llvm_kernels.py, compiled once per session."""

import pytest
from llvm_kernels import ADD_INFO, ADD_IR, AXPK_INFO, build_result

from minitvm.runtime import CodegenResult, Module


@pytest.fixture(scope="session")
def add_result() -> CodegenResult:
    return build_result(ADD_IR, [ADD_INFO, AXPK_INFO])


@pytest.fixture(scope="session")
def add_module(add_result) -> Module:
    return Module.from_codegen(add_result)
