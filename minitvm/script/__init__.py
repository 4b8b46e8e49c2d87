"""TVMScript: write TIR and Relax as Python (`@T.prim_func`, `@R.function`, `@I.ir_module`)
and parse printed IR back.

`from minitvm.script import tir as T, relax as R, ir as I`;
`minitvm.script.from_source(mod.script())`.
"""

from . import ir, relax, tir
from .entry import from_source, register_function_parser, register_namespace
from .ir import ir_module
from .pyfunc import parse_pyfunc, pyfunc
from .relax_parser import parse_relax_function
from .source import TVMScriptError

register_namespace("R", relax)
register_function_parser(relax.function, parse_relax_function)
register_function_parser(pyfunc, parse_pyfunc)

__all__ = [
    "TVMScriptError",
    "from_source",
    "ir",
    "ir_module",
    "register_function_parser",
    "register_namespace",
    "relax",
    "tir",
]
