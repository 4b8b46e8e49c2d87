import llvmlite.binding as llvm
import pytest

from minitvm.error import BuildError, TargetError
from minitvm.target import (
    Target,
    compile_llvm_ir,
    emit_assembly,
    enabled_features,
    host_cpu_features,
    host_cpu_name,
)


def test_plain_llvm_is_the_host_with_all_its_features():
    t = Target("llvm")
    assert str(t) == "llvm" and t.kind.name == "llvm"
    assert t.cpu == host_cpu_name() == llvm.get_host_cpu_name()
    assert t.features == host_cpu_features()
    assert "sse2" in enabled_features(t.features)


def test_options_parse_and_print_back():
    text = "llvm -mcpu=skylake-avx512 -mattr=+avx512f,+fma -num-cores=2 -opt-level=2"
    t = Target(text)
    assert (t.mcpu, t.mattr, t.num_cores, t.opt_level) == (
        "skylake-avx512",
        ("+avx512f", "+fma"),
        2,
        2,
    )
    assert str(t) == text and Target(str(t)) == t and hash(Target(text)) == hash(t)
    assert t.cpu == "skylake-avx512" and t.features == "+avx512f,+fma"
    assert repr(Target("llvm -mtriple=x86_64-unknown-linux-gnu")) == (
        'Target("llvm -mtriple=x86_64-unknown-linux-gnu")'
    )


def test_mcpu_native_means_the_host():
    t = Target("llvm -mcpu=native")
    assert t.cpu == host_cpu_name() and t.features == host_cpu_features()


def test_target_machine_is_cached_per_target_string():
    assert Target("llvm").create_target_machine() is Target("llvm").create_target_machine()
    tm = Target("llvm -mcpu=skylake-avx512").create_target_machine()
    assert tm is not Target("llvm").create_target_machine()
    assert tm.triple == llvm.get_process_triple()


@pytest.mark.parametrize("kind", ["cuda", "opencl", "vulkan", "metal", "rocm"])
def test_gpu_targets_parse_but_are_refused_for_building(kind):
    # As in TVM a GPU Target is a description; nothing here compiles for it, so code
    # generation asks for a CPU and is refused, never faked.
    t = Target(f"{kind} -arch=sm_80")
    assert t.kind.name == kind and str(t) == f"{kind} -arch=sm_80" and "gpu" in t.keys
    with pytest.raises(TargetError, match=f"no {kind.upper()} runtime in this build.*'llvm'"):
        t.create_target_machine()


def test_c_target_is_not_supported_yet():
    with pytest.raises(TargetError, match="C source backend is not supported yet"):
        Target("c")


def test_unknown_kind_names_the_string_and_the_registered_kinds():
    with pytest.raises(
        TargetError,
        match=r"unknown target kind 'tpu' in 'tpu -x=1'; known kinds: llvm, cuda, opencl, nvptx, "
        r"vulkan, metal, rocm \(compiled here: llvm, cuda, opencl\)",
    ):
        Target("tpu -x=1")
    with pytest.raises(TargetError, match=r"'opencll'.*did you mean 'opencl'\?"):
        Target("opencll")


@pytest.mark.parametrize(
    "text, match",
    [
        ("llvm -frobnicate=1", r"unknown option '-frobnicate=1'; supported: -mcpu=\.\.\."),
        ("llvm -mcpu", r"unknown option '-mcpu'"),
        ("llvm -num-cores=two", r"bad value in '-num-cores=two'"),
        ("", "empty target string"),
    ],
)
def test_bad_options_are_errors(text, match):
    with pytest.raises(TargetError, match=match):
        Target(text)


def test_non_string_target_is_an_error():
    with pytest.raises(TargetError, match="expects a string"):
        Target(3)


IR = "define i32 @f(i32 %x) {\n  %y = mul i32 %x, 8\n  ret i32 %y\n}\n"


def test_compile_llvm_ir_optimises_and_emits_an_elf_object():
    optimised, obj = compile_llvm_ir(IR, "llvm")
    assert obj[:4] == b"\x7fELF"
    assert "shl" in optimised  # x * 8 became a shift at O3
    assert "f:" in emit_assembly(optimised)


def test_compile_llvm_ir_reports_invalid_ir():
    with pytest.raises(BuildError, match="invalid LLVM IR for target 'llvm'"):
        compile_llvm_ir("define i32 @f( {", "llvm")


def test_shared_target_machine_handed_to_an_engine_is_replaced():
    import gc

    tm = Target("llvm -mcpu=skylake").create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)  # takes ownership of tm
    fresh = Target("llvm -mcpu=skylake").create_target_machine()
    assert fresh is not tm
    del engine, tm
    gc.collect()  # the engine frees its machine; the shared one must still work
    assert "f:" in fresh.emit_assembly(llvm.parse_assembly(IR))


def test_double_dash_options_as_in_tvm():
    """TVM parses `--num-cores=1` (the MLC course's spelling) like `-num-cores=1`."""
    import minitvm as tvm

    t = tvm.target.Target("llvm --num-cores=1")
    assert t.num_cores == 1 and str(t) == "llvm -num-cores=1"
    with pytest.raises(tvm.error.TargetError, match="unknown option '--bogus=1'"):
        tvm.target.Target("llvm --bogus=1")


