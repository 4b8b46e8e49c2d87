"""The signature of a GPU module's OpenCL source, as native object code embeds its own.

The code generator's source gets a first line `// minitvm-signature: <sha256>` over the
kernels' and host programs' metadata (canonical JSON) and the rest of the source, and each
kernel's info gets the sha256 of its own text ("sha256"). `load_module` refuses a source whose
signature is missing or does not match, naming the kernel that was edited (or the code around
the kernels), so an exported kernel edited by hand, or metadata swapped from another export,
never runs. Like the zip's checksums this catches accidents and careless edits, not an
attacker who recomputes it: only load files you trust.
"""

from __future__ import annotations

import hashlib

from ..error import RuntimeError_
from .meta import canonical_json

_PREFIX = "// minitvm-signature: "


class SignatureError(RuntimeError_):
    """An OpenCL source that does not match its signature (raised by `verify`)."""


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def kernel_text(body: str, name: str) -> str | None:
    """The text of `__kernel void name(...) { ... }` in `body` (to its closing line), or None
    when it is not there exactly once."""
    head = f"\n__kernel void {name}("
    text = "\n" + body
    start = text.find(head)
    if start < 0 or text.find(head, start + 1) >= 0:
        return None
    end = text.find("\n}", start + 1)
    return None if end < 0 else text[start + 1 : end + 2]


def _digest(body: str, kernels: list[dict], programs: list[dict]) -> str:
    meta = canonical_json({"kernels": kernels, "programs": programs}).decode()
    return _sha256(meta + "\n" + body)


def sign(source: str, kernels: list[dict], programs: list[dict]) -> tuple[str, list[dict]]:
    """The signed source and the kernel infos with their "sha256" (fresh code-generator output)."""
    signed = []
    for info in kernels:
        text = kernel_text(source, info["name"])
        if text is None:
            raise RuntimeError_(f"the OpenCL source has no single kernel '{info['name']}'")
        signed.append(dict(info, sha256=_sha256(text)))
    return f"{_PREFIX}{_digest(source, signed, programs)}\n{source}", signed


def is_signed(source: str) -> bool:
    return source.startswith(_PREFIX)


def verify(where: str, source: str, kernels: list[dict], programs: list[dict]) -> None:
    """Raise RuntimeError_ (starting with `where`) unless `source` carries a signature that
    matches it and the metadata."""
    first, _, body = source.partition("\n")
    if not first.startswith(_PREFIX):
        raise SignatureError(
            f"{where}: the OpenCL source has no minitvm signature, so it cannot be checked "
            "against its metadata; it was edited or not written by this minitvm: export the "
            "module again"
        )
    if type(kernels) is not list or not all(type(k) is dict for k in kernels):
        raise SignatureError(f"{where}: the kernels' metadata is not a list of objects")
    for info in kernels:
        text = kernel_text(body, str(info.get("name")))
        if text is None or _sha256(text) != info.get("sha256"):
            raise SignatureError(
                f"{where}: kernel '{info.get('name')}' in the OpenCL source does not match its "
                "signature (the kernel source was edited after export); export the module again"
            )
    if first[len(_PREFIX) :] != _digest(body, kernels, programs):
        raise SignatureError(
            f"{where}: the OpenCL source does not match its signature: code outside the "
            "kernels (helpers, pragmas) or the metadata was edited after export, or they come "
            "from different exports; export the module again"
        )
