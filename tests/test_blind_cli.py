"""The blind generators' one command line (bench/blind/cli.py): which logs a generator writes
for its arguments, each generator's own defaults kept (perf38, round 38)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from bench.blind import cli


def _calls(monkeypatch, module: str, argv: list[str]) -> list[tuple[str, int, float | None]]:
    gen = importlib.import_module(module)
    calls: list[tuple[str, int, float | None]] = []

    def write(out, story, seed, minutes):
        calls.append((story, seed, minutes))
        return out / f"{story}-s{seed}.jsonl.gz"

    monkeypatch.setattr(gen, "write", write)
    assert gen.main(argv) == 0
    return calls


def test_doctest():
    assert doctest.testmod(cli).failed == 0


def test_seeds_outer_stories_inner(monkeypatch, tmp_path):
    calls = _calls(monkeypatch, "bench.blind28.generate",
                   ["--out", str(tmp_path), "--seeds", "2..3", "--minutes", "4"])
    assert calls == [("packed", 2, 4.0), ("spread", 2, 4.0), ("packed", 3, 4.0),
                     ("spread", 3, 4.0)]


@pytest.mark.parametrize(("module", "minutes", "done"), [
    ("bench.blind12.generate", 15.0, False), ("bench.blind14.generate", 15.0, False),
    ("bench.blind15.generate", 15.0, False), ("bench.blind17.generate", 15.0, False),
    ("bench.blind21.generate", None, True), ("bench.blind22.generate", None, False),
    ("bench.blind23.generate", 18.0, True), ("bench.blind24.generate", 18.0, True),
    ("bench.blind26.generate", 15.0, False), ("bench.blind27.generate", 15.0, False),
])
def test_each_generator_keeps_its_defaults(monkeypatch, tmp_path, module, minutes, done):
    calls = _calls(monkeypatch, module, ["--out", str(tmp_path), "--stories", "x,y"])
    assert calls == [(s, seed, minutes) for seed in range(4) for s in ("x", "y")]
    assert (tmp_path / ".done").exists() == done


def test_bad_seeds_refused(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="--seeds"):
        _calls(monkeypatch, "bench.blind20.generate", ["--out", str(tmp_path), "--seeds", "3..1"])
