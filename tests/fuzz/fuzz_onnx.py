"""Fuzz category `onnx`: small valid ONNX models, mutated, imported with `from_onnx`, built with
`relax.build` and run on the VM, with ONNX Runtime as the oracle.

A case is its index: the rng is seeded from it. It picks one of six seed models (conv/pool,
matmul/gemm, broadcasting elementwise, reshape/transpose/split/slice/concat/gather, reductions,
casts) and applies 1-3 mutations: attributes, declared input shapes and dtypes, initializer
bytes/values/dims/dtypes, graph wiring (inputs renamed, nodes swapped/dropped, outputs dropped)
and the opset. ONNX Runtime and the ONNX checker run first, in a forked child (so a crash or
hang of theirs is not charged to minitvm); then minitvm:

- ORT runs the model: minitvm's outputs must equal ORT's (shape, dtype, values within
  tolerance: `Wrong` otherwise), or minitvm refuses with a MiniTVMError;
- ORT refuses: minitvm must refuse with a MiniTVMError; if it runs instead, the case is `ok`
  when the ONNX checker (full check) accepts the model, and `AcceptedInvalid` when not.
"""

from __future__ import annotations

import io
import json
import os
import random
import signal

import numpy as np
from fuzz_harness import AcceptedInvalid, Skip, Wrong

SEED = 20261125
ORT_SECONDS = 30  # the oracle's time limit for one model
MAX_ELEMENTS = 1 << 20  # a mutated input shape larger than this is not fed (Skip)
_INTS = (-(2**63), -(2**31), -7, -2, -1, 0, 1, 2, 3, 4, 5, 9, 2**31, 2**62)
_FLOATS = (0.0, -1.0, 0.5, 2.0, 1e30, -1e-30, float("nan"), float("inf"))
_DIMS = (0, 1, 2, 3, 5, 7, 64, -1, "N")
_OPSETS = (1, 6, 7, 9, 10, 11, 12, 13, 14, 17, 18, 19, 21, 22, 23, 99)


# ----------------------------------------------------------------------------- seed models


