"""Suite-wide test settings: IR checks that run under every test."""

import itertools
import os
import zlib

import numpy as np

import pytest

import minitvm.driver
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source

os.environ["MINITVM_CACHE_DIR"] = ""  # no compile cache outside a test (collection, ...)
_cache_dirs = itertools.count()


@pytest.fixture(autouse=True)
def _private_compile_cache(tmp_path_factory, monkeypatch):
    """Each test gets an empty compile cache of its own, never the user's (~/.cache/minitvm):
    a test that counts lowerings sees no entry another test wrote."""
    root = tmp_path_factory.getbasetemp() / "compile_cache"
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(root / str(next(_cache_dirs))))


@pytest.fixture(autouse=True)
def _seeded_numpy(request):
    """numpy's global generator starts from a seed of the test's own id, so a test's random
    inputs are the same on every run and machine: a tolerance that an unlucky draw would
    break fails every time, here, instead of once in a while in CI."""
    np.random.seed(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(autouse=True, scope="session")
def _verify_ir_after_every_pass():
    """Run the TIR well-formedness check after every lowering pass in every test."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MINITVM_VERIFY_IR", "1")
    yield
    mp.undo()


@pytest.fixture(autouse=True, scope="session")
def _every_built_primfunc_round_trips():
    """Every PrimFunc that any test lowers or builds must print as TVMScript and parse back
    structurally equal (the TVMScript issue's contract, checked on the whole suite's IR)."""
    original = minitvm.driver.lower_primfunc
    seen: set[int] = set()

    def checked(func, *args, **kwargs):
        if id(func) not in seen:
            seen.add(id(func))
            text = func.script()
            try:
                parsed = from_source(text)
            except Exception as err:
                raise AssertionError(f"printed PrimFunc does not parse back:\n{text}") from err
            assert_structural_equal(parsed, func)
        return original(func, *args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(minitvm.driver, "lower_primfunc", checked)
    yield
    mp.undo()
