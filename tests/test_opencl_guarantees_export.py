"""Exported OpenCL kernel source carries a signature, as native object code does: an edit to a
kernel (even with the zip's checksums recomputed, as a careful editor would) is refused at load
naming the kernel; an untouched export loads and runs like the CPU build (the oracle)."""

import json
import zipfile

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te
from minitvm.error import RuntimeError_
from minitvm.runtime.meta import meta_digest, sha256

_REASON = tvm.opencl(0).unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"no OpenCL device: {_REASON}")


def _gather_module():
    n = te.var("n")
    a = te.placeholder((16,), "float32", name="A")
    idx = te.placeholder((n,), "int32", name="I")
    out = te.compute((n,), lambda i: a[idx[i]] * 2.0, name="B")
    s = te.create_schedule(out.op)
    bx, tx = s[out].split(out.op.axis[0], factor=8)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    gpu = tvm.build(s, [a, idx, out], "opencl", name="gather2")
    cpu = tvm.build(te.create_schedule(out.op), [a, idx, out], "llvm", name="gather2")
    return gpu, cpu


def _rewrite(path, member: str, edit) -> None:
    """Replace `member` by edit(text) and recompute every checksum of the export zip."""
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    members[member] = edit(members[member].decode()).encode()
    meta = json.loads(members["meta.json"])
    for name, data in members.items():
        if name != "meta.json":
            meta["checksums"][name] = sha256(data)
    meta["checksums"]["meta.json"] = meta_digest(meta)
    members["meta.json"] = json.dumps(meta, indent=1).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _run(mod, dev, a, idx):
    out = tvm.nd.empty(idx.shape, "float32", dev)
    mod(tvm.nd.array(a, dev), tvm.nd.array(idx, dev), out)
    return out.numpy()


@pytest.fixture(scope="module")
def built():
    return _gather_module()


def test_untouched_export_loads_and_matches_the_cpu_build(built, tmp_path):
    gpu, cpu = built
    path = tmp_path / "g.zip"
    gpu.export_library(str(path))
    loaded = tvm.runtime.load_module(str(path))
    assert loaded.get_source() == gpu.get_source()
    assert loaded.get_source().startswith("// minitvm-signature: ")
    a, idx = np.arange(16, dtype="float32"), np.array([3, 0, 15, 15, 9], "int32")
    got = _run(loaded, tvm.opencl(0), a, idx)
    np.testing.assert_array_equal(got, _run(cpu, tvm.cpu(0), a, idx))
    np.testing.assert_array_equal(got, np.take(a, idx) * 2)
    # the loaded module keeps the bounds check
    with pytest.raises(RuntimeError_, match="index out of bounds reading 'A'"):
        _run(loaded, tvm.opencl(0), a, np.array([16], "int32"))


_EDITS = {
    # a kernel body changed: its bounds check removed
    "kernel_body": (
        lambda s: s.replace("minitvm_in_range((long)", "1 || minitvm_in_range((long)", 1),
        r"kernel 'gather2_kernel' in the OpenCL source does not match its signature",
    ),
    # the helper code outside the kernels
    "helper": (
        lambda s: s.replace("return false;", "return true;", 1),
        r"code outside the kernels \(helpers, pragmas\) or the metadata was edited",
    ),
    "signature_removed": (
        lambda s: s.split("\n", 1)[1],
        r"the OpenCL source has no minitvm signature",
    ),
    "extra_kernel": (
        lambda s: s + "\n__kernel void extra(__global int* p) { p[0] = 1; }\n",
        r"code outside the kernels .* was edited",
    ),
}


@pytest.mark.parametrize("edit", sorted(_EDITS))
def test_edited_kernel_source_is_refused_at_load(built, tmp_path, edit):
    gpu, _ = built
    path = tmp_path / "g.zip"
    gpu.export_library(str(path))
    change, pattern = _EDITS[edit]
    before = zipfile.ZipFile(path).read("kernels.src").decode()
    assert change(before) != before
    _rewrite(path, "kernels.src", change)
    with pytest.raises(RuntimeError_, match=rf"load_module\('.*g.zip'\): kernels.src: .*{pattern}"):
        tvm.runtime.load_module(str(path))


def test_edited_kernel_metadata_is_refused_at_load(built, tmp_path):
    """The signature binds the metadata too: a kernel info from another build is refused."""
    gpu, _ = built
    path = tmp_path / "g.zip"
    gpu.export_library(str(path))

    def drop_extent_param(text: str) -> str:
        meta = json.loads(text)
        meta["kernels"][0]["params"] = [
            p for p in meta["kernels"][0]["params"] if p["kind"] != "extent"
        ]
        return json.dumps(meta, sort_keys=True)

    _rewrite(path, "device.json", drop_extent_param)
    with pytest.raises(RuntimeError_, match=r"kernels.src: .*metadata was edited"):
        tvm.runtime.load_module(str(path))


def test_edited_source_in_a_relax_executable_is_refused(tmp_path):
    from minitvm import relax
    from minitvm.script import relax as R

    @tvm.script.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
            return R.add(x, x)

    ex = relax.build(Mod, "opencl")
    path = tmp_path / "ex.zip"
    ex.export_library(str(path))
    x = np.arange(8, dtype="float32")
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(path)), tvm.opencl(0))
    np.testing.assert_array_equal(vm["main"](tvm.nd.array(x, tvm.opencl(0))).numpy(), 2 * x)

    def edit(text: str) -> str:
        head, _, rest = text.partition("__kernel void ")
        return head + "__kernel void " + rest.replace("+", "-", 1)

    _rewrite(path, "kernels.src", edit)
    with pytest.raises(RuntimeError_, match=r"kernel '.*' in the OpenCL source does not match"):
        tvm.runtime.load_module(str(path))
