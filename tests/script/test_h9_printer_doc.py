"""tvm.script.printer.doc / doc_printer (Python syntax as a Doc tree, printed with the fewest
parentheses), and tvm.script.parser.core (Source, ExprEvaluator, doc_core)."""

import ast

import pytest

from minitvm.script.parser.core import doc_core
from minitvm.script.parser.core.diagnostics import Source
from minitvm.script.parser.core.evaluator import ExprEvaluator
from minitvm.script.printer.doc import (
    AssignDoc,
    ClassDoc,
    DocError,
    ExprStmtDoc,
    ForDoc,
    FunctionDoc,
    IdDoc,
    IfDoc,
    LambdaDoc,
    LiteralDoc,
    OperationDoc,
    OperationKind,
    ScopeDoc,
    SliceDoc,
    TupleDoc,
)
from minitvm.script.printer.doc_printer import to_python_script

x, y, z = IdDoc("x"), IdDoc("y"), IdDoc("z")


def op(kind, *operands):
    return OperationDoc(kind, list(operands))


K = OperationKind


@pytest.mark.parametrize(
    "doc, text",
    [
        (op(K.Mult, op(K.Add, x, y), z), "(x + y) * z"),
        (op(K.Add, x, op(K.Add, y, z)), "x + (y + z)"),
        (op(K.Add, op(K.Add, x, y), z), "x + y + z"),
        (op(K.Pow, op(K.Pow, x, y), z), "(x ** y) ** z"),
        (op(K.Pow, op(K.USub, x), op(K.USub, y)), "(-x) ** -y"),
        (op(K.Not, op(K.And, x, y)), "not (x and y)"),
        (op(K.IfThenElse, x, y, op(K.IfThenElse, z, z, z)), "y if x else (z if z else z)"),
        (LambdaDoc([x], x).call(y), "(lambda x: x)(y)"),
        (
            op(K.Add, x, y).attr("a")[z, SliceDoc(LiteralDoc(1), None, LiteralDoc(2))],
            "(x + y).a[z, 1::2]",
        ),
        (LiteralDoc('a"\n'), r'"a\"\n"'),
    ],
)
def test_expressions_print_with_minimal_parentheses(doc, text):
    assert to_python_script(doc) == text
    ast.parse(text)  # and the text is Python


def test_statements_print_as_python_blocks():
    body = [
        AssignDoc(TupleDoc([x, y]), z),
        ForDoc(x, IdDoc("range").call(LiteralDoc(4)), []),
        IfDoc(x, [], [ExprStmtDoc(y)]),
        ScopeDoc(None, IdDoc("ctx").call(), [ExprStmtDoc(z)]),
    ]
    func = FunctionDoc(IdDoc("f"), [AssignDoc(x, LiteralDoc(1), IdDoc("int"))], [], None, body)
    func.comment = "doc"
    cls = ClassDoc(IdDoc("C"), [IdDoc("wrap")], [func, func])
    text = to_python_script(cls)
    assert text.splitlines()[:5] == [
        "@wrap",
        "class C:",
        "    def f(x: int = 1):",
        '        """',
        "        doc",
    ]
    assert "    x, y = z" in text and "        pass" in text and "\n\n    def f" in text
    ast.parse(text)


def test_invalid_docs_are_refused():
    with pytest.raises(ValueError, match="AssignDoc"):
        AssignDoc(x, None, None)
    with pytest.raises(DocError, match="IfDoc"):
        IfDoc(x, [], [])
    stmt = ExprStmtDoc(x)
    stmt.comment = "two\nlines"
    with pytest.raises(ValueError, match="cannot have newline"):
        to_python_script(stmt)


def _sample(a, b):
    return a + b


def test_source_of_a_function_keeps_file_positions():
    src = Source(_sample)
    tree = src.as_ast()
    assert isinstance(tree, doc_core.Module) and tree.body[0].name == "_sample"
    assert tree.body[0].lineno == src.start_line


@pytest.mark.parametrize(
    "expr, table, want",
    [
        ("1 + 2, 3 / 2", {}, (3, 1.5)),
        ("a[1:5:2], f(a[0])", {"a": [1, 2, 3, 4, 5], "f": lambda v: v * 10}, ([2, 4], 10)),
    ],
)
def test_expr_evaluator_evaluates_with_a_value_table(expr, table, want):
    node = Source(expr).as_ast().body[0].value
    assert ExprEvaluator.eval(None, table, node) == want


def test_expr_evaluator_refuses_unknown_names_and_huge_powers():
    with pytest.raises(SyntaxError, match="Undefined variable: q"):
        ExprEvaluator.eval(None, {}, Source("q + 1").as_ast().body[0].value)
    with pytest.raises(SyntaxError, match="more than 128 bits"):
        ExprEvaluator.eval(None, {}, Source("9 ** 9 ** 9").as_ast().body[0].value)


def _named(name, path):
    doc = IdDoc(name)
    doc.source_paths = [path]
    return doc


def test_underline_marks_the_doc_with_the_longest_matching_source_path():
    from minitvm.runtime import ObjectPath
    from minitvm.script.printer.doc import StmtBlockDoc

    root = ObjectPath.root()
    block = StmtBlockDoc(
        [
            ExprStmtDoc(_named("a", root.attr("a"))),
            ExprStmtDoc(
                op(K.Add, _named("b", root.attr("b")), _named("ax", root.attr("a").attr("x")))
            ),
        ]
    )
    text = to_python_script(block, path_to_underline=[root.attr("a").attr("x").attr("y")])
    assert text == "a\nb + ax\n    ^^"
    numbered = to_python_script(block, print_line_numbers=True, path_to_underline=[root.attr("a")])
    assert numbered == "1 a\n  ^\n2 b + ax"


def test_context_lines_elide_far_lines_but_never_a_single_one():
    from minitvm.runtime import ObjectPath
    from minitvm.script.printer.doc import StmtBlockDoc

    root = ObjectPath.root()
    block = StmtBlockDoc(
        [ExprStmtDoc(_named(f"x{i}", root.attr("yes" if i in (0, 6) else "no"))) for i in range(12)]
    )
    text = to_python_script(block, num_context_lines=2, path_to_underline=[root.attr("yes")])
    lines = text.splitlines()
    assert lines[:3] == ["x0", "^^", "x1"] and "x3" in lines  # x3 alone between windows: shown
    assert lines[-1] == "(... 3 lines skipped ...)" and "x8" in lines
