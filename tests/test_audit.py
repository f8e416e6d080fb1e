"""The audit file: any edited, dropped, inserted or reordered entry is found; a writer goes on."""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest

from detector.audit import AuditLog, verify
from detector.cli.main import main


def write(path: Path, n: int = 6, **kw: object) -> list[bytes]:
    with AuditLog(path, **kw) as log:  # type: ignore[arg-type]
        for i in range(n):
            log.append("alert", {"dedup_key": f"fl:iso:{i}", "status": "firing", "n": i})
    return path.read_bytes().splitlines()


def rewrite(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def test_an_intact_file_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "audit.jsonl"
    write(path)
    v = verify(path)
    assert v.ok and v.entries == 6
    assert main(["audit", "verify", str(path)]) == 0
    assert "intact: 6 entries" in capsys.readouterr().out


def test_an_edited_entry_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write(path)
    entry = orjson.loads(lines[3])
    entry["record"]["status"] = "resolved"
    lines[3] = orjson.dumps(entry)
    rewrite(path, lines)
    v = verify(path)
    assert v.problems == ["line 4: entry 4 was altered (its hash does not match its content)"]
    assert main(["audit", "verify", str(path)]) == 1
    assert "line 4: entry 4 was altered" in capsys.readouterr().err


@pytest.mark.parametrize("drop", [0, 2, 5])
def test_a_dropped_entry_is_found(tmp_path: Path, drop: int) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write(path)
    del lines[drop]
    rewrite(path, lines)
    v = verify(path)
    if drop == 5:  # the last one: the chain is whole, but the head is not the writer's
        assert v.ok and v.entries == 5
        assert v.head == orjson.loads(lines[-1])["hash"]
    else:
        assert len(v.problems) == 1 and v.problems[0].startswith(f"line {drop + 1}: entry "
                                                                 f"{drop + 2} does not follow")


def test_reordered_and_inserted_entries_are_found(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write(path)
    rewrite(path, [lines[0], lines[2], lines[1], *lines[3:]])
    assert [p.split(":")[0] for p in verify(path).problems] == ["line 2", "line 3", "line 4"]
    # A forged entry with a correct-looking hash of its own still breaks the chain after it.
    other = tmp_path / "other.jsonl"
    forged = write(other, 3)[2]
    rewrite(path, [*lines[:3], forged, *lines[3:]])
    assert not verify(path).ok


def test_with_a_key_a_rewritten_chain_is_found(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, key=b"k" * 32)
    assert verify(path, key=b"k" * 32).ok
    assert not verify(path).ok  # without the key nobody can recompute (or check) the chain
    # Rewriting the whole chain from an edit on, without the key, does not pass.
    forged = tmp_path / "forged.jsonl"
    write(forged)
    assert len(verify(forged, key=b"k" * 32).problems) == 6


def test_a_writer_continues_the_chain_after_a_restart_and_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, 3)
    with path.open("ab") as f:
        f.write(b'{"seq": 4, "ts": 1.0, "ki')  # a crash in mid-write
    with AuditLog(path) as log:
        assert log.seq == 3
        log.append("delivered", {"sink": "pd"})
    v = verify(path)
    assert v.entries == 4 and v.problems[0].startswith("line 4: not an audit entry")
    assert v.problems[1:] == []


def test_appends_from_threads_form_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        threads = [threading.Thread(target=lambda t=t: [log.append("x", {"t": t, "i": i})
                                                        for i in range(200)]) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    v = verify(path)
    assert v.ok and v.entries == 800


def test_the_pager_audits_every_delivery_and_dead_letter(tmp_path: Path) -> None:
    from prometheus_client import CollectorRegistry

    from detector.metrics import PagerMetrics
    from detector.pager.config import PagerConfig
    from detector.pager.core import FileDeadLetters, SinkWorker
    from detector.pager.notification import Notification
    from detector.pager.sinks import WebhookSink
    from detector.pager.testing import Receiver, alert

    with Receiver(answers=[200, 400]) as rx, AuditLog(tmp_path / "audit.jsonl") as audit:
        cfg = PagerConfig.from_dict({"sinks": {"w": {"type": "webhook", "url": rx.url}},
                                     "deadletter_file": str(tmp_path / "dead.jsonl")}, env={})
        m = PagerMetrics(CollectorRegistry(), cfg.sinks)
        stop = threading.Event()
        worker = SinkWorker(WebhookSink(cfg.sinks["w"], m, state_dir=None, stop=stop), m,
                            FileDeadLetters(tmp_path / "dead.jsonl"), stop=stop, audit=audit)
        for node in ("node-001", "node-002"):
            a = alert(node)
            worker.deliver(Notification("w", "trigger", a.dedup_key, "warning", a))
    entries = [orjson.loads(line) for line in (tmp_path / "audit.jsonl").read_bytes().splitlines()]
    assert [(e["kind"], e["record"]["alerts"][0]["dedup_key"][-16:]) for e in entries] == [
        ("delivered", alert("node-001").dedup_key[-16:]),
        ("dead_lettered", alert("node-002").dedup_key[-16:])]
    assert "HTTP 400" in entries[1]["record"]["reason"]
    assert verify(tmp_path / "audit.jsonl").ok


def test_the_service_output_audits_alerts_only(tmp_path: Path) -> None:
    from detector.audit import audited
    from detector.settings import Settings

    class Out:  # the service's producer, as far as the wrapper sees it
        sent = 0

        def produce(self, topic: str, value: bytes | None, key: bytes | None = None,
                    partition: int | None = None, headers: object = None) -> None:
            self.sent += 1

    settings = Settings.load(env={"FAULTLINE_AUDIT_FILE": str(tmp_path / "a.jsonl")})
    out = audited(Out(), settings, {"alerts.isolation": "p.alerts.isolation"})
    out.produce("p.faultline.findings", b"{}", b"k")
    out.produce("p.alerts.isolation", b'{"dedup_key": "fl:x", "status": "firing"}', b"fl:x")
    assert out.sent == 2
    out.close()
    (entry,) = [orjson.loads(x) for x in (tmp_path / "a.jsonl").read_bytes().splitlines()]
    assert entry["kind"] == "alert" and entry["record"] == {
        "topic": "alerts.isolation", "alert": {"dedup_key": "fl:x", "status": "firing"}}
    assert audited(Out(), Settings.load(env={}), {}).__class__ is Out
