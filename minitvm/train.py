"""Old import path of the training library, kept because examples and benchmarks use it
(`from minitvm import train as tr`): `minitvm.train` IS `minitvm.training` (same module object)."""

import sys

from . import training

sys.modules[__name__] = training
