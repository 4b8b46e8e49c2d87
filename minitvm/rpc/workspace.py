"""The file area of an RPC session: a private temporary directory that upload, download, remove,
listdir and load_module reach by relative paths only.

A path is checked against one rule (`split_path`) before it touches the file system, and then
walked one directory at a time from an open descriptor of the root with O_NOFOLLOW, so neither
`..`, an absolute path, nor a symbolic link (planted by code running on the server, say) leads
outside the directory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile

from .base import MAX_MESSAGE_BYTES, RPCError

MAX_PATH_CHARS = 1024
MAX_DEPTH = 16
_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+=,-]{0,254}")
RULE = (
    "a relative path inside the session's workspace: names of letters, digits and '_+-.=,' "
    "that do not start with '.', joined by '/' (e.g. 'lib.tar' or 'models/net.so')"
)
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def split_path(path, what: str) -> list[str]:
    """The names along `path` after checking it against RULE; an RPCError says what is wrong."""
    if not isinstance(path, str):
        raise RPCError(f"{what}: the path must be a str, got {type(path).__name__}")
    shown = repr(path[:200])
    if path.startswith("/"):
        raise RPCError(f"{what}({shown}): absolute paths are refused; give {RULE}")
    parts = path.split("/")
    if ".." in parts:
        raise RPCError(
            f"{what}({shown}): '..' is refused: the server serves files only inside the "
            f"session's workspace; give {RULE}"
        )
    if len(path) > MAX_PATH_CHARS or len(parts) > MAX_DEPTH:
        raise RPCError(
            f"{what}({shown}...): the path is longer than {MAX_PATH_CHARS} characters or "
            f"{MAX_DEPTH} names; give {RULE}"
        )
    bad = next((p for p in parts if not _NAME.fullmatch(p)), None)
    if bad is not None:
        raise RPCError(f"{what}({shown}): the name {bad!r} is not allowed; give {RULE}")
    return parts


class Workspace:
    """A directory holding a session's files; `Workspace()` makes a fresh temporary one that
    `close()` deletes."""

    def __init__(self, root: str | None = None, max_file_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._owned = root is None
        self.root = os.path.realpath(root if root is not None else tempfile.mkdtemp(
            prefix="minitvm-rpc-"))  # fmt: skip
        self.max_file_bytes = max_file_bytes

    # --- walking ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _directory(self, names: list[str], create: bool = False):
        """An open descriptor of the directory `names` below the root, reached without
        following links (made when `create`)."""
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for name in names:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o700, dir_fd=fd)
                inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = inner
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _errors(self, what: str, path: str):
        """OSErrors of the file system as RPCErrors that name the request and the path."""
        try:
            yield
        except OSError as err:
            reasons = {
                errno.ENOENT: "no such file or directory in the workspace",
                errno.ELOOP: "it (or a directory on the way) is a symbolic link, and the "
                "server follows no links",
                errno.ENOTDIR: "a name on the way is not a directory (or is a symbolic link)",
                errno.EISDIR: "it is a directory",
                errno.ENOSPC: "the server's disk is full",
            }
            reason = reasons.get(err.errno, err.strerror or str(err))
            raise RPCError(f"{what}({path!r}): {reason}") from err

    def _check_size(self, what: str, path: str, size: int) -> None:
        if size > self.max_file_bytes:
            raise RPCError(
                f"{what}({path!r}): the file has {size} bytes, over the limit of "
                f"{self.max_file_bytes} bytes per file"
            )

    # --- the requests ----------------------------------------------------------------------
    def write(self, path: str, data) -> None:
        """Create or replace the regular file `path` with `data` (parents are made)."""
        names = split_path(path, "upload")
        self._check_size("upload", path, len(data))
        with self._errors("upload", path), self._directory(names[:-1], create=True) as dfd:
            fd = os.open(names[-1], os.O_WRONLY | os.O_CREAT | _OPEN_FLAGS, 0o600, dir_fd=dfd)
            with os.fdopen(fd, "wb") as file:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise RPCError(f"upload({path!r}): the path exists and is no regular file")
                file.truncate(0)
                file.write(data)

    def read(self, path: str) -> bytes:
        """The contents of the regular file `path`."""
        names = split_path(path, "download")
        with self._errors("download", path), self._directory(names[:-1]) as dfd:
            fd = os.open(names[-1], os.O_RDONLY | _OPEN_FLAGS, dir_fd=dfd)
            with os.fdopen(fd, "rb") as file:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise RPCError(f"download({path!r}): not a regular file")
                self._check_size("download", path, info.st_size)
                data = file.read(self.max_file_bytes + 1)
        self._check_size("download", path, len(data))
        return data

    def remove(self, path: str) -> None:
        """Delete the file or directory tree `path` (never a link's target)."""
        names = split_path(path, "remove")
        with self._errors("remove", path), self._directory(names[:-1]) as dfd:
            mode = os.stat(names[-1], dir_fd=dfd, follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                raise RPCError(f"remove({path!r}): it is a symbolic link; the server follows none")
            if stat.S_ISDIR(mode):
                _remove_tree(names[-1], dfd)
            else:
                os.unlink(names[-1], dir_fd=dfd)

    def listdir(self, path: str = ".") -> list[str]:
        """The sorted names in directory `path` ('.' or '' is the workspace itself)."""
        names = [] if path in ("", ".") else split_path(path, "listdir")
        with self._errors("listdir", path), self._directory(names) as dfd:
            return sorted(os.listdir(dfd))

    def load_path(self, path: str) -> str:
        """The absolute path of the regular file `path`, for load_module."""
        names = split_path(path, "load_module")
        with self._errors("load_module", path), self._directory(names[:-1]) as dfd:
            mode = os.stat(names[-1], dir_fd=dfd, follow_symlinks=False).st_mode
        if not stat.S_ISREG(mode):
            raise RPCError(
                f"load_module({path!r}): not a regular file (a link or a directory); upload "
                "the file written by export_library and load that"
            )
        return os.path.join(self.root, *names)

    def close(self) -> None:
        """Delete the directory if this workspace made it."""
        if self._owned:
            shutil.rmtree(self.root, ignore_errors=True)


def _remove_tree(name: str, dir_fd: int) -> None:
    """Delete directory `name` of `dir_fd` and everything in it, removing links themselves."""
    for _root, dirs, files, root_fd in os.fwalk(name, dir_fd=dir_fd, topdown=False):
        for entry in files:
            os.unlink(entry, dir_fd=root_fd)
        for entry in dirs:  # links to directories are listed here and are not walked
            if stat.S_ISLNK(os.stat(entry, dir_fd=root_fd, follow_symlinks=False).st_mode):
                os.unlink(entry, dir_fd=root_fd)
            else:
                os.rmdir(entry, dir_fd=root_fd)
    os.rmdir(name, dir_fd=dir_fd)
