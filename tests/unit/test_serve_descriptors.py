"""The open-file limit ``cuship serve`` asks for, decided with ``resource`` stubbed (a unit
test never changes the real limit): raised toward what the server wants, within the hard
limit, never lowered, and a refusal leaves the limit there is."""

from __future__ import annotations

import resource
from collections.abc import Callable

import pytest

from cuship.events import Event
from cuship.serve import ServeLimits, descriptors_wanted, more_descriptors
from cuship.serve.descriptors import SPARE, within_descriptors

INFINITY = resource.RLIM_INFINITY


class _Limits:
    """``getrlimit``/``setrlimit`` of RLIMIT_NOFILE, recording what was set."""

    def __init__(self, soft: int, hard: int, *, refuse: type[Exception] | None = None) -> None:
        self.now = (soft, hard)
        self.set: list[tuple[int, int]] = []
        self.refuse = refuse

    def get(self, which: int) -> tuple[int, int]:
        assert which == resource.RLIMIT_NOFILE
        return self.now

    def put(self, which: int, limits: tuple[int, int]) -> None:
        assert which == resource.RLIMIT_NOFILE
        if self.refuse is not None:
            raise self.refuse("not permitted")
        self.set.append(limits)
        self.now = limits


Stub = Callable[..., _Limits]


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Stub:
    def install(soft: int, hard: int, *, refuse: type[Exception] | None = None) -> _Limits:
        limits = _Limits(soft, hard, refuse=refuse)
        monkeypatch.setattr(resource, "getrlimit", limits.get)
        monkeypatch.setattr(resource, "setrlimit", limits.put)
        return limits

    return install


def test_the_server_wants_a_file_per_connection_and_worker_and_some_spare() -> None:
    limits = ServeLimits(workers=8, max_connections=100)
    assert descriptors_wanted(limits) == 108 + SPARE


def test_a_soft_limit_already_enough_is_left_alone(stub: Stub) -> None:
    limits = stub(8192, 8192)
    assert more_descriptors(4096) == 8192
    assert limits.set == []


def test_an_infinite_soft_limit_is_left_alone(stub: Stub) -> None:
    limits = stub(INFINITY, INFINITY)
    assert more_descriptors(4096) == INFINITY
    assert limits.set == []


def test_the_soft_limit_is_raised_to_what_is_wanted(stub: Stub) -> None:
    limits = stub(1024, 1 << 20)
    assert more_descriptors(4192) == 4192
    assert limits.set == [(4192, 1 << 20)]


def test_an_infinite_hard_limit_lets_the_soft_limit_reach_what_is_wanted(
    stub: Stub,
) -> None:
    limits = stub(1024, INFINITY)
    assert more_descriptors(4192) == 4192
    assert limits.set == [(4192, INFINITY)]


def test_a_hard_limit_below_what_is_wanted_caps_it(stub: Stub) -> None:
    limits = stub(1024, 2048)
    assert more_descriptors(4192) == 2048
    assert limits.set == [(2048, 2048)]


def test_a_soft_limit_at_the_hard_limit_asks_for_nothing(stub: Stub) -> None:
    limits = stub(2048, 2048)
    assert more_descriptors(4192) == 2048
    assert limits.set == []


@pytest.mark.parametrize("refusal", [ValueError, OSError])
def test_a_refused_raise_keeps_the_limit_there_is(stub: Stub, refusal: type[Exception]) -> None:
    limits = stub(1024, 1 << 20, refuse=refusal)
    assert more_descriptors(4192) == 1024
    assert limits.now == (1024, 1 << 20)


def test_the_server_takes_on_only_the_connections_the_limit_allows(stub: Stub) -> None:
    stub(1024, 1024)
    events: list[Event] = []
    limits = within_descriptors(ServeLimits(workers=32, max_connections=4096), events.append)
    assert limits.max_connections == 1024 - 32 - SPARE
    assert "at most 928 connections" in events[0].message
    stub(INFINITY, INFINITY)
    wide = ServeLimits(workers=32, max_connections=4096)
    assert within_descriptors(wide, events.append) is wide
