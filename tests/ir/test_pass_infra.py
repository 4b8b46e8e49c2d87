"""tvm.transform: Pass, Sequential (opt_level / required / disabled), module_pass, PrintIR."""

from __future__ import annotations

import pytest

import minitvm as tvm
from minitvm.error import ArgumentError, MiniTVMError
from minitvm.ir import transform


def _counting(name: str, log: list, opt_level: int = 0, required=()) -> transform.Pass:
    def run(mod):
        log.append(name)
        return mod

    return transform.Pass(run, name, opt_level, required)


def test_sequential_skips_passes_above_opt_level_unless_required():
    log: list = []
    seq = tvm.transform.Sequential([_counting("A", log, 1), _counting("B", log, 3)])
    mod = tvm.IRModule()
    seq(mod)
    assert log == ["A"]
    with tvm.transform.PassContext(opt_level=3):
        seq(mod)
    assert log == ["A", "A", "B"]
    with tvm.transform.PassContext(opt_level=0, required_pass=["B"], disabled_pass=["A"]):
        seq(mod)
    assert log == ["A", "A", "B", "B"]


def test_a_pass_called_directly_ignores_opt_level_but_not_disabled_pass():
    log: list = []
    high = _counting("High", log, opt_level=4)
    mod = tvm.IRModule()
    assert high(mod) is mod and log == ["High"]
    with tvm.transform.PassContext(disabled_pass=["High"]):
        high(mod)
    assert log == ["High"]


def test_sequential_runs_the_required_passes_first():
    log: list = []
    transform.register_required_pass("TestPrep", lambda: _counting("TestPrep", log))
    seq = tvm.transform.Sequential([_counting("Main", log, required=["TestPrep"])])
    seq(tvm.IRModule())
    assert log == ["TestPrep", "Main"]
    bad = tvm.transform.Sequential([_counting("Main", log, required=["NoSuchPass"])])
    with pytest.raises(MiniTVMError, match="requires pass 'NoSuchPass'"):
        bad(tvm.IRModule())


def test_module_pass_decorates_functions_and_classes():
    @tvm.transform.module_pass(opt_level=2, name="Tag")
    def tag(mod, ctx):
        assert isinstance(ctx, tvm.transform.PassContext)
        return mod.with_attr("tag", 1)

    assert isinstance(tag, tvm.transform.ModulePass)
    assert tag.info.name == "Tag" and tag.info.opt_level == 2
    assert tag(tvm.IRModule()).attrs["tag"] == 1

    @tvm.transform.module_pass(opt_level=1)
    class AddAttr:
        def __init__(self, value):
            self.value = value

        def transform_module(self, mod, ctx):
            return mod.with_attr("value", self.value)

    p = AddAttr(7)
    assert isinstance(p, tvm.transform.Pass) and p.info.name == "AddAttr"
    assert p.value == 7  # the class's own attributes stay reachable
    assert p(tvm.IRModule()).attrs["value"] == 7


def test_module_pass_errors_name_the_fix():
    with pytest.raises(ArgumentError, match="opt_level is required"):
        tvm.transform.module_pass(lambda mod, ctx: mod)
    with pytest.raises(ArgumentError, match="has no method transform_module"):
        tvm.transform.module_pass(opt_level=0)(type("NoMethod", (), {}))
    with pytest.raises(ArgumentError, match="expected Pass objects"):
        tvm.transform.Sequential([transform.PrintIR, transform.PrintIR()])
    with pytest.raises(ArgumentError, match="lists of pass names"):
        tvm.transform.PassContext(disabled_pass="FoldConstant")


def test_print_ir_prints_the_module_and_returns_it(capsys):
    mod = tvm.IRModule()
    assert tvm.transform.PrintIR("here")(mod) is mod
    assert "PrintIR(here)" in capsys.readouterr().out


def test_instruments_see_sequential_children_and_skipped_passes():
    log: list = []

    @tvm.instrument.pass_instrument
    class Rec:
        def should_run(self, mod, info):
            return info.name != "Skip"

        def run_before_pass(self, mod, info):
            log.append(f"before {info.name}")

        def run_after_pass(self, mod, info):
            log.append(f"after {info.name}")

    ran: list = []
    seq = tvm.transform.Sequential([_counting("Keep", ran), _counting("Skip", ran)], name="S")
    with tvm.transform.PassContext(instruments=[Rec()]):
        seq(tvm.IRModule())
    assert ran == ["Keep"]
    assert log == ["before S", "before Keep", "after Keep", "after S"]


def test_a_required_pass_runs_without_asking_should_run_and_enter_failure_exits_in_reverse():
    log: list = []

    class Deny:
        def __init__(self, name):
            self.name = name

        def enter_pass_ctx(self):
            if self.name == "bad":
                raise ValueError("bad enter")
            log.append(f"enter {self.name}")

        def exit_pass_ctx(self):
            log.append(f"exit {self.name}")

        def should_run(self, mod, info):
            log.append(f"asked {info.name}")
            return False

    ran: list = []
    with tvm.transform.PassContext(required_pass=["Must"], instruments=[Deny("a")]):
        _counting("Must", ran)(tvm.IRModule())
        _counting("Other", ran)(tvm.IRModule())
    assert ran == ["Must"] and log == ["enter a", "asked Other", "exit a"]
    log.clear()
    with pytest.raises(ValueError, match="bad enter"):
        with tvm.transform.PassContext(instruments=[Deny("a"), Deny("b"), Deny("bad")]):
            pass
    assert log == ["enter a", "enter b", "exit b", "exit a"]
