"""Executable.memory_stats of a training step with a symbolic batch: its statistics are one sum
with a term per intermediate (more than the shape-expression depth limit), read as a flat sum
of terms that each stay under the limit. Oracles: the same step built at a concrete batch, and
Python's own evaluation of short sums."""

import random

import pytest

from minitvm.error import RuntimeError_
from minitvm.relax.vm._shape_code import _MAX_DEPTH, MAX_NODES, compile_shape_fn


def test_a_sum_longer_than_the_depth_limit_evaluates_exactly():
    terms = [f"(h[{k % 3}] * {k + 1})" for k in range(2000)] + ["1024"] * 40
    fn = compile_shape_fn([" + ".join(terms)], "stats")
    h = [7, 11, 13]
    assert fn(h) == (sum((k + 1) * h[k % 3] for k in range(2000)) + 1024 * 40,)


@pytest.mark.parametrize("seed", range(20))
def test_mixed_plus_and_minus_sums_match_python(seed):
    rng = random.Random(seed)
    text = str(rng.randint(-9, 9))
    for _ in range(rng.randint(0, 12)):
        term = rng.choice(["h[0]", "(h[1] * 3)", "max(h[0], 4)", "-5", "(h[1] // 2)", "7"])
        text += f" {rng.choice('+-')} {term}"
    h = [rng.randint(0, 50), rng.randint(0, 50)]
    assert compile_shape_fn([text], "f")(h) == (eval(text, {"h": h, "max": max}),)


@pytest.mark.parametrize(
    "text",
    [
        "(" * (_MAX_DEPTH + 5) + "h[0]" + " * 2)" * (_MAX_DEPTH + 5),  # deep inside one term
        "1 + (" + "h[0] - " * (_MAX_DEPTH + 5) + "1)",  # a long chain in brackets is one term
        "1 + + 2",
        "1 + ",
        "(1 + 2",
        "1 + 2)",
        "h[0] + h[0:3]",
        "1 + (0,) * 99999999999999",
    ],
)
def test_loaded_code_keeps_the_depth_and_grammar_limits(text):
    with pytest.raises(RuntimeError_, match="not plain integer arithmetic|malformed"):
        compile_shape_fn([text], "f")


def test_distinct_terms_over_the_node_budget_are_refused():
    with pytest.raises(RuntimeError_, match=f"more than {MAX_NODES} terms"):
        compile_shape_fn([" + ".join(f"(h[0] * {k})" for k in range(MAX_NODES // 4))], "f")


def test_a_repeated_term_is_compiled_once_and_counted():
    # a training step's intermediates are mostly a few sizes: equal terms cost one node budget
    text = " + ".join(["(h[0] * 64)", "1024"] * MAX_NODES)
    assert compile_shape_fn([text], "stats")([3]) == ((3 * 64 + 1024) * MAX_NODES,)


def _step(model, batch, dynamic):
    import torch
    import torch.nn.functional as F

    from minitvm.training import TorchTrainer

    example = (torch.randn(batch, 4), torch.randint(0, 3, (batch,)))
    return TorchTrainer(model, example, F.cross_entropy, dynamic_batch=dynamic)


def test_symbolic_batch_training_step_stats_match_a_concrete_build(tmp_path):
    torch = pytest.importorskip("torch")
    import minitvm as tvm

    torch.manual_seed(0)
    # enough layers that the statistics expression outgrows the depth limit (gradients in the
    # weights' layout need fewer intermediates than before: 12 layers gave 40 terms)
    layers = [m for _ in range(24) for m in (torch.nn.Linear(4, 4), torch.nn.ReLU())]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(4, 3))
    symbolic = _step(model, 6, True)
    assert symbolic.symbolic_batch
    prog = symbolic.executable.program["functions"]["train_step"]
    assert prog["stats"]["intermediate_bytes"].count("+") > _MAX_DEPTH  # the case at issue
    dims = {d: 6 for d in prog["dims"]}
    got = symbolic.executable.memory_stats("train_step", **dims)
    want = _step(model, 6, False).executable.memory_stats("train_step")
    assert got["intermediate_bytes"] == want["intermediate_bytes"]
    assert got["num_intermediates"] == want["num_intermediates"]
    # the plan of a symbolic program can only reuse storage it can prove big enough
    assert want["allocated_bytes"] <= got["allocated_bytes"] <= got["intermediate_bytes"]
    path = str(tmp_path / "step.zip")
    symbolic.executable.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert loaded.memory_stats("train_step", **dims) == got
