"""Suite-wide test settings."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _verify_ir_after_every_pass():
    """Run the TIR well-formedness check after every lowering pass in every test."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MINITVM_VERIFY_IR", "1")
    yield
    mp.undo()
