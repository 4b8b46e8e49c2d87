"""A test-only target kind, added in this one file: what adding a kind takes (its code
generator and runtime aside)."""

from minitvm.target.kinds import KindSpec, register_kind, unregister_kind

DUMMY = KindSpec("dummyaccel", "cpu", 1, ("dummyaccel", "gpu"), gpu=True,
                 defaults={"max_num_threads": 64, "max_shared_memory_per_block": 1024,
                           "thread_warp_size": 1})  # fmt: skip


def register() -> None:
    register_kind(DUMMY)


def unregister() -> None:
    unregister_kind(DUMMY.name)
