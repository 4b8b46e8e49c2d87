"""ONNX's own node cases for Resize, 3-d pooling, integer Pow, training BatchNormalization,
the window functions, CenterCropPad and AffineGrid, against their expected outputs.

Several of these cases feed shape-like values (Resize's roi / scales / sizes, a window's size,
CenterCropPad's shape, AffineGrid's size) as graph inputs, which from_onnx needs at import;
here they are given as initializers instead, the form an exported model has."""

import re
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend.onnx import from_onnx


@pytest.fixture(scope="module")
def node_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node

        return {c.name: c for c in node.collect_testcases(None)}


def _static_inputs(case, fold: bool):
    """The case's model with its shape-like inputs (all but the first with `fold`, and every
    integer vector) as initializers; (model, remaining feeds, expected outputs)."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    ins, outs = case.data_sets[0]
    keep, feeds = [], []
    for i, (info, value) in enumerate(zip(list(model.graph.input), ins)):
        value = np.asarray(value)
        if (fold and i > 0) or (value.dtype.kind in "iu" and value.ndim <= 1):
            model.graph.initializer.append(numpy_helper.from_array(value, info.name))
        else:
            keep.append(info)
            feeds.append(value)
    del model.graph.input[:]
    model.graph.input.extend(keep)
    return model, feeds, outs


def _run(model, feeds):
    vm = relax.VirtualMachine(relax.build(from_onnx(model), "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.nd.array(x) for x in feeds])
    return [o.numpy() for o in (out if isinstance(out, list | tuple) else [out])]


FAMILIES = {
    "resize": (r"^test_resize_", True, 39),
    "pool3d": (r"^test_(max|average)pool_3d", False, 10),
    "pow_int": (r"^test_pow_types_int", False, 4),
    "batchnorm_training": (r"^test_batchnorm_.*training_mode", False, 2),
    "windows": (r"^test_(blackman|hamming|hann)window", False, 12),
    "center_crop_pad": (r"^test_center_crop_pad", False, 12),
    "affine_grid": (r"^test_affine_grid", False, 8),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_node_cases_match_expected_outputs(node_cases, family):
    pattern, fold, count = FAMILIES[family]
    names = sorted(n for n in node_cases if re.search(pattern, n))
    assert len(names) >= count, names
    for name in names:
        case = node_cases[name]
        model, feeds, outs = _static_inputs(case, fold)
        got = _run(model, feeds)
        assert len(got) == len(outs), name
        for g, want in zip(got, outs):
            want = np.asarray(want)
            assert g.shape == want.shape and g.dtype == want.dtype, (name, g.shape, want.shape)
            np.testing.assert_allclose(
                g, want, rtol=max(case.rtol, 1e-4), atol=max(case.atol, 1e-5), err_msg=name
            )


def test_resize_scales_given_at_run_time_match_the_case(node_cases):
    """The same case with its scales fed at run time (the run-time Resize path) gives the
    case's expected output too."""
    case = node_cases["test_resize_upsample_scales_cubic"]
    ins, outs = case.data_sets[0]
    (got,) = _run(case.model, [np.asarray(x) for x in ins])
    np.testing.assert_allclose(got, np.asarray(outs[0]), rtol=1e-4, atol=1e-5)
