"""Which GPU threads share one buffer of a storage scope: the one rule that bound inference,
compute_at and buffer compaction apply to loops bound to threads.

A `global` buffer is one for the whole launch, a `shared` one is one per thread block (every
threadIdx/vthread of the block sees it), a `local` one is private to a thread; `warp` memory
is shared by the lanes (threadIdx.x) of a warp.
"""

from __future__ import annotations

# storage rank of a scope (lower: seen by more threads)
STORAGE_RANK = {"global": 0, "shared": 1, "shared.dyn": 1, "warp": 2, "local": 3}


def storage_rank(scope: str) -> int:
    """The rank of `scope` ("shared.dyn" is shared; an unknown tag like "global.texture" counts
    by its first part)."""
    return STORAGE_RANK.get(scope, STORAGE_RANK.get(scope.split(".")[0], 0))


def thread_rank(tag: str) -> int | None:
    """1 for threadIdx.* and vthread* (threads of one block), 0 for blockIdx.*, else None."""
    if tag.startswith(("vthread", "threadIdx.", "cthread")):
        return 1
    return 0 if tag.startswith("blockIdx.") else None


def shares_storage(tag: str, scope: str) -> bool:
    """Whether all threads along the axis `tag` see the same buffer of `scope`, so that its
    region must cover what every one of them touches (the loop is relaxed over its range)."""
    rank = storage_rank(scope)
    if rank == 0:
        return False  # a global buffer is computed per iteration like any other loop
    if rank == 2:
        return tag == "threadIdx.x"
    t = thread_rank(tag)
    return t is not None and rank <= t