def _seeds():
    """name -> (nodes, inputs {name: (shape, dtype)}, initializers {name: array}, opset)."""
    from onnx import helper

    f32 = "float32"
    rng = np.random.default_rng(0)

    def arr(shape, dtype=f32):
        return rng.standard_normal(shape).astype(dtype)

    n = helper.make_node
    return {
        "conv_pool": (
            [n("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
             n("Relu", ["c"], ["r"]),
             n("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             n("AveragePool", ["p"], ["y"], kernel_shape=[2, 2], pads=[0, 0, 1, 1])],
            {"x": ((1, 2, 6, 6), f32)}, {"W": arr((3, 2, 3, 3)), "B": arr((3,))}, 17,
        ),
        "matmul_gemm": (
            [n("MatMul", ["x", "W"], ["m"]),
             n("Gemm", ["m", "W2", "C"], ["y"], alpha=0.5, beta=2.0, transB=1)],
            {"x": ((2, 4), f32)}, {"W": arr((4, 3)), "W2": arr((5, 3)), "C": arr((5,))}, 17,
        ),
        "elementwise": (
            [n("Add", ["x", "b"], ["s"]),
             n("Mul", ["s", "c"], ["m"]),
             n("Div", ["m", "b"], ["d"]),
             n("Abs", ["d"], ["a"]),
             n("Sqrt", ["a"], ["q"]),
             n("Max", ["q", "x"], ["y"])],
            {"x": ((2, 3, 4), f32), "b": ((3, 1), f32)}, {"c": arr((4,))}, 17,
        ),
        "shape_ops": (
            [n("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
             n("Reshape", ["t", "shape"], ["r"]),
             n("Split", ["r", "split"], ["a", "b"], axis=1),
             n("Slice", ["b", "starts", "ends", "axes"], ["s"]),
             n("Concat", ["a", "s"], ["c"], axis=0),
             n("Gather", ["c", "idx"], ["y"], axis=0)],
            {"x": ((2, 3, 4), f32)},
            {"shape": np.array([4, 6], "int64"), "split": np.array([2, 4], "int64"),
             "starts": np.array([0, 1], "int64"), "ends": np.array([4, 3], "int64"),
             "axes": np.array([0, 1], "int64"), "idx": np.array([0, 3, 7, -1], "int64")},
            17,
        ),
        "reductions": (
            [n("ReduceSum", ["x", "axes"], ["s"], keepdims=1),
             n("ReduceMean", ["s"], ["m"], axes=[1], keepdims=0),
             n("ReduceMax", ["x"], ["mx"], axes=[0, 2], keepdims=1),
             n("ArgMax", ["x"], ["y2"], axis=2, keepdims=0),
             n("Softmax", ["m"], ["y"], axis=-1)],
            {"x": ((2, 3, 4), f32)}, {"axes": np.array([1], "int64")}, 17,
        ),
        "cast": (
            [n("Clip", ["x", "lo", "hi"], ["c"]),
             n("Cast", ["c"], ["i"], to=6),  # int32
             n("Cast", ["i"], ["h"], to=10),  # float16
             n("Cast", ["k"], ["kf"], to=10),
             n("Add", ["h", "kf"], ["a"]),
             n("Cast", ["a"], ["y"], to=1)],
            {"x": ((2, 3), f32), "k": ((3,), "int64")},
            {"lo": np.array(0, f32), "hi": np.array(100, f32)}, 17,
        ),
    }  # fmt: skip


def _outputs(name: str) -> dict[str, str]:
    """The seed model's graph outputs: name -> dtype."""
    return {"reductions": {"y": "float32", "mx": "float32", "y2": "int64"}}.get(
        name, {"y": "float32"}
    )


def seed_model(name: str):
    """The valid seed model `name` as an onnx.ModelProto."""
    import onnx
    from onnx import helper, numpy_helper

    nodes, inputs, inits, opset = _seeds()[name]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(k, _elem(d), s) for k, (s, d) in inputs.items()],
        [helper.make_tensor_value_info(o, _elem(d), None) for o, d in _outputs(name).items()],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    # the outputs' shapes, as an exporter writes them (the checker requires them)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    del model.graph.output[:]
    model.graph.output.extend(inferred.graph.output)
    return model


def _elem(dtype: str) -> int:
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


# ----------------------------------------------------------------------------- mutations

MUTATIONS = ("attr", "attr", "shape", "dtype", "init_bytes", "init_values", "init_dims",
             "wiring", "wiring", "opset")  # fmt: skip
_ELEM_TYPES = (1, 2, 3, 5, 6, 7, 9, 10, 11, 12, 13, 16, 0, 8, 99)  # incl. string, undefined, bogus


def mutate(model, rng: random.Random) -> list[str]:
    """Apply 1-3 mutations to `model` in place; returns their descriptions."""
    done = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(MUTATIONS)
        done.append(f"{kind}: {_MUTATORS[kind](model, rng)}")
    return done


def _attr(model, rng):
    from onnx import AttributeProto, helper

    node = rng.choice(list(model.graph.node))
    if not node.attribute or rng.random() < 0.15:
        new = rng.choice(["axis", "axes", "perm", "keepdims", "to", "pads", "strides"])
        node.attribute.append(helper.make_attribute(new, rng.choice(_INTS[2:12])))
        return f"{node.op_type}: added {new}"
    attr = rng.choice(list(node.attribute))
    if rng.random() < 0.1:
        node.attribute.remove(attr)
        return f"{node.op_type}: removed {attr.name}"
    if attr.type == AttributeProto.INT:
        attr.i = rng.choice(_INTS)
    elif attr.type == AttributeProto.FLOAT:
        attr.f = rng.choice(_FLOATS)
    elif attr.type == AttributeProto.INTS:
        values = list(attr.ints)
        if values and rng.random() < 0.7:
            values[rng.randrange(len(values))] = rng.choice(_INTS)
        elif values and rng.random() < 0.5:
            values.pop()
        else:
            values.append(rng.choice(_INTS[3:12]))
        del attr.ints[:]
        attr.ints.extend(values)
    return f"{node.op_type}.{attr.name} -> {helper.get_attribute_value(attr)}"


def _shape(model, rng):
    value = rng.choice(list(model.graph.input))
    dims = value.type.tensor_type.shape.dim
    if rng.random() < 0.15 and dims:
        dims.pop()
        return f"{value.name}: dropped a dim"
    dim = dims[rng.randrange(len(dims))] if dims else dims.add()
    new = rng.choice(_DIMS)
    if isinstance(new, str):
        dim.dim_param = new
    else:
        dim.dim_value = new
    return f"{value.name}: dim -> {new}"


def _dtype(model, rng):
    new = rng.choice(_ELEM_TYPES)
    if rng.random() < 0.5 or not model.graph.initializer:
        value = rng.choice(list(model.graph.input))
        value.type.tensor_type.elem_type = new
        return f"input {value.name} -> {new}"
    init = rng.choice(list(model.graph.initializer))
    init.data_type = new  # the raw bytes stay: now of another element size or meaning
    return f"initializer {init.name} -> {new}"


def _init_bytes(model, rng):
    if not model.graph.initializer:
        return "no initializer"
    init = rng.choice(list(model.graph.initializer))
    raw = bytearray(init.raw_data)
    if raw and rng.random() < 0.5:
        for _ in range(rng.randint(1, 4)):
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        what = "flipped"
    else:
        raw = raw[: rng.randrange(len(raw) + 1)] if rng.random() < 0.7 else raw + b"\x01" * 7
        what = f"resized to {len(raw)}"
    init.raw_data = bytes(raw)
    return f"{init.name}: bytes {what}"


def _init_values(model, rng):
    from onnx import numpy_helper

    if not model.graph.initializer:
        return "no initializer"
    init = rng.choice(list(model.graph.initializer))
    try:
        value = numpy_helper.to_array(init).copy()
    except Exception:  # noqa: BLE001 - an earlier mutation damaged it: leave it so
        return f"{init.name}: unreadable"
    if value.size:
        flat = value.reshape(-1)
        pool = _INTS if value.dtype.kind in "iu" else _FLOATS
        for _ in range(rng.randint(1, 2)):
            pick = rng.choice(pool)
            if value.dtype.kind in "iu":
                info = np.iinfo(value.dtype)
                pick = min(max(pick, info.min), info.max)
            flat[rng.randrange(flat.size)] = pick
    init.CopyFrom(numpy_helper.from_array(value, init.name))
    return f"{init.name} -> {value.tolist()}"[:200]


def _init_dims(model, rng):
    if not model.graph.initializer:
        return "no initializer"
    init = rng.choice(list(model.graph.initializer))
    dims = list(init.dims)
    if dims and rng.random() < 0.6:
        dims[rng.randrange(len(dims))] = rng.choice(_INTS)
    elif dims and rng.random() < 0.5:
        dims.pop()
    else:
        dims.append(rng.choice((1, 2, 0)))
    del init.dims[:]
    init.dims.extend(dims)
    return f"{init.name}: dims -> {dims}"


def _wiring(model, rng):
    graph = model.graph
    nodes = list(graph.node)
    names = [v.name for v in graph.input] + [i.name for i in graph.initializer]
    names += [o for nd in nodes for o in nd.output] + ["", "nowhere"]
    choice = rng.randrange(5)
    node = rng.choice(nodes)
    if choice == 0 and node.input:
        k = rng.randrange(len(node.input))
        node.input[k] = rng.choice(names)
        return f"{node.op_type} input {k} -> {node.input[k]!r}"
    if choice == 1 and len(nodes) > 1:
        i, j = rng.sample(range(len(nodes)), 2)
        nodes = [type(nd)() for nd in nodes]
        for new, old in zip(nodes, graph.node):
            new.CopyFrom(old)
        del graph.node[:]
        nodes[i], nodes[j] = nodes[j], nodes[i]
        graph.node.extend(nodes)
        return f"swapped nodes {i}, {j}"
    if choice == 2 and len(nodes) > 1:
        graph.node.remove(graph.node[rng.randrange(len(nodes))])
        return "dropped a node"
    if choice == 3:
        node.output[0] = rng.choice(names)
        return f"{node.op_type} output -> {node.output[0]!r}"
    k = rng.randrange(len(node.input) + 1)
    node.input.insert(k, rng.choice(names))
    return f"{node.op_type}: inserted input at {k}"


def _opset(model, rng):
    model.opset_import[0].version = rng.choice(_OPSETS)
    return f"opset {model.opset_import[0].version}"


_MUTATORS = {"attr": _attr, "shape": _shape, "dtype": _dtype, "init_bytes": _init_bytes,
             "init_values": _init_values, "init_dims": _init_dims, "wiring": _wiring,
             "opset": _opset}  # fmt: skip


# ----------------------------------------------------------------------------- feeds and oracle


def feeds(model, rng: random.Random) -> dict:
    """Random data for the graph inputs as declared (symbolic or negative dims: 1-3)."""
    from onnx import helper

    np_rng = np.random.default_rng(rng.randrange(2**32))
    out = {}
    initialized = {i.name for i in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initialized:
            continue
        tensor = value.type.tensor_type
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        except Exception as err:
            raise Skip(f"no data of elem_type {tensor.elem_type} for {value.name}") from err
        shape = tuple(
            d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else rng.randint(1, 3)
            for d in tensor.shape.dim
        )
        if int(np.prod(shape, dtype=object)) > MAX_ELEMENTS:
            raise Skip(f"input {value.name} of shape {shape} is too large to feed")
        if dtype.kind == "f":
            data = np_rng.standard_normal(shape) * rng.choice((1, 1, 1, 100))
            if rng.random() < 0.1 and data.size:
                data.reshape(-1)[0] = rng.choice((0.0, np.nan, np.inf))
        elif dtype.kind in "iu":
            data = np_rng.integers(0 if dtype.kind == "u" else -3, 6, shape)
        elif dtype.kind == "b":
            data = np_rng.integers(0, 2, shape)
        else:
            raise Skip(f"no data of dtype {dtype} for {value.name}")
        out[value.name] = np.asarray(data).astype(dtype)
    return out


def oracle(model_bytes: bytes, inputs: dict) -> dict:
    """The ONNX checker's verdict and ONNX Runtime's outputs (or its refusal), computed in a
    forked child under a time limit: {"checker": str|None, "ort": str|None, "outputs": [...]}."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        try:
            signal.alarm(ORT_SECONDS)
            payload = _oracle_child(model_bytes, inputs)
        except BaseException as err:  # noqa: BLE001 - anything reaches the parent as text
            payload = _pack({"checker": None, "ort": f"oracle failed: {err!r}"}, [])
        with os.fdopen(write, "wb") as out:
            out.write(payload)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as src:
        data = src.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        return {"checker": None, "ort": f"ONNX Runtime died (wait status {status})", "outputs": []}
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        head = json.loads(str(npz["head"]))
        head["outputs"] = [npz[f"o{i}"] for i in range(head.pop("n"))]
    return head


def _pack(head: dict, outputs: list) -> bytes:
    buf = io.BytesIO()
    arrays = {f"o{i}": o for i, o in enumerate(outputs)}
    np.savez(buf, head=np.array(json.dumps({**head, "n": len(outputs)})), **arrays)
    return buf.getvalue()


def _oracle_child(model_bytes: bytes, inputs: dict) -> bytes:
    import onnx
    import onnxruntime as ort

    checker = None
    try:
        onnx.checker.check_model(onnx.load_from_string(model_bytes), full_check=True)
    except Exception as err:  # noqa: BLE001 - the checker's verdict, kept as text
        checker = f"{type(err).__name__}: {err}"[:300]
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 4
    # the model as written: ORT's graph rewrites drop Cast pairs (float -> float16 -> float)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
        outputs = sess.run(None, inputs)
    except Exception as err:  # noqa: BLE001 - a refusal by ORT, kept as text
        return _pack({"checker": checker, "ort": f"{type(err).__name__}: {err}"[:300]}, [])
    outputs = [np.asarray(o) for o in outputs]
    if any(o.dtype == object for o in outputs):
        return _pack({"checker": checker, "ort": "non-numeric output"}, [])
    return _pack({"checker": checker, "ort": None}, outputs)


# ----------------------------------------------------------------------------- the case


def run_onnx_case(rng: random.Random) -> None:
    import onnx

    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.frontend.onnx import from_onnx

    name = rng.choice(sorted(_seeds()))
    model = seed_model(name)
    what = mutate(model, rng)
    try:
        model_bytes = model.SerializeToString()
        model = onnx.load_from_string(model_bytes)  # what a file would hold
    except Exception as err:
        raise Skip(f"the mutated model does not serialize: {err}") from err
    inputs = feeds(model, rng)
    verdict = oracle(model_bytes, inputs)
    mod = from_onnx(model)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    initialized = {i.name for i in model.graph.initializer}
    names = [v.name for v in model.graph.input if v.name not in initialized]
    got = vm["main"](*[tvm.nd.array(inputs[k]) for k in names])
    got = [np.asarray(g.numpy()) for g in (got if isinstance(got, list | tuple) else [got])]
    if verdict["ort"] is not None:  # ORT refused, minitvm ran it
        if verdict["checker"] is not None:
            raise AcceptedInvalid(
                f"{name} {what}: ORT refused ({verdict['ort']}), the checker too "
                f"({verdict['checker']}), minitvm ran it"
            )
        return
    try:
        _compare(name, what, got, verdict["outputs"])
    except Wrong:
        # where ONNX's own reference evaluator agrees with minitvm, ORT is the one that
        # deviates from the model as written (_reference_agrees says where that was seen)
        if not _reference_agrees(model, inputs, name, what, got):
            raise


def _reference_agrees(model, inputs: dict, name: str, what: list, got: list) -> bool:
    """Whether ONNX's own reference evaluator (the spec in executable form) gives minitvm's
    outputs where ORT differs: ORT folds float -> float16 -> float Cast pairs, and computes
    a pooling window wider than its input with C's truncating division (width 1 where the
    spec's floor formula gives 0)."""
    from onnx.reference import ReferenceEvaluator

    try:
        want = ReferenceEvaluator(model).run(None, inputs)
        _compare(name, what, got, [np.asarray(w) for w in want])
    except Exception:  # noqa: BLE001 - no second opinion: the first one stands
        return False
    return True


def _compare(name: str, what: list, got: list, want: list) -> None:
    where = f"{name} {what}"
    if len(got) != len(want):
        raise Wrong(f"{where}: {len(got)} outputs, ORT gives {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            raise Wrong(f"{where}: output {i} is {g.dtype}{g.shape}, ORT's {w.dtype}{w.shape}")
        if w.dtype.kind == "f":
            scale = float(np.nanmax(np.abs(np.where(np.isinf(w), 0, w)), initial=1.0))
            tol = 1e-2 if w.dtype == np.float16 else 1e-4
            ok = np.allclose(g, w, rtol=tol, atol=tol * max(scale, 1.0), equal_nan=True)
        else:
            ok = np.array_equal(g, w)
        if not ok:
            raise Wrong(f"{where}: output {i} differs from ORT's: got {g}, ORT {w}"[:1500])


def run_case(case: int, canary_dir: str) -> None:
    """The harness's entry: case `case` of the onnx category."""
    from fuzz_record_cases import limit_memory

    limit_memory()
    run_onnx_case(random.Random(f"{SEED}:{case}"))
