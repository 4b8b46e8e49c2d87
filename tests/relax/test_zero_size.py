"""Zero-size tensors build and run: an empty matmul (the CPU matmul rule's tile search found no
row count and raised a bare StopIteration) and an empty output the VM's verifier accepts."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax


@pytest.mark.parametrize(
    "shape_x, shape_w", [((0, 4), (4, 3)), ((2, 0), (0, 3)), ((2, 4), (4, 0)), ((0, 0), (0, 5))]
)
def test_empty_matmul_matches_numpy(shape_x, shape_w):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(shape_x, "float32"))
    w = relax.Var("w", relax.TensorStructInfo(shape_w, "float32"))
    with bb.function("main", [x, w]):
        bb.emit_func_output(bb.emit(relax.op.matmul(x, w)))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    a, b = np.ones(shape_x, "float32"), np.ones(shape_w, "float32")
    out = vm["main"](a, b).numpy()
    assert out.shape == (a @ b).shape
    np.testing.assert_array_equal(out, a @ b)


def test_torch_linear_on_an_empty_batch():
    torch = pytest.importorskip("torch", reason="the torch oracle")
    from minitvm.relax.frontend.torch import from_exported_program

    lin = torch.nn.Linear(4, 3).eval()
    ep = torch.export.export(lin, (torch.zeros(0, 4),))
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    assert vm["main"](np.zeros((0, 4), "float32")).numpy().shape == (0, 3)
