"""nn.ExternModule (TVM's API): `ext["name"](...)` calls a registered function in
destination-passing style; ObjectModule / SourceModule / AttachExternModules refuse to link."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.error import ArgumentError, BuildError
from minitvm.relax.frontend import nn

RNG = np.random.default_rng(0)


@tvm.register_func("test_ext.scaled_add", override=True)
def _scaled_add(a, b, scale, out):
    out.copyfrom(a.numpy() + b.numpy() * scale)


def _scaled_add_shape(a, b, scale):
    return nn.Tensor.placeholder(a.shape, a.dtype)


EXT = nn.ExternModule({"test_ext.scaled_add": _scaled_add_shape})


class UsesExtern(nn.Module):
    def forward(self, x, y):
        return nn.op.relu(EXT["test_ext.scaled_add"](x, y, 3))


def _run(mod, *arrays):
    ex = relax.build(mod, "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["forward"](*[tvm.runtime.tensor(a) for a in arrays]).numpy()


def test_extern_call_runs_the_registered_function_with_converted_scalars():
    spec = {"forward": {"x": nn.spec.Tensor(("n", 4), "float32"),
                        "y": nn.spec.Tensor(("n", 4), "float32")}}  # fmt: skip
    mod, _ = UsesExtern().export_tvm(spec)
    assert "test_ext.scaled_add" in mod.script()
    x = RNG.standard_normal((5, 4)).astype("float32")
    y = RNG.standard_normal((5, 4)).astype("float32")
    np.testing.assert_allclose(_run(mod, x, y), np.maximum(x + 3 * y, 0), rtol=1e-6)


def test_unknown_symbols_and_bad_arguments_are_named():
    with pytest.raises(ArgumentError, match="no symbol 'nope'"):
        EXT["nope"]
    with pytest.raises(ArgumentError, match="maps to a int"):
        nn.ExternModule({"f": 3})
    with pytest.raises(ArgumentError, match="source_format 'rust'"):
        nn.SourceModule({}, "int f();", "rust")
    with pytest.raises(ArgumentError, match="not a file"):
        nn.ObjectModule({}, "/nonexistent/lib.o")


def test_loading_foreign_code_is_refused(tmp_path):
    src = nn.SourceModule({"f": _scaled_add_shape}, 'extern "C" int f();\n', "cpp")
    with pytest.raises(BuildError, match="never runs"):
        src.load()
    obj_file = tmp_path / "lib.o"
    obj_file.write_bytes(b"\x7fELF")
    with pytest.raises(BuildError, match="does not load foreign object code"):
        nn.ObjectModule({"f": _scaled_add_shape}, obj_file).load()
    with pytest.raises(NotImplementedError, match="register"):
        EXT.load()


def test_attach_extern_modules_is_a_no_op_without_modules_and_refuses_with_them():
    mod, _ = UsesExtern().export_tvm(
        {
            "forward": {
                "x": nn.spec.Tensor((2, 4), "float32"),
                "y": nn.spec.Tensor((2, 4), "float32"),
            }
        }
    )
    assert relax.transform.AttachExternModules([])(mod) is mod
    src = nn.SourceModule({"f": _scaled_add_shape}, "int f();\n", "cpp")
    with pytest.raises(BuildError, match="compiler"):
        relax.transform.AttachExternModules([src])(mod)
