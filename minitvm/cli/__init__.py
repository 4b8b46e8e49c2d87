"""The `minitvm` command line (`python -m minitvm VERB ...`): one module per verb.

A verb is a row of VERBS (its module and one-line help) and a module with DESCRIPTION and EPILOG
(its --help text), `add_arguments(parser)` (left out by verbs without options) and
`run(args) -> int`. Only the verb asked for is imported, so a verb whose module is missing or broken
(e.g. `tune` without its optional packages) leaves the others working.

Exit codes: 0 ok; 1 the model or the run failed (a MiniTVMError); 2 the command line is wrong
(argparse, or a `UsageError`: missing file, bad --input-shapes, unknown input name, ...).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys

from ..error import MiniTVMError
from ._common import UsageError, example_parser

# verb -> (module under minitvm.cli, one-line help shown when the module cannot be imported)
VERBS = {
    "demo": ("demo", "train the MLP on the bundled digits, then build and time two kernels"),
    "train": (
        "train",
        "train a classifier with compiled graph programs (forward + backward + update)",
    ),
    "compile": ("compile", "compile an ONNX model into a deployable artifact"),
    "run": ("run", "run a compiled artifact on .npy/.npz inputs"),
    "bench": ("bench", "time a compiled artifact (and ONNX Runtime with --compare ort)"),
    "show": ("show", "print an ONNX model's imported relax program or an artifact's summary"),
    "tune": ("tune", "tune a model's kernels with meta_schedule"),
    "cache": ("cache", "show or clear the persistent compile cache"),
}

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

EPILOG = """\
examples:
  minitvm compile model.onnx --input-shapes data:1,3,224,224 -o model.tar
  minitvm run model.tar --input data=image.npy --output out.npy
  minitvm bench model.tar --profile --compare ort
  minitvm show model.onnx
run `minitvm VERB --help` for a verb's options and an example.
"""


def _add_verb(sub: argparse._SubParsersAction, verb: str, broken: dict[str, str]) -> None:
    """Add `verb`'s parser, or a stand-in that reports why its module could not be imported."""
    module_name, summary = VERBS[verb]
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
        p = example_parser(sub, verb, summary, module.DESCRIPTION, module.EPILOG)
        if hasattr(module, "add_arguments"):
            module.add_arguments(p)
        p.set_defaults(run=module.run)
    except Exception as err:  # noqa: BLE001 - any failure of one verb must not break the rest
        broken[verb] = f"{type(err).__name__}: {err}"
        sub.add_parser(verb, help=f"{summary} (unavailable: `minitvm {verb}` says why)")


def _unavailable(verb: str, why: str) -> int:
    sys.stderr.write(
        f"error: the '{verb}' command is unavailable in this installation ({why}); "
        "the other commands still work\n"
    )
    return EXIT_FAILURE


class Parser(argparse.ArgumentParser):
    """argparse's parser, but a wrong command line is answered with the usage of the verb it
    was meant for and one `error:` line; an unknown option gets "did you mean ...?"."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:  # a verb's parser reports its own unknown options, with its own usage
            self.error(self._unknown(extras))
        return namespace, extras

    def _unknown(self, extras: list[str]) -> str:
        word = extras[0]
        if not word.startswith("-") or word == "-":
            return f"unexpected argument {word!r}; see `{self.prog} --help`"
        name = word.split("=", 1)[0]
        close = difflib.get_close_matches(name, list(self._option_string_actions), n=1)
        hint = f"did you mean {close[0]}?" if close else f"see `{self.prog} --help`"
        return f"{self.prog}: unknown option {name!r}; {hint}"

    def error(self, message: str) -> None:  # argparse's hook; exits with 2
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"error: {message}\n")


def build_parser(argv: list[str], broken: dict[str, str]) -> argparse.ArgumentParser:
    """The parser with only the verb named in `argv` (every verb when there is none, for help);
    verbs whose module fails to import are put in `broken` with the reason."""
    from .._version import __version__

    parser = Parser(
        prog="minitvm",
        description="minitvm command line: compile, run and time models; train; tune.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-V", "--version", action="version", version=f"minitvm {__version__}",
        help="print the version of minitvm and exit",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB")
    wanted = [a for a in argv[:1] if a in VERBS] or list(VERBS)
    for verb in wanted:
        _add_verb(sub, verb, broken)
    parser.verb_parsers = sub.choices  # verb -> its parser
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line on `argv` (default: sys.argv[1:]); returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if sys.stdout is None or sys.stderr is None:  # `minitvm run m.tar >&-`: nowhere to report
        if sys.stderr is not None:
            sys.stderr.write(
                "error: standard output is closed; redirect it to a file or /dev/null\n"
            )
        return EXIT_USAGE
    if argv and not argv[0].startswith("-") and argv[0] not in VERBS:
        return _unknown_verb(argv[0])
    broken: dict[str, str] = {}
    parser = build_parser(argv, broken)
    if argv[:1] and argv[0] in broken:
        return _unavailable(argv[0], broken[argv[0]])
    args = parser.parse_args(argv)  # usage errors exit with 2 here
    try:
        return args.run(args)
    except UsageError as err:
        sys.stderr.write(f"error: {err}\n")
        return EXIT_USAGE
    except MiniTVMError as err:
        sys.stderr.write(f"error: {err}\n")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except OSError as err:
        if isinstance(err, BrokenPipeError):
            # the reader of stdout went away (`minitvm show m.tar | head`): point stdout at
            # /dev/null so Python's exit flush does not fail a second time, as its docs advise
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_FAILURE
        where = f"'{err.filename}'" if err.filename else "standard output"
        sys.stderr.write(f"error: {where}: {err.strerror or err}; check that path\n")
        return EXIT_FAILURE


def _unknown_verb(verb: str) -> int:
    """`minitvm comple`: the usage of the verb meant ("did you mean compile?"), or the list."""
    close = difflib.get_close_matches(verb, list(VERBS), n=1)
    if close:
        build_parser(close, {}).verb_parsers[close[0]].print_usage(sys.stderr)
        hint = f"did you mean '{close[0]}'?"
    else:
        hint = f"the commands are {', '.join(VERBS)}; see `minitvm --help`"
    sys.stderr.write(f"error: minitvm: unknown command {verb!r}; {hint}\n")
    return EXIT_USAGE
