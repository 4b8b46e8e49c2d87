"""Old home of the training library, kept as an alias: `minitvm.cli.training` IS
`minitvm.training` (the same module object), so every name it had is still there."""

import sys

from .. import training

sys.modules[__name__] = training
