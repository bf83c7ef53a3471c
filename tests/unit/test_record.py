"""``cuship._record.frozen`` makes what ``@dataclass(frozen=True, slots=True[, kw_only=True])``
makes: held here to the dataclass it stands for, behaviour by behaviour."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field

import pytest

from cuship._record import frozen


@dataclass(frozen=True, slots=True, kw_only=True)
class Plain:
    """A frozen dataclass."""

    name: str
    count: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)
    note: str | None = field(default=None, compare=False, repr=False)


@frozen
class Fast:
    """The same, made by frozen."""

    name: str
    count: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)
    note: str | None = field(default=None, compare=False, repr=False)


@frozen(kw_only=False)
class Positional:
    """Positional fields, as ``@dataclass(frozen=True, slots=True)``."""

    first: int
    second: str = "x"


@frozen
class Checked:
    """One with ``__post_init__`` and its own ``__repr__``."""

    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative")

    def __repr__(self) -> str:
        return f"<{self.value}>"


def test_the_signature_and_defaults_are_the_dataclass_s() -> None:
    assert str(inspect.signature(Fast)) == str(inspect.signature(Plain))
    made = Fast(name="a")
    assert (made.name, made.count, made.tags, made.note) == ("a", 0, (), None)
    with pytest.raises(TypeError):
        Fast("a")  # type: ignore[call-arg]  # keyword-only, as kw_only=True
    assert Positional(1) == Positional(first=1, second="x")
    assert Fast.__match_args__ == Plain.__match_args__
    assert Positional.__match_args__ == ("first", "second")


def test_equality_hash_and_repr_are_the_dataclass_s() -> None:
    a, b = Fast(name="a", count=2, note="one"), Fast(name="a", count=2, note="two")
    assert a == b and hash(a) == hash(b)  # note: compare=False
    assert a != Fast(name="a", count=3)
    assert hash(a) == hash(Plain(name="a", count=2))
    assert a != Plain(name="a", count=2)  # type: ignore[comparison-overlap]  # another class
    assert repr(a).replace("Fast", "Plain") == repr(Plain(name="a", count=2, note="one"))
    assert repr(Positional(1)) == "Positional(first=1, second='x')"


def test_fields_cannot_be_assigned_or_deleted() -> None:
    made = Fast(name="a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "b"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del made.name
    assert not hasattr(made, "__dict__")  # slotted


def test_the_dataclass_functions_pickling_and_copies_work() -> None:
    made = Fast(name="a", count=1, tags=("t",), note="n")
    assert [f.name for f in dataclasses.fields(made)] == ["name", "count", "tags", "note"]
    assert dataclasses.is_dataclass(made)
    assert dataclasses.asdict(made) == {"name": "a", "count": 1, "tags": ("t",), "note": "n"}
    changed = dataclasses.replace(made, count=5)
    assert (changed.count, changed.note) == (5, "n") and made.count == 1
    for twin in (pickle.loads(pickle.dumps(made)), copy.copy(made), copy.deepcopy(made)):
        assert twin == made and twin.note == "n"


def test_a_class_keeps_what_it_defines_and_post_init_runs() -> None:
    assert repr(Checked(value=3)) == "<3>"
    with pytest.raises(ValueError, match="negative"):
        Checked(value=-1)


def test_a_class_on_a_frozen_dataclass_is_made_by_dataclasses() -> None:
    @frozen
    class Child(Plain):
        extra: int = 1

    child = Child(name="a", extra=2)
    assert child.extra == 2 and child == Child(name="a", extra=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.extra = 3  # type: ignore[misc]


@frozen
class Empty:
    """No field: every instance is equal."""


def test_records_of_one_field_and_of_none_compare_and_hash_as_the_dataclass_s() -> None:
    """A key of one field or none is a plain function on the class: it must not be bound to
    the instance (``Checked(value=1) == Checked(value=1)`` once raised a TypeError)."""
    one, same, other = Checked(value=1), Checked(value=1), Checked(value=2)
    assert one == same and one != other and hash(one) == hash(same)
    assert {one, same, other} == {one, other}
    assert Empty() == Empty() and hash(Empty()) == hash(Empty())
