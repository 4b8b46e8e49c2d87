"""`tvm.contrib.utils`: a temporary directory for exported modules and generated files."""

from __future__ import annotations

import os
import shutil
import tempfile


class TempDirectory:
    """A fresh directory, removed by `remove()`, at exit of a `with` block, or when collected.

    >>> temp = tvm.contrib.utils.tempdir(); lib.export_library(temp.relpath("add.so"))
    """

    def __init__(self, custom_path: str | None = None, keep_for_debug: bool = False) -> None:
        if custom_path is not None:
            os.makedirs(custom_path, exist_ok=True)
            self.temp_dir = os.path.abspath(custom_path)
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="minitvm-")
        self._keep = keep_for_debug or custom_path is not None  # never delete a user's folder

    @property
    def path(self) -> str:
        return self.temp_dir

    def relpath(self, name: str) -> str:
        """The absolute path of `name` inside the directory."""
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list[str]:
        """The names of the entries in the directory."""
        return os.listdir(self.temp_dir)

    def remove(self) -> None:
        """Delete the directory and everything in it (unless kept for debugging)."""
        if not self._keep and self.temp_dir and os.path.isdir(self.temp_dir):
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> TempDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __del__(self) -> None:
        try:
            self.remove()
        except (AttributeError, TypeError):  # interpreter shutdown: module globals may be gone
            pass

    def __repr__(self) -> str:
        return f"TempDirectory({self.temp_dir!r})"


def tempdir(custom_path: str | None = None, keep_for_debug: bool | None = None) -> TempDirectory:
    """A new TempDirectory: `tvm.contrib.utils.tempdir().relpath("lib.so")`."""
    return TempDirectory(custom_path, bool(keep_for_debug))


__all__ = ["TempDirectory", "tempdir"]
