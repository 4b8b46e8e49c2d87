"""`tvm.contrib.download`: fetch a file once into a local cache (tutorials' test data).

    path = download_testdata(url, "cat.png", module="data")   # ~/.tvm_test_data/data/cat.png

Nothing downloaded is ever executed or unpickled here; the caller gets a path.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
import urllib.error
import urllib.request

from ..error import MiniTVMError

_ENV_CACHE = "TVM_TEST_DATA"  # TVM's own override of the cache root


def _cache_root() -> pathlib.Path:
    root = os.environ.get(_ENV_CACHE)
    return pathlib.Path(root) if root else pathlib.Path.home() / ".tvm_test_data"


def download(
    url: str,
    path: str,
    overwrite: bool = False,
    size_compare: bool = False,
    verbose: int = 1,
    retries: int = 3,
) -> None:
    """Download `url` to `path` (kept when it exists, unless `overwrite`); the file appears
    only once complete (written to a temporary file, then renamed)."""
    target = pathlib.Path(path)
    if target.exists() and not overwrite and not size_compare:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    last: Exception | None = None
    for _ in range(max(1, int(retries))):
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".")
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as resp:
                shutil.copyfileobj(resp, out)
            os.replace(tmp, target)
            return
        except (urllib.error.URLError, OSError, ValueError) as err:
            last = err
            pathlib.Path(tmp).unlink(missing_ok=True)
    raise MiniTVMError(
        f"download: could not fetch {url!r} to {str(target)!r} after {retries} tries ({last}); "
        "check the network, or put the file there yourself"
    ) from last


def download_testdata(
    url: str, relpath: str, module: str | list | tuple | None = None, overwrite: bool = False
) -> str:
    """The local path of `url` in the test-data cache (`~/.tvm_test_data/<module>/<relpath>`,
    or under $TVM_TEST_DATA), downloading it the first time."""
    parts = [module] if isinstance(module, str) else list(module or [])
    path = _cache_root().joinpath(*parts, relpath)
    download(url, str(path), overwrite=overwrite)
    return str(path)


__all__ = ["download", "download_testdata"]
