"""ObjectPath (tvm.runtime.ObjectPath) and the mismatch paths that structural equality reports."""

import pytest

import minitvm as tvm
from minitvm.ir.base import get_first_structural_mismatch
from minitvm.runtime import ObjectPath, object_path
from minitvm.script import tir as T


def test_paths_print_compare_and_take_prefixes():
    root = ObjectPath.root()
    path = root.attr("body").attr("seq").array_index(1)
    assert str(path) == "<root>.body.seq[1]"
    assert isinstance(path, object_path.ArrayIndexPath) and len(path) == 4
    assert path == ObjectPath.root().attr("body").attr("seq").array_index(1)
    assert path != root.attr("body").attr("seq").array_index(2)
    assert hash(path) == hash(ObjectPath.root().attr("body").attr("seq").array_index(1))
    assert path.get_prefix(2) == root.attr("body") and path.parent.parent == root.attr("body")
    assert root.is_prefix_of(path) and not path.is_prefix_of(root)
    assert str(root.missing_array_element(2)) == "<root>[<missing element #2>]"
    assert str(root.map_value("k")) == '<root>["k"]'
    assert str(root.missing_map_entry()) == "<root>[<missing entry>]"
    assert str(root.attr(None)) == "<root>.<unknown attribute>"
    assert str(ObjectPath.root("x").attr("y")) == "x.y"
    with pytest.raises(IndexError, match="at least 1"):
        path.get_prefix(0)
    with pytest.raises(IndexError, match="longer than the path"):
        path.get_prefix(5)


def test_first_mismatch_of_sequences_names_the_missing_element():
    root = ObjectPath.root()
    assert get_first_structural_mismatch((1, 2, 3), (1, 2, 3)) is None
    assert get_first_structural_mismatch((1, 2, 3), (1, 5, 3)) == (
        root.array_index(1),
        root.array_index(1),
    )
    lhs, rhs = get_first_structural_mismatch((1, 2), (1, 2, 3))
    assert lhs == root.missing_array_element(2) and rhs == root.array_index(2)
    lhs, rhs = get_first_structural_mismatch({"a": 1}, {"a": 1, "b": 2})
    assert lhs == root.missing_map_entry() and rhs == root.map_value("b")


def test_first_mismatch_inside_a_prim_func_is_a_field_path():
    def make(extent):
        @T.prim_func
        def f(A: T.Buffer((16,), "float32")):
            for i in range(extent):
                A[i] = T.float32(0)

        return f

    lhs, rhs = get_first_structural_mismatch(make(8), make(16))
    assert lhs == rhs
    assert str(lhs).startswith("<root>.body") and str(lhs).endswith(".extent.value")


def test_assert_structural_equal_message_shows_both_paths():
    with pytest.raises(ValueError, match=r"mismatch at root\[2\] \(rhs: root\[<missing element"):
        tvm.ir.assert_structural_equal((1, 2, 3), (1, 2))
