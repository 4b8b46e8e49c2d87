"""`tvm.relax.transform.transform`: the module TVM's passes are defined in, which code written for
TVM imports from (`from tvm.relax.transform.transform import CanonicalizeBindings`). The same
objects as `relax.transform`."""

from . import *  # noqa: F403
from . import __all__  # noqa: F401
