import pytest

from minitvm.error import MiniTVMError
from minitvm.runtime import (
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)


def test_register_as_decorator_direct_and_bare():
    @register_func("test.registry.add")
    def add(a, b):
        return a + b

    register_func("test.registry.mul", lambda a, b: a * b)

    @register_func
    def test_registry_bare(x):
        return -x

    try:
        assert get_global_func("test.registry.add")(2, 3) == 5
        assert get_global_func("test.registry.mul")(2, 3) == 6
        assert get_global_func("test_registry_bare")(2) == -2
        assert {"test.registry.add", "test.registry.mul"} <= set(list_global_func_names())
    finally:
        for name in ("test.registry.add", "test.registry.mul", "test_registry_bare"):
            remove_global_func(name)


def test_registering_twice_needs_override():
    register_func("test.registry.twice", lambda: 1)
    try:
        with pytest.raises(
            MiniTVMError, match="'test.registry.twice' is already registered; pass override=True"
        ):
            register_func("test.registry.twice", lambda: 2)
        register_func("test.registry.twice", lambda: 3, override=True)
        assert get_global_func("test.registry.twice")() == 3
    finally:
        remove_global_func("test.registry.twice")


def test_missing_functions():
    assert get_global_func("test.registry.missing", allow_missing=True) is None
    with pytest.raises(MiniTVMError, match="no global function named 'test.registry.missing'"):
        get_global_func("test.registry.missing")
    with pytest.raises(
        MiniTVMError, match="no global function named 'test.registry.missing' to remove"
    ):
        remove_global_func("test.registry.missing")


def test_bad_registrations():
    with pytest.raises(MiniTVMError, match="expected a callable, got int"):
        register_func("test.registry.bad", 3)
    with pytest.raises(MiniTVMError, match="the name must be a str"):
        register_func(3, lambda: 1)