def test_mlc_course_gpu_tag():
    """The MLC course's GPU chapter targets 'nvidia/geforce-rtx-2080-ti' (Turing, sm_75)."""
    import minitvm as tvm

    t = tvm.target.Target("nvidia/geforce-rtx-2080-ti")
    assert t.kind.name == "cuda" and "-arch=sm_75" in str(t)


@pytest.mark.parametrize(
    "tag, arch",
    [
        ("nvidia/tesla-p100", "sm_60"),
        ("nvidia/nvidia-v100", "sm_70"),
        ("nvidia/nvidia-t4", "sm_75"),
        ("nvidia/nvidia-a100", "sm_80"),
        ("nvidia/geforce-rtx-3090", "sm_86"),
        ("nvidia/nvidia-h100", "sm_90"),
        ("nvidia/jetson-nano", "sm_53"),
    ],
)
def test_nvidia_tags_map_to_their_compute_capability(tag, arch):
    import minitvm as tvm

    t = tvm.target.Target(tag)
    assert t.kind.name == "cuda" and f"-arch={arch}" in str(t)


def test_unknown_nvidia_tag_suggests_close_names():
    import minitvm as tvm

    with pytest.raises(tvm.error.TargetError, match="did you mean nvidia/tesla-p100"):
        tvm.target.Target("nvidia/tesla-p10")
    with pytest.raises(tvm.error.TargetError, match="unknown target tag 'nvidia/nope'; 1"):
        tvm.target.Target("nvidia/nope")
    # Kepler and older are not targeted: current drivers and NVPTX dropped them
    with pytest.raises(tvm.error.TargetError, match="unknown target tag 'nvidia/tesla-k80'"):
        tvm.target.Target("nvidia/tesla-k80")


def test_tag_module_lists_and_registers_tags():
    """TVM's tvm.target.tag: list_tags() maps every tag to its Target; register_tag adds one
    (string or TVM's dict form) that Target(name) then expands like a built-in tag."""
    import minitvm as tvm
    from minitvm.target import target as target_mod

    tags = tvm.target.tag.list_tags()
    assert str(tags["nvidia/nvidia-a100"]) == "cuda -arch=sm_80"
    assert tvm.target.list_tags is tvm.target.tag.list_tags
    saved = dict(target_mod._TAGS)
    try:
        t = tvm.target.tag.register_tag(
            "myvendor/board", {"kind": "cuda", "arch": "sm_87", "max_threads_per_block": 512}
        )
        assert str(t) == "cuda -arch=sm_87 -max_threads_per_block=512"
        again = tvm.target.Target("myvendor/board")
        assert again.kind.name == "cuda" and again.attrs["arch"] == "sm_87"
        with pytest.raises(tvm.error.TargetError, match="already defined.*override=True"):
            tvm.target.register_tag("myvendor/board", "cuda -arch=sm_80")
        t2 = tvm.target.register_tag("myvendor/board", "cuda -arch=sm_80", override=True)
        assert "sm_80" in str(tvm.target.Target("myvendor/board")) and "sm_80" in str(t2)
        # a tag without a slash works too; a target kind cannot be a tag
        tvm.target.register_tag("mycpu", "llvm -num-cores=1")
        assert tvm.target.Target("mycpu").num_cores == 1
        with pytest.raises(tvm.error.TargetError, match="'llvm' is a target kind"):
            tvm.target.register_tag("llvm", "llvm -num-cores=1")
    finally:
        target_mod._TAGS.clear()
        target_mod._TAGS.update(saved)
    assert "myvendor/board" not in tvm.target.list_tags()


@pytest.mark.parametrize(
    "config, match",
    [
        ({"arch": "sm_80"}, "dict with a 'kind' string"),
        ({"kind": "cuda", "host": {"kind": "llvm"}}, "option 'host' is a dict"),
        ("nokind -arch=sm_80", "unknown target kind .nokind."),
        (42, "dict with a 'kind' string"),
    ],
)
def test_register_tag_refuses_bad_configs(config, match):
    import minitvm as tvm

    with pytest.raises(tvm.error.TargetError, match=match):
        tvm.target.register_tag("test/bad-config", config)
    assert "test/bad-config" not in tvm.target.list_tags()


def test_unknown_tag_of_any_vendor_is_a_target_error():
    import minitvm as tvm

    with pytest.raises(tvm.error.TargetError, match="unknown target tag 'raspberry-pi/4b'"):
        tvm.target.Target("raspberry-pi/4b")


def test_device_option_is_kept_as_a_key():
    """TVM's `llvm -device=arm_cpu`: the device name leads the keys; code is built as for any
    llvm target of that -mtriple/-mcpu (the keys pick TVM's strategies, not minitvm's)."""
    t = Target("llvm -device=arm_cpu")
    assert t.attrs["device"] == "arm_cpu" and t.keys[0] == "arm_cpu" and "cpu" in t.keys
    assert "arm_cpu" in str(t)
