"""What a user sees on the rough edges: unreadable logs, configuration sources, alert lines.

Each test runs the command (or the function behind the line) and reads the text a person
would read.
"""

from __future__ import annotations

import gzip
import tomllib
from pathlib import Path

import pytest

from detector.alerts import Scope
from detector.cli import main
from detector.cli.common import format_alert
from detector.engine import Engine
from detector.monitors import tracked_gpus
from detector.pager.payloads import title
from detector.testing import ecc, feed, healthy_job, thermal
from replay.log import write_records

ROOT = Path(__file__).resolve().parent.parent
ALL_FAULTS = ROOT / "replay" / "incidents" / "h100-128-all-faults.jsonl.gz"


def _log(tmp_path: Path, n: int = 50) -> Path:
    path = tmp_path / "ok.jsonl.gz"
    write_records(path, ({"topic": "telemetry.ecc", "value": {"ts": 100.0 + i, "node": "n-0",
                                                             "gpu": 0}} for i in range(n)))
    return path


def _replay(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str, str]:
    rc = main(["replay", "--quiet", str(path)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_truncated_gzip_log_warns_in_one_line_and_replays_what_it_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = _log(tmp_path, 2000).read_bytes()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    rc, out, err = _replay(capsys, cut)
    assert rc == 0
    (line,) = err.strip().splitlines()
    assert line.startswith(f"faultline replay: warning: {cut}: truncated: the gzip stream ends "
                           "early, after line ")
    assert "Traceback" not in err
    events = int(out.split("-- ")[1].split(" events")[0].replace(",", ""))
    assert 0 < events < 2000 and f"replayed the {events:,} events before it" in line


@pytest.mark.parametrize(("content", "why"), [
    (b"", "the file is empty"),
    (b"hello, I am not a log\n", "no line is a {topic, value} record (1 unreadable): is it an "
     "incident log?"),
    (bytes(range(256)) * 3, "no line is a {topic, value} record"),
    (gzip.compress(b'{"topic": "telemetry.ecc", "value": {}}\n' * 100, mtime=0)[:20],
     "truncated: the gzip stream ends early, after line 0"),
])
def test_a_log_with_nothing_readable_is_one_line_and_a_failure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, why: str) -> None:
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(content)
    rc, out, err = _replay(capsys, path)
    assert rc == 1
    (line,) = err.strip().splitlines()
    assert line.startswith(f"faultline replay: {path}: nothing could be read: {why}")
    assert "-inf" not in out


def test_one_unreadable_log_among_good_ones_fails_the_run_but_replays_the_rest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    good = _log(tmp_path)
    rc = main(["replay", "--quiet", str(tmp_path / "empty.jsonl"), str(good)])
    out = capsys.readouterr().out
    assert rc == 1 and "-- 50 events over 49 s" in out


def test_alert_summaries_do_not_repeat_kind_and_scope() -> None:
    ev = ecc(100.0, "node-007", 3, dbe=1, xid=48)
    (a,) = feed(Engine(), [ev])
    assert a.summary.startswith("signal=xid, xid=48")
    line = format_alert(a, 90.0)
    assert line.count("gpu:node-007/3") == 1 and line.count("hardware/gpu_memory") == 1
    from detector.alerts import FiredAlert
    fired = FiredAlert.from_record(a.topic, a.to_dict())
    assert title(fired) == ("[faultline isolation] hardware/gpu_memory on gpu:node-007/3: "
                            "signal=xid, xid=48, meaning=double-bit ECC error")
    # An envelope written before the fix is not repeated either.
    old = FiredAlert.from_record(a.topic, {**a.to_dict(), "summary": "hardware/gpu_memory on "
                                           "gpu:node-007/3: signal=xid, xid=48"})
    assert title(old).count("gpu:node-007/3") == 1


def test_the_kind_cause_column_of_replay_lines_is_aligned() -> None:
    (hw,) = feed(Engine(), [ecc(100.0, "node-007", 3, dbe=1, xid=48)])
    import dataclasses
    other = dataclasses.replace(hw, kind="sdc", cause="unknown", scope=Scope.of_gpu("n-1", 0))
    lines = [format_alert(hw, 90.0), format_alert(other, 90.0)]
    assert lines[0].index("gpu:node-007/3") == lines[1].index("gpu:n-1/0")
    assert lines[0].index(" latency ") == lines[1].index(" latency ")


def test_tracked_gpus_counts_a_gpu_once_across_the_partitions_it_lands_on() -> None:
    # A GPU's ECC, thermal and step telemetry go to three partitions (node, node, job keys).
    parts = [Engine(), Engine(), Engine()]
    gpus = [(f"node-{i:03d}", g) for i in range(2) for g in range(8)]
    feed(parts[0], [ecc(100.0, n, g) for n, g in gpus])
    feed(parts[1], [thermal(100.0, n, g) for n, g in gpus])
    feed(parts[2], healthy_job(ranks=16, steps=3))
    assert sorted(parts[2].monitors.gpu_keys()) == sorted(gpus)
    assert tracked_gpus(p.monitors for p in parts) == 16


def test_faultline_config_prints_every_section_with_sources(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "f.toml"
    cfg.write_text('[kafka]\ngroup_id = "g1"\n[pager]\ncommit_interval_s = 2.0\n'
                   '[pager.sinks.oncall]\ntype = "webhook"\nurl = "http://127.0.0.1:1/h"\n')
    monkeypatch.setenv("FAULTLINE_PAGER_GROUP_ID", "pg")
    monkeypatch.delenv("FAULTLINE_CONFIG", raising=False)
    assert main(["config", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    sections = [ln.split("]")[0] + "]" for ln in out.splitlines() if ln.startswith("[")]
    for s in ("[kafka]", "[topics]", "[partitions]", "[service]", "[thresholds]", "[pager]",
              "[pager.severity]", "[pager.sinks.oncall]", "[pager.sinks.oncall.storm]"):
        assert s in sections, s
    assert f'group_id = "g1"  # file {cfg}' in out
    assert 'group_id = "pg"  # env FAULTLINE_PAGER_GROUP_ID' in out
    assert f"commit_interval_s = 2.0  # file {cfg}" in out
    assert "drain_timeout_s = 10.0  # default; env FAULTLINE_PAGER_DRAIN_TIMEOUT_S" in out
    assert f'url = ["http://127.0.0.1:1/h"]  # file {cfg}' in out
    tomllib.loads(out)  # still TOML


def test_config_with_no_pager_sinks_says_how_to_add_one(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("FAULTLINE_CONFIG", "FAULTLINE_PAGER_SINKS_ALERTMANAGER_URL"):
        monkeypatch.delenv(var, raising=False)
    assert main(["config"]) == 0
    assert "# no sinks: add [pager.sinks.NAME]" in capsys.readouterr().out


def test_pager_print_config_says_where_each_value_came_from(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAULTLINE_CONFIG", raising=False)
    monkeypatch.setenv("FAULTLINE_PAGER_SINKS_PAGERDUTY_ROUTING_KEY", "R" * 32)
    assert main(["pager", "--print-config", "--alertmanager", "http://127.0.0.1:9093"]) == 0
    out = capsys.readouterr().out
    assert 'url = ["http://127.0.0.1:9093"]  # command line --alertmanager' in out
    assert ('routing_key = "**********"  # env FAULTLINE_PAGER_SINKS_PAGERDUTY_ROUTING_KEY'
            in out)
    assert "R" * 32 not in out
    assert 'type = "pagerduty"  # default: the sink\'s name' in out


def test_the_package_declares_its_license_as_an_spdx_string() -> None:
    # A TOML table here makes setuptools print three deprecation warnings on `make run`.
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert doc["project"]["license"] == "Apache-2.0"
    (st,) = [r for r in doc["build-system"]["requires"] if r.startswith("setuptools")]
    assert st == "setuptools>=77"  # the first to take an SPDX string without warnings
    # Packages at the top of the repository, said so: the editable install is a .pth file,
    # not the import-hook strategy setuptools warns about in a 10-line box.
    assert doc["tool"]["setuptools"]["package-dir"] == {"": "."}
