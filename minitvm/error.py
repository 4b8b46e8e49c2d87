"""Errors raised by minitvm. Every user-facing error derives from MiniTVMError."""


class MiniTVMError(Exception):
    """Base class of every error minitvm raises for bad user input."""


class TVMError(MiniTVMError, RuntimeError):
    """TVM's error base, a RuntimeError as in TVM: `except tvm.TVMError` (or `pytest.raises(
    RuntimeError)`) catches schedule, TE, build and runtime errors, as TVM's own tests expect."""


class InternalError(TVMError):
    """An invariant of minitvm itself broke; please report it."""


class DTypeError(TVMError, TypeError):
    """An unknown or mismatched data type."""


class TEError(TVMError):
    """A tensor-expression program is malformed (e.g. a nested reduction)."""


class ScheduleError(TVMError):
    """A schedule primitive was applied where it is not legal."""


class ShapeError(TVMError, ValueError):
    """A tensor argument has the wrong shape or rank."""


class ArgumentError(TVMError, TypeError):
    """A compiled function got the wrong number or kind of arguments."""


class DiagnosticError(TVMError):
    """Errors were reported against a source (TVM's name; every TVMScript ParseError is one)."""


class ParseError(DiagnosticError, SyntaxError):
    """TVMScript source could not be parsed; carries file, line and column."""

    # RuntimeError (through TVMError) comes first in the MRO, and its plain initialiser would
    # leave SyntaxError's fields (msg, filename, lineno) unset: use SyntaxError's own.
    __init__ = SyntaxError.__init__
    __str__ = SyntaxError.__str__


class BuildError(TVMError):
    """Lowering or code generation failed."""


class TargetError(TVMError, ValueError):
    """An unknown or unsupported compilation target."""


class RuntimeError_(TVMError):
    """A failure while running compiled code or loading a module."""


class ExpressionTooDeep(TVMError, RecursionError):
    """The IR nests deeper than minitvm's walkers can go without risking the C stack."""


class FrontendError(TVMError):
    """A model handed to an importer (PyTorch, ONNX) cannot be converted as given."""


class OpNotImplemented(FrontendError, NotImplementedError):
    """The model uses operators the importer does not convert; the message lists every one."""


class OpAttributeInvalid(FrontendError, AttributeError):
    """An operator attribute of an imported model has a value the importer cannot honour."""


class OpAttributeRequired(FrontendError, AttributeError):
    """An imported operator lacks an attribute its conversion needs."""


class OpAttributeUnImplemented(FrontendError, NotImplementedError):
    """An imported operator sets an attribute whose semantics the importer does not support."""


class TuningError(TVMError):
    """Tuning (meta_schedule) was asked to do something it cannot: bad task, database or budget."""


class DeviceError(RuntimeError_):
    """A device (OpenCL, CUDA) is absent, or a kernel exceeds its limits or fails to launch."""


class StructInfoKindError(ShapeError, TypeError):
    """An op argument is the wrong kind of value (a shape or a function where a tensor is
    needed): a ShapeError as before, and a TypeError as TVM raises for binary operators."""


__all__ = [
    "MiniTVMError",
    "TVMError",
    "InternalError",
    "DTypeError",
    "DiagnosticError",
    "TEError",
    "ScheduleError",
    "ShapeError",
    "ArgumentError",
    "ParseError",
    "BuildError",
    "TargetError",
    "RuntimeError_",
    "ExpressionTooDeep",
    "FrontendError",
    "OpNotImplemented",
    "OpAttributeInvalid",
    "OpAttributeRequired",
    "OpAttributeUnImplemented",
    "TuningError",
    "DeviceError",
    "StructInfoKindError",
]
