"""2022-era relax TVMScript that the seed documents and the 2022 MLC notebooks use: bare
`Tensor((3, 4), "float32")` annotations and `relax.dataflow()` / `relax.output(...)` /
`relax.add(...)` without the `R.` prefix. They parse to the same IR as the modern spelling and
warn with a DeprecationWarning that names it."""

from __future__ import annotations  # the decorated class below names `Tensor` only as text

import warnings

import numpy as np
import pytest

from minitvm import relax
from minitvm.error import ParseError
from minitvm.ir import assert_structural_equal
from minitvm.relax.eval_ref import evaluate
from minitvm.script import from_source
from minitvm.script import ir as I
from minitvm.script import relax as R

LEGACY = """
@I.ir_module
class MyModule:
    @R.function
    def main(x: Tensor((3, 4), "float32"), y: Tensor((3, 4), "float32")):
        with relax.dataflow():
            lv0 = relax.multiply(x, y)
            gv0 = relax.add(lv0, y)
            relax.output(gv0)
        return gv0
"""

MODERN = LEGACY.replace("Tensor(", "R.Tensor(").replace("relax.", "R.")


def _parse_legacy(text=LEGACY):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = from_source(text)
    return mod, {str(w.message) for w in caught if w.category is DeprecationWarning}


def test_legacy_spellings_parse_to_the_modern_ir_and_match_numpy():
    mod, _ = _parse_legacy()
    assert_structural_equal(mod, from_source(MODERN))
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((3, 4)).astype("float32") for _ in range(2))
    np.testing.assert_allclose(evaluate(mod, x, y), x * y + y, rtol=1e-6)


@pytest.mark.parametrize(
    "old,new",
    [
        ("Tensor(shape, dtype)", "R.Tensor(shape, dtype)"),
        ("relax.dataflow", "R.dataflow"),
        ("relax.output", "R.output"),
        ("relax.multiply", "R.multiply"),
        ("relax.add", "R.add"),
    ],
)
def test_each_legacy_spelling_warns_naming_the_modern_one(old, new):
    _, messages = _parse_legacy()
    assert any(f"`{old}` is the 2022 relax spelling; write `{new}`" in m for m in messages)


def test_modern_spelling_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        from_source(MODERN)


def test_legacy_return_annotation_with_unknown_shape():
    text = LEGACY.replace('"float32")):\n', '"float32")) -> Tensor(None, "float32", ndim=2):\n', 1)
    mod, messages = _parse_legacy(text)
    modern = from_source(MODERN)["main"].params
    for got, want in zip(mod["main"].params, modern):
        assert_structural_equal(got.struct_info, want.struct_info)
    assert mod["main"].ret_struct_info.ndim == 2
    assert any("R.Tensor" in m for m in messages)


def test_decorated_class_with_legacy_spellings():
    with pytest.warns(DeprecationWarning, match="write `R.dataflow`"):

        @I.ir_module
        class Legacy:
            @R.function
            def main(x: Tensor((2,), "float32")):  # noqa: F821 - the 2022 bare annotation
                with relax.dataflow():
                    gv = relax.add(x, x)
                    relax.output(gv)
                return gv

    x = np.array([1.5, -2.0], "float32")
    np.testing.assert_allclose(evaluate(Legacy, x), 2 * x)


def test_a_relax_name_that_is_no_r_construct_still_reports_clearly():
    with pytest.raises(ParseError, match="no_such_op"):
        from_source(LEGACY.replace("relax.add(lv0, y)", "relax.no_such_op(lv0, y)"))
