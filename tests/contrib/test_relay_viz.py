"""tvm.contrib.relay_viz: text trees and DOT pictures of Relay modules (TVM 0.19's
`using_relay_viz` tutorial), checked against TVM's documented output and an independent walk
of the Relay expressions."""

import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from dot_syntax import check_declared, parse

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import relay_viz
from minitvm.contrib.relay_viz.interface import VizEdge, VizGraph, VizNode, VizParser
from minitvm.contrib.relay_viz.terminal import TermGraph, TermPlotter, TermVizParser
from minitvm.error import ArgumentError


def tutorial_module():
    """The module of TVM's tutorial: main calls the global function AddFunc twice."""
    data, bias = relay.var("data"), relay.var("bias")
    add_gvar = relay.GlobalVar("AddFunc")
    add_func = relay.Function([data, bias], relay.add(data, bias))
    inputs = [relay.var(f"input{i}") for i in range(3)]
    add_01 = relay.Call(add_gvar, [inputs[0], inputs[1]])
    main = relay.Function(inputs, relay.Call(add_gvar, [inputs[2], add_01]))
    return tvm.IRModule({relay.GlobalVar("main"): main, add_gvar: add_func})


# The tutorial's printed output, as TVM's documentation shows it.
TUTORIAL_TEXT = """\
@main([Var(input0), Var(input1), Var(input2)])
`--Call
   |--GlobalVar AddFunc
   |--Var(Input) name_hint: input2
   `--Call
      |--GlobalVar AddFunc
      |--Var(Input) name_hint: input0
      `--Var(Input) name_hint: input1
@AddFunc([Var(data), Var(bias)])
`--Call
   |--add
   |--Var(Input) name_hint: data
   `--Var(Input) name_hint: bias"""


def typed_module():
    """Every kind of Relay expression: typed vars, constants, ops with attributes, a tuple and
    its projections, a let, an if, a call of an inline function and a shared subexpression."""
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    conv = relay.nn.conv2d(x, w, padding=(1, 1), channels=4, kernel_size=(3, 3))
    y = relay.nn.relu(conv)
    shared = relay.add(y, relay.const(np.ones((1, 4, 8, 8), "float32")))
    tup = relay.Tuple([shared, y])
    first, second = relay.TupleGetItem(tup, 0), relay.TupleGetItem(tup, 1)
    v = relay.var("v")
    let = relay.Let(v, relay.multiply(first, second), relay.add(v, shared))
    p = relay.var("p", shape=(1, 4, 8, 8))
    inline = relay.Function([p], relay.nn.relu(p))
    cond = relay.var("cond", shape=(), dtype="bool")
    body = relay.If(cond, relay.Call(inline, [let]), shared)
    return tvm.IRModule.from_expr(relay.Function([x, w, cond], body))


# --- an independent walk: which expressions a Relay expression reads


def operands(e):
    """The expressions `e` reads directly, in TVM's visiting order."""
    if isinstance(e, relay.Call):
        return [e.op, *e.args]
    if isinstance(e, relay.Function):
        return [*e.params, e.body]
    if isinstance(e, relay.Tuple):
        return list(e.fields)
    if isinstance(e, relay.TupleGetItem):
        return [e.tuple_value]
    if isinstance(e, relay.Let):
        return [e.var, e.value, e.body]
    if isinstance(e, relay.If):
        return [e.cond, e.true_branch, e.false_branch]
    return []


def all_exprs(root):
    seen, stack = {}, [root]
    while stack:
        e = stack.pop()
        if id(e) not in seen:
            seen[id(e)] = e
            stack.extend(operands(e))
    return list(seen.values())


class Recorder(relay_viz.Plotter):
    """A plotter that keeps what RelayVisualizer gave it."""

    class Graph(VizGraph):
        def __init__(self):
            self.nodes, self.edges = [], []

        def node(self, viz_node):
            self.nodes.append(viz_node)

        def edge(self, viz_edge):
            self.edges.append((viz_edge.start, viz_edge.end))

    def __init__(self):
        self.graphs = {}

    def create_graph(self, name):
        self.graphs[name] = Recorder.Graph()
        return self.graphs[name]

    def render(self, filename=None):
        return self.graphs


