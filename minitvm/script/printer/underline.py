"""Underlining in printed docs (`to_python_script(..., path_to_underline=[...])`): which docs
to mark, and the final text with `^^^` rows, line numbers and context elision.

The printer wraps the text of each marked doc in START/END characters; `render` turns them
into a caret row under each line they cover."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ir.object_path import ObjectPath
from . import doc as d

START, END = "\ue000", "\ue001"  # private-use characters: never in printed Python


def docs_to_underline(root: d.Doc, paths: Sequence[ObjectPath]) -> set[int]:
    """Ids of the docs to underline: for each wanted path, the docs whose source path is the
    longest prefix of it (a doc printed from `x` is underlined for `x.a.b` unless another doc
    comes from `x.a`)."""
    docs = list(_all_docs(root))
    marked: set[int] = set()
    for want in paths:
        matches = [
            (len(src), doc)
            for doc in docs
            for src in doc.source_paths
            if isinstance(src, ObjectPath) and src.is_prefix_of(want)
        ]
        if matches:
            best = max(n for n, _ in matches)
            marked.update(id(doc) for n, doc in matches if n == best)
    return marked


def _all_docs(root: d.Doc):
    stack: list[Any] = [root]
    seen: set[int] = set()
    while stack:
        value = stack.pop()
        if isinstance(value, tuple | list):
            stack.extend(value)
            continue
        if not isinstance(value, d.Doc) or id(value) in seen:
            continue
        seen.add(id(value))
        yield value
        stack.extend(v for k, v in vars(value).items() if not k.startswith("_"))


def render(lines: list[str], print_line_numbers: bool, num_context_lines: int | None) -> str:
    """The printed lines with caret rows under marked text, optional line numbers, and (with
    `num_context_lines`) only the lines near an underline; the rest read
    `(... N lines skipped ...)`."""
    texts, carets = _carets(lines)
    width = len(str(len(texts)))
    shown = _shown_lines(carets, num_context_lines)
    out: list[str] = []
    i = 0
    while i < len(texts):
        if not shown[i]:
            j = i
            while j < len(texts) and not shown[j]:
                j += 1
            out.append(f"(... {j - i} lines skipped ...)")
            i = j
            continue
        prefix = f"{i + 1:>{width}} " if print_line_numbers else ""
        out.append(prefix + texts[i])
        if carets[i]:
            out.append(" " * len(prefix) + carets[i])
        i += 1
    return "\n".join(out).strip("\n")


def _carets(lines: list[str]) -> tuple[list[str], list[str]]:
    """Each line without the markers, and its caret row ('' when nothing is underlined)."""
    texts, carets = [], []
    depth = 0
    for line in lines:
        text, row = [], []
        indent = len(line) - len(line.lstrip(" "))
        for ch in line:
            if ch == START:
                depth += 1
            elif ch == END:
                depth -= 1
            else:
                under = depth > 0 and len(text) >= indent
                row.append("^" if under else " ")
                text.append(ch)
        texts.append("".join(text))
        carets.append("".join(row).rstrip())
    return texts, carets


def _shown_lines(carets: list[str], context: int | None) -> list[bool]:
    marked = [k for k, row in enumerate(carets) if row]
    if context is None or not marked:
        return [True] * len(carets)
    shown = [any(abs(k - m) <= context for m in marked) for k in range(len(carets))]
    # a single hidden line is shown: its "(... 1 lines skipped ...)" would be no shorter
    for k in range(len(shown)):
        hidden_run = not shown[k] and (k == 0 or shown[k - 1])
        if hidden_run and (k + 1 == len(shown) or shown[k + 1]):
            shown[k] = True
    return shown
