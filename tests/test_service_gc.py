"""The worker's start-up objects leave the cyclic collector's full scans; its garbage does not."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from detector.service.app import freeze_startup_objects


class _Node:
    def __init__(self) -> None:
        self.peer: _Node | None = None


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the test session collects as usual


def test_startup_objects_are_frozen_after_their_garbage_is_collected(unfrozen: None) -> None:
    kept = _Node()  # lives on, like a module or a class: frozen
    a, b = _Node(), _Node()
    a.peer, b.peer = b, a  # a cycle dropped before the freeze: garbage, not kept for good
    dropped = weakref.ref(a)
    del a, b

    frozen = freeze_startup_objects()

    assert dropped() is None
    assert frozen == gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # out of every generation's scans
