"""TVMScript: write TIR as Python (`@T.prim_func`, `@I.ir_module`) and parse printed IR back.

`from minitvm.script import tir as T, ir as I`; `minitvm.script.from_source(mod.script())`.
"""

from . import ir, tir
from .entry import from_source, register_function_parser, register_namespace
from .ir import ir_module
from .source import TVMScriptError

__all__ = [
    "TVMScriptError",
    "from_source",
    "ir",
    "ir_module",
    "register_function_parser",
    "register_namespace",
    "tir",
]
