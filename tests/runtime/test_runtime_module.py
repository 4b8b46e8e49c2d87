import gc
import json
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
from llvm_kernels import ADD_INFO, ADD_IR, AXPK_INFO, build_result

from minitvm.error import BuildError, MiniTVMError, RuntimeError_
from minitvm.runtime import CodegenResult, Module, ProfileResult, cpu, load_module
from minitvm.runtime import ndarray as nd
from minitvm.runtime.meta import meta_digest


def test_codegen_result_is_frozen(add_result):
    with pytest.raises(AttributeError):
        add_result.target = "llvm -mcpu=foo"


def test_entry_name_defaults_and_overrides(add_result):
    mod = Module.from_codegen(add_result)
    assert mod.entry_name == "add" and mod.imported_modules == [] and mod.type_key == "llvm"
    assert Module(add_result, entry_name="axpk").entry_name == "axpk"
    main_info = dict(ADD_INFO, name="main")
    ir = ADD_IR.replace("@add(", "@main(")
    assert Module(build_result(ir, [main_info, AXPK_INFO])).entry_name == "main"


def test_get_function_and_errors(add_module):
    assert add_module["add"] is add_module.get_function("add")
    assert "axpk" in add_module and add_module.implements_function("add")
    assert repr(add_module["add"]) == "<PackedFunc add>"
    with pytest.raises(
        MiniTVMError, match=r"module has no function 'sub'; it has \['add', 'axpk'\]"
    ):
        add_module["sub"]


def test_bad_codegen_results(add_result):
    with pytest.raises(BuildError, match="entry function 'sub' is not in the module"):
        Module(add_result, entry_name="sub")
    with pytest.raises(BuildError, match="the object code has no function 'sub'"):
        Module(CodegenResult(add_result.object_code, "", (dict(ADD_INFO, name="sub"),), "llvm"))
    with pytest.raises(BuildError, match="no functions"):
        Module(CodegenResult(add_result.object_code, "", (), "llvm"))


def test_get_source(add_module):
    ll = add_module.get_source("ll")
    assert "define" in ll and "@add" in ll and add_module.get_source() == ll
    asm = add_module.get_source("asm")
    assert "add:" in asm and "ret" in asm
    with pytest.raises(MiniTVMError, match="unknown format 'cuda'"):
        add_module.get_source("cuda")


def test_time_evaluator_fields(add_module):
    a, b = nd.array(np.ones(64, "float32")), nd.array(np.ones(64, "float32"))
    c = nd.empty(64)
    timer = add_module.time_evaluator("add", cpu(0), number=5, repeat=3)
    res = timer(a, b, c)
    assert isinstance(res, ProfileResult) and len(res.results) == 3
    assert 0 < res.min <= res.median <= res.max and res.min <= res.mean <= res.max
    assert res.std >= 0 and "ProfileResult(mean=" in repr(res)
    np.testing.assert_array_equal(c.numpy(), 2)


def test_time_evaluator_min_repeat_ms_runs_long_enough(add_module):
    a = np.ones(16, "float32")
    res = add_module.time_evaluator("add", cpu(0), number=1, repeat=1, min_repeat_ms=5)(
        a, a.copy(), a.copy()
    )
    assert res.mean < 1e-3  # a 16-element add is far below a millisecond per call


def test_time_evaluator_checks_arguments(add_module):
    timer = add_module.time_evaluator("add", cpu(0))
    with pytest.raises(MiniTVMError, match=r"calling 'add': expected 3 arguments"):
        timer(np.ones(4, "float32"))
    with pytest.raises(MiniTVMError, match="number and repeat must be >= 1"):
        add_module.time_evaluator("add", cpu(0), number=0)


def test_time_evaluator_reports_native_failures(add_module):
    X = np.zeros((2, 4))
    with pytest.raises(
        MiniTVMError, match="calling 'axpk': an assertion in the compiled code failed"
    ):
        add_module.time_evaluator("axpk", cpu(0))(X, X.copy(), 1.0, -3)


def test_export_writes_one_zip_with_object_and_json(add_module, tmp_path):
    path = tmp_path / "add.so"
    add_module.export_library(str(path))
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["meta.json", "module.ll", "object.o"]
        meta = json.loads(zf.read("meta.json"))
        assert zf.read("object.o")[:4] == b"\x7fELF"
    assert meta["target"] == "llvm" and meta["entry_name"] == "add"
    assert [f["name"] for f in meta["func_infos"]] == ["add", "axpk"]
    assert "sse2" in meta["required_features"] and meta["host_cpu"] and meta["minitvm_version"]


def test_export_then_load_in_a_fresh_process(add_module, tmp_path):
    path = tmp_path / "add.tar"
    add_module.export_library(str(path))
    script = textwrap.dedent(
        f"""
        import sys, numpy as np
        import minitvm.runtime as rt
        mod = rt.load_module({str(path)!r})
        a = rt.nd.array(np.arange(5, dtype="float32")); c = rt.nd.empty(5)
        mod(a, rt.nd.array(a.numpy()), c)
        assert np.array_equal(c.numpy(), 2 * np.arange(5)), c
        X = np.ones((2, 4)); Y = np.zeros((2, 4)); mod["axpk"](X, Y, 3.0, 1)
        assert (Y == 4).all(), Y
        assert "@add" in mod.get_source("ll")
        print("ok", mod.entry_name)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok add")


def test_load_module_same_process(add_module, tmp_path):
    path = tmp_path / "m.zip"
    add_module.save(str(path))
    mod = load_module(str(path))
    a = np.arange(3, dtype="float32")
    c = np.zeros(3, "float32")
    mod(a, a.copy(), c)
    np.testing.assert_array_equal(c, 2 * a)


def test_load_module_refuses_non_modules(tmp_path):
    path = tmp_path / "junk.so"
    path.write_bytes(b"\x7fELF not a zip")
    with pytest.raises(RuntimeError_, match="not a minitvm module"):
        load_module(str(path))


def _rewrite_meta(src, dst, **changes):
    """Change meta.json fields and re-sign them, as an export from another machine would be."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "meta.json":
                meta = {**json.loads(data), **changes}
                meta["checksums"]["meta.json"] = meta_digest(meta)
                data = json.dumps(meta)
            zout.writestr(name, data)


def test_load_module_checks_cpu_features(add_module, tmp_path):
    src, dst = tmp_path / "a.zip", tmp_path / "b.zip"
    add_module.export_library(str(src))
    _rewrite_meta(src, dst, required_features=["sse2", "made-up-feature"], host_cpu="futurelake")
    with pytest.raises(
        RuntimeError_,
        match=r"futurelake CPU and needs CPU features this machine lacks: made-up-feature",
    ):
        load_module(str(dst))


def test_load_module_checks_format_version(add_module, tmp_path):
    src, dst = tmp_path / "a.zip", tmp_path / "b.zip"
    add_module.export_library(str(src))
    _rewrite_meta(src, dst, format_version=99)
    with pytest.raises(
        RuntimeError_, match="version 99: this minitvm reads version 2"
    ):
        load_module(str(dst))


def test_modules_can_be_dropped_and_collected(add_result):
    for _ in range(5):
        mod = Module(add_result)
        f = mod["add"]
        del mod
        gc.collect()
        a = np.ones(4, "float32")
        c = np.zeros(4, "float32")
        f(a, a.copy(), c)  # the function keeps its engine alive
        assert (c == 2).all()
        del f
        gc.collect()