def record(mod, parser, params=None):
    """(graphs, node_to_id) where node_to_id maps expression identity to the node id the
    visualizer gave it (recovered from the parser's own calls)."""
    ids = {}

    class Spy(VizParser):
        def get_node_edges(self, node, relay_param, node_to_id):
            ids[id(node)] = node_to_id[node]
            return parser.get_node_edges(node, relay_param, node_to_id)

    plotter = Recorder()
    relay_viz.RelayVisualizer(mod, params, plotter, Spy()).render()
    return plotter.graphs, ids


# --- text trees


def test_tutorial_module_prints_as_tvm_documents(capsys):
    out = relay_viz.RelayVisualizer(tutorial_module()).render()
    assert capsys.readouterr().out == TUTORIAL_TEXT + "\n"
    assert out == TUTORIAL_TEXT


def test_term_parser_gives_every_expression_a_node_and_every_operand_an_edge():
    mod = typed_module()
    graphs, ids = record(mod, TermVizParser())
    exprs = all_exprs(mod["main"])
    graph = graphs["main"]
    assert len(graph.nodes) == len(exprs)
    assert sorted(n.identity for n in graph.nodes) == sorted(ids[id(e)] for e in exprs)
    want = {(ids[id(c)], ids[id(e)]) for e in exprs for c in operands(e)}
    # the Term parser draws a function from its body only (its parameters head the tree)
    funcs = [e for e in exprs if isinstance(e, relay.Function)]
    want -= {(ids[id(p)], ids[id(f)]) for f in funcs for p in f.params}
    assert set(graph.edges) == want


def test_default_parser_edges_run_from_producers_to_consumers():
    mod = typed_module()
    graphs, ids = record(mod, relay_viz.DotVizParser())
    exprs = all_exprs(mod["main"])
    drawn = [e for e in exprs if not isinstance(e, relay.Op | relay.GlobalVar)]
    graph = graphs["main"]
    assert len(graph.nodes) == len(drawn)
    want = set()
    for e in drawn:
        reads = operands(e)
        if isinstance(e, relay.Function):
            reads = [e.body]
        want |= {(ids[id(c)], ids[id(e)]) for c in reads if not isinstance(c, relay.Op)}
    assert set(graph.edges) == want
    kinds = {n.type_name for n in graph.nodes}
    assert {"Call nn.conv2d", "Call nn.relu", "Call add", "Const", "Tuple", "TupleGetItem"} <= kinds
    assert {"Let", "If", "Call Anonymous Func", "Func", "Var(Input)"} <= kinds


def test_text_lists_shapes_dtypes_and_attributes():
    mod = typed_module()
    params = {"w": np.zeros((4, 3, 3, 3), "float32")}
    text = relay_viz.RelayVisualizer(mod, params, TermPlotter()).render("/dev/null")
    assert "Var(Input) name_hint: x, shape: (1, 3, 8, 8), dtype: float32" in text
    assert "Var(Param) name_hint: w, shape: (4, 3, 3, 3), dtype: float32" in text
    assert "Const shape: (1, 4, 8, 8), dtype: float32" in text
    assert text.splitlines()[0].startswith("@main([Var(x, ty=TensorType([1, 3, 8, 8], float32))")
    dot = relay_viz.DotPlotter()
    relay_viz.RelayVisualizer(mod, params, dot, relay_viz.DotVizParser())
    assert "padding: [1, 1, 1, 1]" in dot.source and "channels: 4" in dot.source


def test_shared_expression_is_expanded_once():
    x = relay.var("x", shape=(2, 3))
    y = relay.nn.relu(x)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(y, y)))
    text = relay_viz.RelayVisualizer(mod, plotter=TermPlotter()).render("/dev/null")
    assert text == (
        "@main([Var(x, ty=TensorType([2, 3], float32))])\n"
        "`--Call\n"
        "   |--add\n"
        "   |--Call\n"
        "   |  |--nn.relu\n"
        "   |  `--Var(Input) name_hint: x, shape: (2, 3), dtype: float32\n"
        "   `--Call (repeated, see above)"
    )


