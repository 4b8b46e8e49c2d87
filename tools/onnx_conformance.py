"""Run ONNX's node conformance cases through from_onnx, many cases per subprocess.

Usage from the repository root:
    python tools/onnx_conformance.py [--match RE] [--sample N --seed S] [--out rows.json]
                                     [--ort] [--batch 150] [--timeout 60] [--table docs/compatibility.md]

The cases come from the installed onnx package (`onnx.backend.test.case.node.collect_testcases`);
nothing is copied into the repository. Each case: from_onnx -> relax.build -> VM on the case's
inputs, compared with the case's expected outputs. Outcomes per case:
  ok        ran and matched
  refused   a minitvm.error.OpNotImplemented (the op, opset or attribute is not supported)
  error     another minitvm error
  wrong     ran, numbers/shape/dtype differ (the worst outcome)
  foreign   an exception that is not a minitvm error
  crash     the worker died (signal); the case is skipped and the worker restarted
  timeout   the case ran past --timeout seconds
  skipped   the case's data is not arrays or sequences of arrays (strings, empty optionals)
With --ort the same cases also run on ONNX Runtime (column "ort": ok / wrong / error).
With --table FILE the per-op table between the ONNX markers of FILE is rewritten from the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import time
from collections import Counter

FLOAT16_ULPS = 2  # see _compare
# ONNX's reference rounds bfloat16/float8 math to the narrow type after every numpy step;
# minitvm computes in float32 and rounds once (as TVM does), so computed outputs of those
# types may differ by a few of their ulps. Conversions (graphs of only CONVERSION_OPS) are
# compared bit for bit.
LOWFLOAT_ULPS = 4
CONVERSION_OPS = frozenset(("Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "Constant"))
OUTCOMES = ("ok", "refused", "error", "wrong", "foreign", "crash", "timeout", "skipped")
TABLE_BEGIN = "<!-- onnx-conformance-table:begin (tools/onnx_conformance.py --table) -->"
TABLE_END = "<!-- onnx-conformance-table:end -->"


# --------------------------------------------------------------------------- worker side


def _compare(
    got: list,
    expected: list,
    rtol: float,
    atol: float,
    float16_ulps: int = 0,
    lowfloat_ulps: int = 0,
):
    """None when `got` matches `expected` (the shared runner's rule), else a message.

    With float16_ulps, float16 outputs may also differ by that many float16 ulps (relative):
    ONNX's float16 expected outputs are themselves rounded at each step of the reference.
    bfloat16/float8/int4 outputs must match bit for bit (any NaN equals any NaN), or with
    lowfloat_ulps be within that many ulps of their type.
    """
    import numpy as np

    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    got, expected, msg = _flatten_sequences(got, expected)
    if msg:
        return msg
    for i, (g, r) in enumerate(zip(got, expected)):
        g, r = np.asarray(g), np.asarray(r)
        if g.shape != r.shape:
            return f"output {i}: shape {g.shape} expected {r.shape}"
        if _is_ml_dtype(r.dtype):
            if g.dtype != r.dtype:
                return f"output {i}: dtype {g.dtype}, expected {r.dtype}"
            if not _same_bits(g, r) and not (lowfloat_ulps and _within_ulps(g, r, lowfloat_ulps)):
                return f"output {i}: {r.dtype} values differ in their bits"
            continue
        if r.dtype.kind in "fc":
            rtol_f = max(rtol, 1e-3, float16_ulps * 2.0**-10 if r.dtype == np.float16 else 0)
            ok = np.allclose(
                g.astype(r.dtype), r, rtol=rtol_f, atol=max(atol, 1e-5), equal_nan=True
            )
        else:
            ok = np.array_equal(g.astype(r.dtype) if g.dtype != r.dtype else g, r)
        if not ok or (g.dtype != r.dtype and r.dtype.kind != "f"):
            return f"output {i}: dtype {g.dtype}/{r.dtype}, values differ"
    return None


def _flatten_sequences(got: list, expected: list) -> tuple[list, list, str | None]:
    """Outputs with each expected sequence (a list) replaced by its items, in order; a message
    when `got` does not give a sequence of the same length there (a relax Tuple)."""
    flat_got, flat_expected = [], []
    for i, (g, r) in enumerate(zip(got, expected)):
        if not isinstance(r, list):
            if isinstance(g, list | tuple):
                return [], [], f"output {i}: a sequence of {len(g)} items, expected a tensor"
            flat_got.append(g)
            flat_expected.append(r)
            continue
        if not isinstance(g, list | tuple) or len(g) != len(r):
            seen = f"{len(g)} items" if isinstance(g, list | tuple) else "a tensor"
            return [], [], f"output {i}: {seen}, expected a sequence of {len(r)} items"
        flat_got += list(g)
        flat_expected += list(r)
    return flat_got, flat_expected, None


def _same_bits(got, expected) -> bool:
    """Exact bit equality of two arrays of one ml_dtypes type; any NaN equals any NaN."""
    import numpy as np

    bits = f"uint{expected.dtype.itemsize * 8}"
    same = got.view(bits) == expected.view(bits)
    if "float" in expected.dtype.name:
        wide = np.float32
        same |= np.isnan(got.astype(wide)) & np.isnan(expected.astype(wide))
    return bool(np.all(same))


def _within_ulps(got, expected, ulps: int) -> bool:
    """Float outputs of an ml_dtypes float type within `ulps` units in the last place of
    the expected value (infinities and NaNs must match exactly)."""
    import ml_dtypes
    import numpy as np

    if "float" not in expected.dtype.name:
        return False
    info = ml_dtypes.finfo(expected.dtype)
    g, r = got.astype(np.float64), expected.astype(np.float64)
    finite = np.isfinite(r)
    with np.errstate(divide="ignore"):
        exp = np.floor(np.log2(np.where(finite & (r != 0), np.abs(r), 1.0)))
    ulp = np.maximum(2.0 ** (exp - info.nmant), float(info.smallest_subnormal))
    close = finite & (np.abs(g - r) <= ulps * ulp)
    same = (g == r) | (np.isnan(g) & np.isnan(r))
    return bool(np.all(close | same))


def _is_conversion(model) -> bool:
    """True when every node of the graph converts between types (compared bit for bit)."""
    return all(n.op_type in CONVERSION_OPS for n in model.graph.node)


def _run_minitvm(model, inputs: list) -> list:
    import numpy as np

    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax.frontend.onnx import from_onnx

    # a sequence input's length is fixed at import: its item shapes go in shape_dict
    infos = _input_infos(model)
    named = {d.dim_param for i in infos for d in i.type.tensor_type.shape.dim if d.dim_param}
    shapes = {
        i.name: _item_shapes(i, x, named) for i, x in zip(infos, inputs) if isinstance(x, list)
    }
    mod = from_onnx(model, shapes, keep_params_in_input=False)
    ex = relax.build(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())

    def arg(x):
        return [tvm.nd.array(np.asarray(v)) for v in x] if isinstance(x, list) else tvm.nd.array(x)

    def value(o):  # a Tuple (a sequence output) comes back as a list of arrays
        if isinstance(o, list | tuple):
            return [value(v) for v in o]
        return o.numpy() if hasattr(o, "numpy") else np.asarray(o)

    out = vm["main"](*[arg(x) for x in inputs])
    outs = [out] if len(model.graph.output) == 1 else list(out)
    return [value(o) for o in outs]


def _input_infos(model) -> list:
    """The graph inputs a case feeds, in order (an initializer is not fed)."""
    init = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in init]


def _item_shapes(info, items: list, tensor_dims: set) -> list:
    """shape_dict's entry for a sequence input: each item's shape, with a dim the model names
    (seq(float[N])) kept as that name where every item agrees on it and a tensor input names
    it too, so it stays that input's N (as ONNX Runtime binds it)."""
    import numpy as np

    t = info.type
    if t.HasField("optional_type"):
        t = t.optional_type.elem_type
    dims = t.sequence_type.elem_type.tensor_type.shape.dim
    shapes = [list(np.shape(v)) for v in items]
    if not all(len(s) == len(dims) for s in shapes):
        return [tuple(s) for s in shapes]
    for k, d in enumerate(dims):
        if d.dim_param in tensor_dims and len({s[k] for s in shapes}) == 1:
            for s in shapes:
                s[k] = d.dim_param
    return [tuple(s) for s in shapes]


def _run_ort(model, inputs: list) -> list:
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


def _one_case(case_dir: str, with_ort: bool) -> dict:
    import numpy as np
    import onnx

    from minitvm.error import MiniTVMError, OpNotImplemented

    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    with np.load(os.path.join(case_dir, "data.npz"), allow_pickle=False) as z:
        inputs, expected = _values(z, "in"), _values(z, "out")
        rtol, atol = float(z["rtol"]), float(z["atol"])
    row: dict = {}
    try:
        got = _run_minitvm(model, inputs)
    except Exception as err:  # noqa: BLE001 - every failure is a row of the report, classified by type
        first = str(err).splitlines()[0][:300] if str(err) else ""
        kind = "foreign"
        if isinstance(err, OpNotImplemented):
            kind = "refused"
        elif isinstance(err, MiniTVMError):
            kind = "error"
        row = {"kind": kind, "msg": f"{type(err).__module__}.{type(err).__name__}: {first}"}
    else:
        msg = _compare(got, expected, rtol, atol)
        row = {"kind": "wrong", "msg": msg} if msg else {"kind": "ok", "msg": ""}
        low_ulps = 0 if _is_conversion(model) else LOWFLOAT_ULPS
        if msg and not _compare(got, expected, rtol, atol, FLOAT16_ULPS, low_ulps):
            row = {
                "kind": "ok",
                "msg": f"float16/bfloat16: within {FLOAT16_ULPS}/{LOWFLOAT_ULPS} ulps, not rtol 1e-3",
            }
    if with_ort:
        try:
            row["ort"] = (
                "wrong" if _compare(_run_ort(model, inputs), expected, rtol, atol) else "ok"
            )
        except Exception:  # noqa: BLE001 - ORT refusing a case is its outcome, not ours
            row["ort"] = "error"
    return row


def worker_main(case_dirs: list[str], with_ort: bool) -> None:
    """Run each case dir in this process, one JSON line per case on stdout."""
    import warnings

    warnings.simplefilter("ignore")
    for d in case_dirs:
        print(json.dumps({"case": os.path.basename(d), **_one_case(d, with_ort)}), flush=True)


# --------------------------------------------------------------------------- parent side


def collect(match: str = "", names: list[str] | None = None) -> dict:
    """{case name: onnx TestCase} of the installed onnx package, filtered by regex or names."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node

        cases = {c.name: c for c in node.collect_testcases(None)}
    if match:
        cases = {n: c for n, c in cases.items() if re.search(match, n)}
    if names is not None:
        cases = {n: cases[n] for n in names if n in cases}
    return cases


def case_op(case) -> str:
    """The op a case is about: its single node's op_type, or for an expanded function case
    the op whose body it is (onnx names the body's values "<Op>_<case>_expanded_function_...")."""
    nodes = case.model.graph.node
    if len({n.op_type for n in nodes}) == 1:
        return nodes[0].op_type
    base = re.sub(r"_expanded(_ver\d+)?$", "", case.name)
    marker = f"_{base}_expanded_function_"
    for n in nodes:
        for value in [*n.output, *n.input]:
            if marker in value:
                return value.split(marker)[0]
    return "(graph) " + case.name.removeprefix("test_").split("_")[0]


def _as_array(value):
    """A case value as a numpy array: TensorProtos (bfloat16, float8, 4-bit data) through
    onnx.numpy_helper, which gives ml_dtypes arrays; anything else as numpy sees it."""
    import numpy as np
    import onnx

    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    return np.asarray(value)


def _is_ml_dtype(dtype) -> bool:
    """True for the ml_dtypes types (bfloat16, float8_*, int4, ...); their numpy kind varies."""
    return dtype.names is None and dtype.type.__module__ == "ml_dtypes"


def _pack(arrs: dict) -> dict:
    """ml_dtypes arrays as raw unsigned bits plus a `<key>.dtype` entry, so that the npz
    loads back with allow_pickle=False and no value changes (NaN payloads included)."""
    import numpy as np

    out = {}
    for key, arr in arrs.items():
        if _is_ml_dtype(arr.dtype):
            out[key] = arr.view(f"uint{arr.dtype.itemsize * 8}")
            out[f"{key}.dtype"] = np.array(arr.dtype.name)
        else:
            out[key] = arr
    return out


def _unpack(z, key: str):
    """The array `_pack` stored under `key`, rebuilt with its ml_dtypes dtype."""
    arr = z[key]
    if f"{key}.dtype" not in z.files:
        return arr
    import ml_dtypes

    return arr.view(getattr(ml_dtypes, str(z[f"{key}.dtype"])))


def _entries(key: str, value) -> dict:
    """npz entries for one case value: an array under `key`; a sequence (a list) as
    `key.len` and its items under `key.s000`, `key.s001`, ...; an empty optional (None) is
    refused (the VM takes no "none")."""
    import numpy as np

    if value is None:
        raise ValueError("an empty optional (None) value cannot be passed")
    if isinstance(value, list):
        out = {f"{key}.len": np.array(len(value))}
        for j, item in enumerate(value):
            out[f"{key}.s{j:03d}"] = _as_array(item)
        return out
    return {key: _as_array(value)}


def _values(z, prefix: str) -> list:
    """The case values `_entries` stored under `prefix` ("in"/"out"), sequences as lists."""
    keys = sorted({k.split(".")[0] for k in z.files if k.startswith(prefix)})
    out = []
    for key in keys:
        if f"{key}.len" in z.files:
            n = int(z[f"{key}.len"])
            out.append([_unpack(z, f"{key}.s{j:03d}") for j in range(n)])
        else:
            out.append(_unpack(z, key))
    return out


def _materialize(case, d: str) -> str | None:
    """Write a case as model.onnx + data.npz; a reason when it is not arrays or sequences of
    arrays."""
    import numpy as np
    import onnx

    try:
        ins, outs = case.data_sets[0]
        arrs = {}
        for i, x in enumerate(ins):
            arrs.update(_entries(f"in{i:03d}", x))
        for i, x in enumerate(outs):
            arrs.update(_entries(f"out{i:03d}", x))
        if any(v.dtype == object or v.dtype.kind in "SU" for v in arrs.values()):
            return "string data"
        os.makedirs(d)
        onnx.save(case.model, os.path.join(d, "model.onnx"))
        np.savez(os.path.join(d, "data.npz"), rtol=case.rtol, atol=case.atol, **_pack(arrs))
    except Exception as err:  # noqa: BLE001 - the case itself cannot be written as arrays
        return f"case not representable as arrays: {err}"[:150]
    return None


def _run_batch(dirs: list[str], timeout: float, with_ort: bool, log) -> dict[str, dict]:
    """Run `dirs` in worker processes; a crash or hang costs one case and a restart."""
    results: dict[str, dict] = {}
    pending = list(dirs)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    while pending:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker"] + (
            ["--ort"] if with_ort else []
        )
        p = subprocess.Popen(
            cmd + pending, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        buf = ""
        deadline = time.monotonic() + timeout + 30  # the first case also pays the imports
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([p.stdout], [], [], max(left, 0))
            if not ready:
                p.kill()
                p.wait()
                name = os.path.basename(pending.pop(0))
                results[name] = {"kind": "timeout", "msg": f"over {timeout:.0f} s"}
                log(name, results[name])
                break
            line = p.stdout.readline()
            if not line:  # the worker ended
                p.wait()
                if pending:
                    name = os.path.basename(pending.pop(0))
                    err = (p.stderr.read().strip().splitlines() or ["?"])[-1][:200]
                    kind = "crash" if p.returncode < 0 else "foreign"
                    results[name] = {"kind": kind, "msg": f"exit {p.returncode}: {err}"}
                    log(name, results[name])
                break
            buf = line
            if not buf.startswith("{"):
                continue
            row = json.loads(buf)
            name = row.pop("case")
            if pending and os.path.basename(pending[0]) == name:
                pending.pop(0)
            results[name] = row
            log(name, row)
            deadline = time.monotonic() + timeout
        p.stdout.close()
        p.stderr.close()
    return results


def run(
    cases: dict,
    batch: int = 150,
    timeout: float = 60,
    with_ort: bool = False,
    log=None,
    jobs: int = 1,
):
    """Rows [{case, op, kind, msg[, ort]}] for `cases` ({name: TestCase}), sorted by name."""
    log = log or (lambda name, row: None)
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as work:
        dirs = []
        for name in sorted(cases):
            d = os.path.join(work, name)
            reason = _materialize(cases[name], d)
            if reason:
                rows[name] = {"kind": "skipped", "msg": reason}
                log(name, rows[name])
            else:
                dirs.append(d)
        batches = [dirs[i : i + batch] for i in range(0, len(dirs), batch)]
        if jobs <= 1:
            for part in batches:
                rows.update(_run_batch(part, timeout, with_ort, log))
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(jobs) as pool:
                for done in pool.map(lambda b: _run_batch(b, timeout, with_ort, log), batches):
                    rows.update(done)
    return [{"case": n, "op": case_op(cases[n]), **rows[n]} for n in sorted(rows)]


# --------------------------------------------------------------------------- the table


def stratified_sample(cases: dict) -> list[str]:
    """One case per op (the first by name, preferring a case that is not an expansion)."""
    by_op: dict[str, list[str]] = {}
    for name in sorted(cases):
        by_op.setdefault(case_op(cases[name]), []).append(name)
    return sorted(min(names, key=lambda n: ("_expanded" in n, n)) for names in by_op.values())


def op_table(rows: list[dict]) -> str:
    """Markdown: one line per op with its cases' outcomes (ok / refused / other)."""
    per_op: dict[str, Counter] = {}
    for r in rows:
        per_op.setdefault(r["op"], Counter())[r["kind"]] += 1
    total = Counter(r["kind"] for r in rows)
    lines = [
        "| op | cases | ok | refused | other (error / skipped) |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for op in sorted(per_op, key=str.lower):
        c = per_op[op]
        other = ", ".join(f"{c[k]} {k}" for k in OUTCOMES[2:] if c[k])
        lines.append(f"| {op} | {sum(c.values())} | {c['ok']} | {c['refused']} | {other} |")
    summary = ", ".join(f"{total[k]} {k}" for k in OUTCOMES if total[k])
    return "\n".join([f"All {len(rows)} cases: {summary}.", "", *lines])


def write_table(path: str, rows: list[dict]) -> None:
    """Replace the text between the table markers of `path` with the table of `rows`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start, end = text.index(TABLE_BEGIN) + len(TABLE_BEGIN), text.index(TABLE_END)
    text = text[:start] + "\n" + op_table(rows) + "\n" + text[end:]
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read_table(path: str) -> dict[str, tuple[int, int, int]]:
    """{op: (cases, ok, refused)} parsed back from the table in `path`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    body = text[text.index(TABLE_BEGIN) : text.index(TABLE_END)]
    table = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 + 1 and cells[1].isdigit():
            table[cells[0]] = (int(cells[1]), int(cells[2]), int(cells[3]))
    return table


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        with_ort = len(argv) > 1 and argv[1] == "--ort"
        worker_main(argv[2 if with_ort else 1 :], with_ort)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--match", default="")
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=150)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--ort", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes at a time")
    ap.add_argument("--out", default="")
    ap.add_argument("--table", default="")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    cases = collect(a.match)
    if a.sample:
        names = sorted(cases)
        random.Random(a.seed).shuffle(names)
        cases = {n: cases[n] for n in sorted(names[: a.sample])}

    def log(name, row):
        if not a.quiet:
            print(f"{name:60s} {row['kind']:8s} {row.get('msg', '')[:150]}", flush=True)

    rows = run(cases, a.batch, a.timeout, a.ort, log, a.jobs)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    if a.table:
        write_table(a.table, rows)
    counts = Counter(r["kind"] for r in rows)
    print(" ".join(f"{k}={counts[k]}" for k in OUTCOMES if counts[k]))
    if a.ort:
        ort = Counter(r.get("ort", "n/a") for r in rows)
        print("onnxruntime: " + " ".join(f"{k}={v}" for k, v in sorted(ort.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
