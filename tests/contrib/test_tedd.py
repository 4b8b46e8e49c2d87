"""tvm.contrib.tedd: dataflow graph, schedule tree and IterVar relationship graph of a TE
schedule (TVM 0.19's `tedd` tutorial), read back with a DOT parser and compared with the
schedule they were drawn from."""

import re
import shutil
import subprocess
import sys
import textwrap

import pytest
from dot_syntax import check_declared, parse

from minitvm import te
from minitvm.contrib import tedd
from minitvm.error import ArgumentError, TVMError

VIEWS = [tedd.viz_dataflow_graph, tedd.viz_schedule_tree, tedd.viz_itervar_relationship_graph]


def matmul_relu():
    """C = A @ B (reduction over k), D = relu(C) + bias, scheduled with split, fuse, reorder,
    compute_at, vectorize and a cache_read; D's loops end as (i.outer.j.outer.fused, j.inner,
    i.inner)."""
    A = te.placeholder((32, 16), name="A")
    B = te.placeholder((16, 24), name="B")
    bias = te.placeholder((24,), name="bias")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((32, 24), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((32, 24), lambda i, j: te.max(C[i, j] + bias[j], 0.0), name="D")
    s = te.create_schedule(D.op)
    s.cache_read(A, "shared", [C])
    i, j = s[D].op.axis
    io, ii = s[D].split(i, factor=8)
    jo, ji = s[D].split(j, nparts=3)
    s[D].reorder(io, jo, ii, ji)
    fused = s[D].fuse(io, jo)
    s[D].reorder(fused, ji, ii)
    s[D].vectorize(ii)
    s[C].compute_at(s[D], fused)
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
    return s, {"D_axes": (i, j, io, ii, jo, ji, fused), "C_axes": (ko, ki)}


def html_rows(label):
    """The cells of an HTML-like label as (port, text) pairs, tags stripped."""
    cells = re.findall(r"<TD([^>]*)>(.*?)</TD>", label)
    out = []
    for attrs, text in cells:
        port = re.search(r'PORT="([^"]*)"', attrs)
        out.append((port.group(1) if port else None, re.sub(r"<[^>]+>", " ", text).strip()))
    return out


@pytest.mark.parametrize("view", VIEWS, ids=lambda f: f.__name__)
def test_every_picture_parses_and_declares_its_edge_ends(view):
    s, _ = matmul_relu()
    dot = parse(view(s, output_dot_string=True))
    check_declared(dot)


def test_dataflow_graph_links_stages_through_their_tensors():
    s, _ = matmul_relu()
    dot = parse(tedd.viz_dataflow_graph(s, output_dot_string=True))
    title = {n: html_rows(a["label"]) for n, a in dot.nodes.items() if n.startswith("Stage_")}
    names = {
        n: next(t for p, t in rows if p is None and "Scope" in t).split(" Scope")[0]
        for n, rows in title.items()
    }
    assert sorted(names.values()) == ["A", "A.shared", "B", "C", "D", "bias"]
    by_name = {v: k for k, v in names.items()}
    # producer stage -> its tensor -> consumer stage, read from the edges
    made = {s_: d for s_, _, d, _, _ in dot.edges if s_.startswith("Stage_")}  # stage -> tensor
    reads = {(s_, d) for s_, _, d, _, _ in dot.edges if s_.startswith("Tensor_")}
    flow = {(names[p], names[c]) for p, t in made.items() for (t2, c) in reads if t2 == t}
    assert flow == {("A", "A.shared"), ("A.shared", "C"), ("B", "C"), ("C", "D"), ("bias", "D")}
    assert dot.nodes[made[by_name["C"]]]["label"] == "[32, 24]\nfloat32"
    assert dot.nodes[made[by_name["bias"]]]["label"] == "[24]\nfloat32"
    # stages are listed producers first
    order = sorted(names, key=lambda n: int(n.split("_")[1]))
    position = {names[n]: k for k, n in enumerate(order)}
    assert all(position[a] < position[b] for a, b in flow)


def test_itervar_graph_has_every_itervar_and_its_split_and_fuse():
    s, _ = matmul_relu()
    dot = parse(tedd.viz_itervar_relationship_graph(s, output_dot_string=True))
    label_of = {}
    for node, attrs in dot.nodes.items():
        if node.startswith("IterVar_"):
            (_, index), (_, text) = html_rows(attrs["label"])
            label_of[node] = (text.split("(")[0], int(index))
    stage_d = next(name for name, label in dot.labels.items() if label == "D")
    ivs_d = {label_of[n] for n in dot.clusters[stage_d] if n in label_of}
    leaves = [iv.var.name for iv in s[s.outputs[0]].leaf_iter_vars]
    # an IterVar's index is its place among the current loops, -1 once split or fused away
    names = ["i", "j", "i.outer", "i.inner", "j.outer", "j.inner", "i.outer.j.outer.fused"]
    assert ivs_d == {(n, leaves.index(n) if n in leaves else -1) for n in names}
    assert leaves == ["i.outer.j.outer.fused", "j.inner", "i.inner"]

    def relation(kind, inputs, outputs):
        """The relation node of `kind` whose input and output ports link these IterVars."""
        for node in dot.nodes:
            if not node.startswith(kind):
                continue
            ins = {p: label_of[s_][0] for s_, _, d, p, _ in dot.edges if d == node}
            outs = {p: label_of[d][0] for s_, p, d, _, _ in dot.edges if s_ == node}
            if ins == inputs and outs == outputs:
                return node
        raise AssertionError(f"no {kind} relation {inputs} -> {outputs}")

    relation("Split", {"Input": "i"}, {"Outer": "i.outer", "Inner": "i.inner"})
    relation("Split", {"Input": "j"}, {"Outer": "j.outer", "Inner": "j.inner"})
    relation("Fuse", {"Outer": "i.outer", "Inner": "j.outer"}, {"Fused": "i.outer.j.outer.fused"})
    relation("Split", {"Input": "k"}, {"Outer": "k.outer", "Inner": "k.inner"})
    kinds = [a["label"] for n, a in dot.nodes.items() if n.startswith("IterVar_")]
    assert any("i.inner(kVectorized)" in x for x in kinds)
    assert any("k.outer(kCommReduce)" in x for x in kinds)


def test_schedule_tree_shows_leaf_loops_ranges_and_attach_points():
    s, _ = matmul_relu()
    dot = parse(tedd.viz_schedule_tree(s, output_dot_string=True))
    rows = {n: html_rows(a["label"]) for n, a in dot.nodes.items() if n.startswith("Stage_")}
    stage_named = {r[0][1].split(" Scope")[0]: n for n, r in rows.items()}
    d_rows = [t for p, t in rows[stage_named["D"]][1:] if p != "stage"]
    # leaf loops, outermost first: index cell, then name(kind) and the InferBound range
    assert d_rows[:6] == [
        "0", "i.outer.j.outer.fused(kDataPar) range(min=0, ext=12)",
        "1", "j.inner(kDataPar) range(min=0, ext=8)",
        "2", "i.inner(kVectorized) range(min=0, ext=8)",
    ]  # fmt: skip
    assert d_rows[6] == "D[i, j] = T.max(C[i, j] + bias[j], T.float32(0))"
    c_rows = [t for _, t in rows[stage_named["C"]]]
    # computed at D's fused loop (i.outer: 32 / 8 = 4, j.outer: 3 parts of 24): one 8x8 tile
    assert "i(kDataPar) range(min=i_outer_j_outer_fused // 3 * 8, ext=8)" in c_rows
    assert "j(kDataPar) range(min=i_outer_j_outer_fused % 3 * 8, ext=8)" in c_rows
    assert c_rows[-5:-1] == [
        "2", "k.outer(kCommReduce) range(min=0, ext=4)",
        "3", "k.inner(kCommReduce) range(min=0, ext=4)",
    ]  # fmt: skip
    assert "Scope: shared" in rows[stage_named["A.shared"]][0][1]
    # C is computed at D's fused loop; the other stages hang from ROOT
    edges = {(s_, d, dp) for s_, _, d, dp, _ in dot.edges}
    # the index cell of a loop carries the port a stage computed at that loop points to
    fused_port = rows[stage_named["D"]][[t for _, t in rows[stage_named["D"]]].index("0")][0]
    assert (stage_named["C"], stage_named["D"], fused_port) in edges
    for name in ("A", "B", "bias", "A.shared", "D"):
        assert (stage_named[name], "ROOT", None) in edges
    assert dot.nodes["ROOT"]["label"] == "ROOT"


def test_inlined_stage_and_thread_binding_are_shown():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((64,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    _bx, tx = s[C].split(C.op.axis[0], factor=16)
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    text = tedd.viz_schedule_tree(s, output_dot_string=True)
    dot = parse(text)
    inlined = [e for e in dot.edges if e[2] == "ROOT" and e[4].get("style") == "dashed"]
    assert len(inlined) == 1 and "B<br/>" in dot.nodes[inlined[0][0]]["label"]
    assert "i.inner(kThreadIndex)" in text and "(threadIdx.x)" in text


def test_rfactor_and_cache_write_schedules_draw():
    A = te.placeholder((64, 32), name="A")
    k = te.reduce_axis((0, 32), name="k")
    B = te.compute((64,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _ko, ki = s[B].split(B.op.reduce_axis[0], factor=8)
    BF = s.rfactor(B, ki)
    dot = parse(tedd.viz_dataflow_graph(s, output_dot_string=True))
    check_declared(dot)
    text = tedd.viz_dataflow_graph(s, output_dot_string=True)
    assert f">{BF.op.name}<br/>" in text and ">B<br/>" in text

    X = te.placeholder((16, 16), name="X")
    Y = te.compute((16, 16), lambda i, j: X[i, j] + 1.0, name="Y")
    s = te.create_schedule(Y.op)
    YL = s.cache_write(Y, "local")
    dot = parse(tedd.viz_dataflow_graph(s, output_dot_string=True))
    names = {n: html_rows(a["label"]) for n, a in dot.nodes.items() if n.startswith("Stage_")}
    title = {n: next(t for p, t in r if "Scope" in t).split(" Scope")[0] for n, r in names.items()}
    made = {s_: d for s_, _, d, _, _ in dot.edges if s_.startswith("Stage_")}
    flow = {(title[p], title[d]) for p in made for s_, _, d, _, _ in dot.edges if s_ == made[p]}
    assert flow == {("X", YL.op.name), (YL.op.name, "Y")}


def test_outputs_go_where_asked(tmp_path):
    s, _ = matmul_relu()
    path = tmp_path / "tree.dot"
    assert tedd.viz_schedule_tree(s, dot_file_path=str(path)) is None
    assert path.read_text() == tedd.viz_schedule_tree(s, output_dot_string=True)


def test_tutorial_flow_with_normalize(tmp_path):
    s, _ = matmul_relu()
    tedd.viz_dataflow_graph(s, dot_file_path=str(tmp_path / "dfg.dot"))
    tedd.viz_schedule_tree(s, dot_file_path=str(tmp_path / "st.dot"))
    s = s.normalize()
    tedd.viz_schedule_tree(s, dot_file_path=str(tmp_path / "st2.dot"))
    tedd.viz_itervar_relationship_graph(s, dot_file_path=str(tmp_path / "iv.dot"))
    for name in ("dfg", "st", "st2", "iv"):
        check_declared(parse((tmp_path / f"{name}.dot").read_text()))


def test_show_svg_without_graphviz_says_what_to_install(tmp_path, monkeypatch):
    s, _ = matmul_relu()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(TVMError, match=r"show_svg=True\) needs Graphviz's `dot` program"):
        tedd.viz_dataflow_graph(s, show_svg=True)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
@pytest.mark.parametrize("view", VIEWS, ids=lambda f: f.__name__)
def test_graphviz_accepts_every_picture(view):
    s, _ = matmul_relu()
    done = subprocess.run(
        ["dot", "-Tsvg"],
        check=False,
        input=view(s, output_dot_string=True),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_errors():
    with pytest.raises(ArgumentError, match="tedd.viz_schedule_tree: expected a te schedule"):
        tedd.viz_schedule_tree("not a schedule")
    s, _ = matmul_relu()
    with pytest.raises(ArgumentError, match="cannot write"):
        tedd.viz_dataflow_graph(s, dot_file_path="/nonexistent-dir/x.dot")


def test_tutorial_import_runs_under_the_tvm_alias():
    code = textwrap.dedent(
        """
        import sys, minitvm
        sys.modules["tvm"] = minitvm
        from tvm import te
        from tvm.contrib import tedd
        A = te.placeholder((8,), name="A")
        B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
        print(tedd.viz_dataflow_graph(te.create_schedule(B.op), output_dot_string=True))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    check_declared(parse(done.stdout))
