"""Target from TVM's dict form (issue 27): `Target({"kind": "llvm", "mcpu": ...})`."""

import pytest

import minitvm as tvm
from minitvm.error import TargetError
from minitvm.target import Target


def test_dict_target_equals_its_string_form():
    config = {"kind": "llvm", "mcpu": "skylake-avx512", "mattr": ["+avx2", "+fma"], "num-cores": 2}
    t = Target(config)
    assert t == Target("llvm -mcpu=skylake-avx512 -mattr=+avx2,+fma -num-cores=2")
    assert (t.kind.name, t.mcpu, t.mattr, t.num_cores) == (
        "llvm",
        "skylake-avx512",
        ("+avx2", "+fma"),
        2,
    )


def test_dict_target_keys_libs_tag_and_string_round_trip():
    t = Target({"kind": "llvm", "keys": ["arm_cpu"], "libs": ["cblas"], "tag": "my-board"})
    assert t.keys == ("arm_cpu", "cpu")  # given keys first, then the kind's, as in TVM
    assert t.libs == ("cblas",) and t.tag == "my-board"
    assert Target(str(t)) == t


def test_dict_host_as_dict_string_or_keyword():
    a = Target({"kind": "cuda", "arch": "sm_80", "host": {"kind": "llvm", "mcpu": "x86-64"}})
    assert a.arch == "sm_80" and a.host == Target("llvm -mcpu=x86-64")
    b = Target({"kind": "cuda"}, host={"kind": "llvm"})
    assert b.host == Target("llvm")
    c = Target({"kind": "llvm", "host": "llvm"})
    assert c.host == Target("llvm")


def test_dict_gpu_device_attributes():
    t = Target({"kind": "cuda", "max_num_threads": 512, "thread_warp_size": 32})
    assert t.max_num_threads == 512 and t.thread_warp_size == 32


def test_tvm_spelling_through_the_package():
    assert tvm.target.Target({"kind": "llvm"}) == tvm.target.Target("llvm")


@pytest.mark.parametrize(
    "config, message",
    [
        (
            {"kind": "llvm", "bogus": 1},
            r"unknown key 'bogus' for target kind 'llvm'; known keys: kind, host, mcpu",
        ),
        ({"kind": "llvm", "arch": "sm_80"}, r"unknown key 'arch' for target kind 'llvm'"),
        ({"mcpu": "skylake"}, r"missing 'kind'"),
        ({"kind": "llvm", "num-cores": "2"}, r"'num-cores' must be a non-negative int, got '2'"),
        ({"kind": "llvm", "mcpu": "a b"}, r"'mcpu' must be a non-empty string without spaces"),
        ({"kind": "llvm", "keys": []}, r"'keys' must be a non-empty list of strings"),
        ({"kind": "llvm", "host": 3}, r"Target expects a string like 'llvm -mcpu=...' or a dict"),
        ({"kind": "nosuchkind"}, r"unknown target kind 'nosuchkind'"),
        ({1: "llvm"}, r"keys must be strings"),
    ],
)
def test_bad_dict_is_refused_naming_the_key(config, message):
    with pytest.raises(TargetError, match=message):
        Target(config)


def test_non_string_non_dict_still_refused():
    with pytest.raises(TargetError, match="a string like 'llvm -mcpu=...' or a dict"):
        Target(3)


def test_llvm_old_cpu_names_are_checked_like_their_new_ones():
    from minitvm.target import enabled_features, host_cpu_features, unavailable_reason
    from minitvm.target.host import CPU_FEATURES

    assert CPU_FEATURES["core-avx2"] == CPU_FEATURES["haswell"]
    if not CPU_FEATURES["haswell"] <= enabled_features(host_cpu_features()):
        pytest.skip("this machine lacks AVX2")
    assert unavailable_reason(Target("llvm -mcpu=core-avx2")) is None
