"""Process-wide autotvm switches (TVM's `autotvm.env.GLOBAL_SCOPE`)."""


class AutotvmGlobalScope:
    """`in_tuning` while a tuner measures; `silent` mutes the fallback warning."""

    def __init__(self) -> None:
        self.in_tuning = False
        self.silent = False


GLOBAL_SCOPE = AutotvmGlobalScope()