def test_deep_chain_renders_without_recursion():
    x = relay.var("x", shape=(4,))
    y = x
    for _ in range(3000):
        y = relay.nn.relu(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    text = relay_viz.RelayVisualizer(mod, plotter=TermPlotter()).render("/dev/null")
    assert text.count("nn.relu") == 3000


def test_main_is_drawn_first_and_ids_are_unique_across_functions():
    mod = tutorial_module()
    reordered = tvm.IRModule({"AddFunc": mod["AddFunc"], "main": mod["main"]})
    graphs, _ = record(reordered, TermVizParser())
    assert list(graphs) == ["main", "AddFunc"]
    ids = [n.identity for g in graphs.values() for n in g.nodes]
    assert len(ids) == len(set(ids))


# --- the tutorial's customisations


class YourAwesomeParser(VizParser):
    def __init__(self):
        self._delegate = TermVizParser()

    def get_node_edges(self, node, relay_param, node_to_id):
        if isinstance(node, relay.Var):
            return VizNode(node_to_id[node], "AwesomeVar", f"name_hint {node.name_hint}"), []
        return self._delegate.get_node_edges(node, relay_param, node_to_id)


class AwesomeGraph(TermGraph):
    def node(self, viz_node):
        super().node(viz_node)
        if viz_node.type_name == "AwesomeVar":
            duplicated_id = f"duplicated_{viz_node.identity}"
            super().node(VizNode(duplicated_id, "double AwesomeVar", ""))
            super().edge(VizEdge(duplicated_id, viz_node.identity))


class AwesomePlotter(TermPlotter):
    def create_graph(self, name):
        self._name_to_graph[name] = AwesomeGraph(name)
        return self._name_to_graph[name]


def test_custom_parser_relabels_variables(capsys):
    relay_viz.RelayVisualizer(tutorial_module(), {}, TermPlotter(), YourAwesomeParser()).render()
    out = capsys.readouterr().out
    assert out == TUTORIAL_TEXT.replace("Var(Input) name_hint: ", "AwesomeVar name_hint ") + "\n"


def test_custom_graph_adds_nodes_of_its_own():
    text = relay_viz.RelayVisualizer(
        tutorial_module(), {}, AwesomePlotter(), YourAwesomeParser()
    ).render("/dev/null")
    lines = text.splitlines()
    assert lines[3:5] == ["   |--AwesomeVar name_hint input2", "   |  `--double AwesomeVar"]
    assert text.count("double AwesomeVar") == 5  # one per variable use


# --- DOT pictures


def dot_picture(mod, params=None, **kw):
    plotter = relay_viz.DotPlotter(**kw)
    relay_viz.RelayVisualizer(mod, params, plotter, relay_viz.DotVizParser())
    return plotter


def test_dot_source_parses_and_matches_the_graph():
    mod = typed_module()
    source = dot_picture(mod).source
    dot = parse(source)
    check_declared(dot)
    graphs, _ids = record(mod, relay_viz.DotVizParser())
    assert set(dot.nodes) == {n.identity for n in graphs["main"].nodes}
    assert {(s, d) for s, _, d, _, _ in dot.edges} == set(graphs["main"].edges)
    assert set(dot.clusters) == {"cluster_main"}
    conv = next(a for a in dot.nodes.values() if a["label"].startswith("Call nn.conv2d"))
    assert "kernel_size: [3, 3]" in conv["label"].split("\n")


def test_dot_attributes_are_applied():
    def get_node_attr(node):
        if "nn.conv2d" in node.type_name:
            return {"fillcolor": "green", "style": "filled", "shape": "box"}
        return {"shape": "ellipse" if "Var" in node.type_name else "box"}

    plotter = dot_picture(
        typed_module(),
        graph_attr={"color": "red"},
        node_attr={"color": "blue"},
        edge_attr={"color": "black"},
        get_node_attr=get_node_attr,
    )
    dot = parse(plotter.source)
    assert dot.defaults == {
        "graph": {"color": "red"},
        "node": {"color": "blue"},
        "edge": {"color": "black"},
    }
    conv = [a for a in dot.nodes.values() if a["label"].startswith("Call nn.conv2d")]
    assert len(conv) == 1 and conv[0]["fillcolor"] == "green"
    assert all(a["shape"] == "ellipse" for a in dot.nodes.values() if "Var" in a["label"])


def test_dot_labels_with_quotes_and_backslashes_stay_one_string():
    x = relay.var('we"ird\\name', shape=(2,))
    source = dot_picture(tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))).source
    labels = [a["label"] for a in parse(source).nodes.values()]
    assert 'Var(Input)\nname_hint: we"ird\\name\nshape: (2,)\ndtype: float32' in labels


