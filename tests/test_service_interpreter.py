"""The worker's interpreter: the GIL handed over within SWITCH_INTERVAL_S, set before it starts."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from detector.service import app
from detector.settings import Settings


@pytest.fixture
def interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)  # CPython's default
    yield
    sys.setswitchinterval(before)


def test_tune_interpreter_shortens_the_switch_interval(interval: None) -> None:
    app.tune_interpreter()
    assert sys.getswitchinterval() == pytest.approx(app.SWITCH_INTERVAL_S)
    assert app.SWITCH_INTERVAL_S < 0.005


class _Stop(Exception):
    pass


def test_run_tunes_the_interpreter_before_the_worker_starts(
        interval: None, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def stop(settings: Settings) -> dict[str, int]:
        seen.append(sys.getswitchinterval())  # the first thing that needs Kafka
        raise _Stop

    monkeypatch.setattr(app, "ensure_topics", stop)
    with pytest.raises(_Stop):
        app.run(Settings(state_dir=str(tmp_path)), on_force=lambda signum: None)
    assert seen == [pytest.approx(app.SWITCH_INTERVAL_S)]
