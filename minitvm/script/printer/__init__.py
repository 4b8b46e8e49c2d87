"""`tvm.script.printer`: the Doc tree of TVM's script printer and its Python printer."""

from . import doc, doc_printer
from .doc_printer import to_python_script

__all__ = ["doc", "doc_printer", "to_python_script"]
