"""`define_subroutine` on nn.Module classes (TVM's SubroutineMixin). In TVM, True makes a class's
forward a private relax function of the exported module; minitvm's exporter inlines every
forward, so True is refused with an error that says so (False, the default, is TVM's default)."""

from __future__ import annotations

import functools
from typing import Any


class SubroutineMixin:
    """Wraps each subclass's forward so that `define_subroutine` can turn it into a function."""

    define_subroutine: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        forward = cls.__dict__.get("forward")
        if forward is not None and not getattr(forward, "_nn_subroutine", False):
            cls.forward = _dispatch(forward)


def _dispatch(forward: Any) -> Any:
    @functools.wraps(forward)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.define_subroutine:
            return forward(self, *args, **kwargs)
        from ....error import MiniTVMError

        raise MiniTVMError(
            f"{type(self).__name__}.define_subroutine = True: minitvm's nn exporter does not "
            "emit subroutines; leave define_subroutine False (the forward is then inlined)"
        )

    wrapped._nn_subroutine = True
    return wrapped
