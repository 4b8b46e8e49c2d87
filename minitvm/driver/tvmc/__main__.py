"""`python -m minitvm.driver.tvmc compile|run|tune ...`: TVMC's common flags mapped onto the
verbs of `python -m minitvm`."""

from __future__ import annotations

import sys

# tvmc flag -> minitvm flag, per verb (flags not listed pass through unchanged)
_FLAGS = {
    "compile": {"--output": "-o", "-o": "-o", "--input-shapes": "--input-shapes"},
    "run": {"--inputs": "--input", "--output": "-o", "-o": "-o"},
    "tune": {"--output": "--work-dir", "-o": "--work-dir", "--trials": "--trials"},
}


def translate(argv: list[str]) -> list[str]:
    """The `python -m minitvm` arguments that do what tvmc's `argv` asks."""
    if not argv or argv[0] not in _FLAGS:
        return argv  # minitvm's own usage error names the verbs
    verb, table, out = argv[0], _FLAGS[argv[0]], [argv[0]]
    rest = iter(argv[1:])
    for arg in rest:
        flag, eq, value = arg.partition("=")
        if flag == "--input-shapes" and verb == "compile":
            # tvmc: "data:[1,3,224,224] x:[4]" -> minitvm: --input-shapes data:1,3,224,224 ...
            text = value if eq else next(rest, "")
            for item in text.split():
                name, _, shape = item.partition(":")
                out += ["--input-shapes", f"{name}:{shape.strip('[]')}"]
        elif flag == "--fill-mode" and verb == "run":
            value = value if eq else next(rest, "")
            out.append("--random")  # minitvm fills missing inputs with random data only
        elif flag in table:
            out += [table[flag], value] if eq else [table[flag]]
        else:
            out.append(arg)
    if verb == "run" and "--input" not in out:
        out.append("--random")  # tvmc fills inputs it was not given
    return out


def main(argv: list[str] | None = None) -> int:
    from ...cli import main as cli_main

    return cli_main(translate(sys.argv[1:] if argv is None else list(argv)))


if __name__ == "__main__":
    sys.exit(main())
