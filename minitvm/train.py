"""Old import path of the training library, kept because examples and benchmarks use it
(`from minitvm import train as tr`); the library is minitvm/cli/training.py."""

import sys

from .cli import training

sys.modules[__name__] = training
