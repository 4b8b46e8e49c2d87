"""minitvm's error classes: every one is also TVM's `tvm.error.TVMError` (so course code's
`except tvm.TVMError:` catches a wrong-shape call) and keeps its Python base (ValueError, ...)."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import minitvm
import minitvm as tvm
from minitvm import error, te


def _all_error_classes():
    """Every MiniTVMError subclass defined anywhere in the package (modules imported here)."""
    for info in pkgutil.walk_packages(minitvm.__path__, "minitvm."):
        if info.name.startswith(("minitvm.cli.__main__", "minitvm.train")):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional dependency (torch, onnx, pyopencl) is absent
            continue
    seen, todo = set(), [error.MiniTVMError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen and sub.__module__.startswith("minitvm"):
                seen.add(sub)
                todo.append(sub)
    return sorted(seen, key=lambda c: (c.__module__, c.__name__))


def test_every_error_class_is_a_tvm_error_and_keeps_its_python_base():
    classes = _all_error_classes()
    assert len(classes) > 20
    not_tvm = [c.__qualname__ for c in classes if not issubclass(c, tvm.error.TVMError)]
    assert not not_tvm, f"not subclasses of tvm.error.TVMError: {not_tvm}"
    assert issubclass(error.ShapeError, ValueError) and issubclass(error.DTypeError, TypeError)
    assert issubclass(error.ParseError, SyntaxError)
    assert issubclass(error.OpNotImplemented, NotImplementedError)
    assert issubclass(error.ExpressionTooDeep, RecursionError)
    assert tvm.TVMError is tvm.error.TVMError and issubclass(tvm.TVMError, RuntimeError)


@pytest.mark.parametrize("cls", _all_error_classes(), ids=lambda c: c.__qualname__)
def test_error_message_survives_multiple_bases(cls):
    params = list(inspect.signature(cls.__init__).parameters)
    if cls.__init__ is not BaseException.__init__ and len(params) > 2 and "args" not in params:
        pytest.skip(f"{cls.__qualname__} takes structured arguments")
    err = cls("what went wrong")
    assert "what went wrong" in str(err)


def test_course_code_catches_a_wrong_shape_call_as_tvm_error():
    n = 8
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], "llvm", name="double")
    a = tvm.nd.array(np.ones(n + 1, "float32"))
    b = tvm.nd.empty((n,), "float32")
    with pytest.raises(tvm.TVMError, match="argument 'A'"):
        f(a, b)


def test_parse_error_keeps_line_and_text():
    with pytest.raises(tvm.TVMError) as info:
        tvm.script.from_source("def f(:\n    pass\n")
    assert isinstance(info.value, SyntaxError) and info.value.lineno == 1
    assert "invalid Python syntax" in str(info.value)
