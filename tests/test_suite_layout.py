"""The test tree itself: pytest imports test modules by basename (the folders have no
__init__.py), so two files of one name stop the whole collection."""

import collections
import pathlib

TESTS = pathlib.Path(__file__).resolve().parent


def test_test_module_basenames_are_unique():
    seen = collections.defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        seen[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"rename one of each: {clashes}"
