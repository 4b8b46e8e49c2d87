"""TVM's VM-lowering pass names in a hand-written pipeline (the shape of TVM's "Optimize Large
Language Model" tutorial's pipeline): they leave the module to minitvm's build, which lowers it,
and the compiled model matches numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R

LOWERING = [
    "RewriteDataflowReshape", "ToNonDataflow", "RemovePurityChecking", "CallTIRRewrite",
    "RewriteCUDAGraph", "LowerAllocTensor", "KillAfterLastUse", "LowerRuntimeBuiltin",
    "VMShapeLower", "AttachGlobalSymbol", "FuseTransposeMatmul",
]  # fmt: skip


@I.ir_module
class Mlp:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), w: R.Tensor((5, 4), "float32")) -> R.Tensor(
        (5, 3), "float32"
    ):
        with R.dataflow():
            wt = R.permute_dims(w)
            y = R.matmul(x, wt)
            z = R.nn.relu(y)
            r = R.reshape(z, (5, 3))
            R.output(r)
        return r


@pytest.mark.parametrize("name", LOWERING)
def test_each_lowering_pass_leaves_the_module_to_the_build(name):
    assert getattr(relax.transform, name)()(Mlp) is Mlp


def test_a_pipeline_listing_tvm_phase_5_compiles_and_matches_numpy():
    @tvm.transform.module_pass(opt_level=0)
    def pipeline(mod, _ctx):
        phase5 = [getattr(relax.transform, n)() for n in LOWERING[:-1]]
        seq = [
            relax.transform.FuseTransposeMatmul(),
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FoldConstant(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
            relax.transform.DeadCodeElimination(),
            relax.transform.StaticPlanBlockMemory(),
            *phase5,
            relax.transform.AttachExternModules([]),
        ]
        return tvm.transform.Sequential(seq)(mod)

    ex = tvm.compile(Mlp, "llvm", relax_pipeline=pipeline)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4), dtype="float32")
    w = rng.standard_normal((5, 4), dtype="float32")
    out = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(w)).numpy()
    np.testing.assert_allclose(out, np.maximum(x @ w.T, 0).reshape(5, 3), rtol=1e-5, atol=1e-6)