def test_dot_render_without_graphviz_writes_the_source_and_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    plotter = dot_picture(tutorial_module())
    with pytest.warns(UserWarning, match=r"`dot` program is not on PATH.*dot -Tpdf"):
        out = plotter.render(str(tmp_path / "pic"))
    assert out == str(tmp_path / "pic.dot")
    assert (tmp_path / "pic.dot").read_text() == plotter.source
    assert not (tmp_path / "pic.pdf").exists()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_graphviz_accepts_the_picture(tmp_path):
    plotter = relay_viz.DotPlotter(render_kwargs={"format": "svg"})
    relay_viz.RelayVisualizer(typed_module(), None, plotter, relay_viz.DotVizParser())
    out = plotter.render(str(tmp_path / "pic"))
    assert out == str(tmp_path / "pic.svg") and "<svg" in (tmp_path / "pic.svg").read_text()
    done = subprocess.run(
        ["dot", "-Tcanon"], check=False, input=plotter.source, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr


# --- errors


def test_errors_name_the_argument():
    with pytest.raises(ArgumentError, match="relay_mod must be a tvm.IRModule"):
        relay_viz.RelayVisualizer(relay.Function([], relay.const(1.0)))
    from minitvm.script import tir as T

    @T.prim_func
    def kernel(a: T.Buffer((4,), "float32")):
        a[0] = T.float32(0)

    mod = tutorial_module()
    mod["kernel"] = kernel
    with pytest.raises(ArgumentError, match="function 'kernel' .* not a relay.Function"):
        relay_viz.RelayVisualizer(mod)
    with pytest.raises(ArgumentError, match="parser dict has no get_node_edges"):
        relay_viz.RelayVisualizer(tutorial_module(), parser={})
    with pytest.raises(ArgumentError, match=r"render_kwargs \['view'\]"):
        relay_viz.DotPlotter(render_kwargs={"view": True})


def test_edge_to_a_node_never_added_is_refused():
    class Dangling(VizParser):
        def get_node_edges(self, node, relay_param, node_to_id):
            if isinstance(node, relay.Function):
                return VizNode(node_to_id[node], "Func", ""), [VizEdge("nowhere", node_to_id[node])]
            return None, []

    viz = relay_viz.RelayVisualizer(tutorial_module(), plotter=TermPlotter(), parser=Dangling())
    with pytest.raises(ArgumentError, match="node id 'nowhere'"):
        viz.render("/dev/null")


def test_tutorial_imports_run_under_the_tvm_alias():
    """The tutorial spells the modules `tvm.contrib.relay_viz.*` (with sys.modules["tvm"])."""
    code = textwrap.dedent(
        """
        import sys, minitvm
        sys.modules["tvm"] = minitvm
        import tvm
        from tvm import relay
        from tvm.contrib import relay_viz
        from tvm.contrib.relay_viz.interface import VizEdge, VizNode, VizParser
        from tvm.contrib.relay_viz.terminal import TermGraph, TermPlotter, TermVizParser
        x = relay.var("x")
        mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
        relay_viz.RelayVisualizer(mod).render()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "@main([Var(x)])\n`--Call\n   |--nn.relu\n   `--Var(Input) name_hint: x\n"
