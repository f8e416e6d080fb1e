"""The pager under operations: flow control on a backlog, log lines when Kafka is away, audit cost.

Prints three measurements (nothing is asserted; BENCHMARKS.md records them):

1. **In flight under a backlog.**  ``--alerts`` alert envelopes wait on the alert
   topics; ``faultline pager`` starts with ``max_in_flight`` (default 10,000)
   against a webhook answering 503 (a sink outage, so nothing completes).
   After ``--hold-s`` seconds: the alerts consumed and the peak in flight
   (``faultline_pager_in_flight_peak``; for a tree without that gauge, the
   ``faultline_pager_alerts_total`` consumed, which bounds it).
2. **Lines printed in ``--quiet-s`` seconds** by ``faultline pager`` pointed at
   an unreachable bootstrap (127.0.0.1:9).
3. **Audit append cost**: ``AuditLog.append`` of a real envelope, without and
   with fsync, and ``verify`` per entry; and the cost of recording one delivery
   in a sink's ledger that knows 50,000 keys.

``--tree DIR`` runs (1) and (2) with the faultline code of another checkout
(e.g. a worktree of an older commit) for a before/after in one run.

    python bench/pager_ops.py [--tree /tmp/ops-old] [--alerts 20000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import orjson
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_bench import ROOT, Broker

sys.path.insert(0, str(ROOT))

from detector.alerts import ESCALATION, ISOLATION  # noqa: E402
from detector.audit import AuditLog, verify  # noqa: E402
from detector.pager.testing import Receiver, envelope  # noqa: E402


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _metric(port: int, name: str) -> float | None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    total = None
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total = (total or 0.0) + float(line.rsplit(" ", 1)[1])
    return total


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAULTLINE_")}
    env.update(PYTHONPATH=str(tree), PYTHONUNBUFFERED="1")
    return env


def in_flight(bootstrap: str, tree: Path, alerts: int, hold_s: float) -> dict[str, float]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}."
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(prefix + t, 2, 1)
                                  for t in (ISOLATION, ESCALATION)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(alerts):
        v = envelope(f"node-{i:06d}")
        p.produce(prefix + ISOLATION, orjson.dumps(v), v["dedup_key"].encode())
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    port = _free_port()
    with Receiver(default=503) as rx, tempfile.TemporaryDirectory(prefix="pager-ops-") as tmp:
        cfg = Path(tmp) / "faultline.toml"
        cfg.write_text(f"""
[pager]
metrics_port = {port}

[pager.sinks.w]
type = "webhook"
url = "{rx.url}"
backoff_initial_s = 0.5
backoff_max_s = 2.0

[pager.sinks.w.storm]
enabled = false
""")
        proc = subprocess.Popen(
            [sys.executable, "-m", "detector.cli", "pager", "--config", str(cfg),
             "--bootstrap", bootstrap, "--topic-prefix", prefix, "--workdir", tmp,
             "--group-id", prefix + "pager"],
            cwd=tree, env=_env(tree), stdout=subprocess.DEVNULL,
            stderr=open(Path(tmp) / "pager.log", "wb"))  # noqa: SIM115
        try:
            peak = consumed = 0.0
            deadline = time.monotonic() + hold_s
            while time.monotonic() < deadline:
                time.sleep(0.25)
                consumed = _metric(port, "faultline_pager_alerts_total") or consumed
                peak = max(peak, _metric(port, "faultline_pager_in_flight_peak") or 0.0)
        finally:
            proc.kill()
            proc.wait(10)
            log = (Path(tmp) / "pager.log").read_text(errors="replace").splitlines()
            if not consumed:
                print("\n".join(log[-15:]), file=sys.stderr)
    return {"alerts": alerts, "consumed": consumed, "in_flight_peak_gauge": peak}


def quiet(tree: Path, seconds: float) -> int:
    with tempfile.TemporaryDirectory(prefix="pager-ops-") as tmp:
        try:
            out = subprocess.run(
                [sys.executable, "-m", "detector.cli", "pager", "--bootstrap", "127.0.0.1:9",
                 "--webhook", "http://127.0.0.1:1/x", "--workdir", tmp], cwd=tree,
                env=_env(tree), capture_output=True, timeout=seconds).stderr
        except subprocess.TimeoutExpired as exc:
            out = exc.stderr or b""
    return len(out.splitlines())


def audit_cost(n: int) -> dict[str, float]:
    record = {"topic": ISOLATION, "alert": envelope("node-007")}
    size = len(orjson.dumps(record))
    out: dict[str, float] = {"record_bytes": size}
    with tempfile.TemporaryDirectory(prefix="pager-ops-") as tmp:
        for fsync, count in ((False, n), (True, max(1, n // 20))):
            path = Path(tmp) / f"audit-{fsync}.jsonl"
            with AuditLog(path, fsync=fsync) as log:
                t0 = time.perf_counter()
                for _ in range(count):
                    log.append("alert", record)
                dt = time.perf_counter() - t0
            out[f"append_us{'_fsync' if fsync else ''}"] = dt / count * 1e6
        path = Path(tmp) / "audit-False.jsonl"
        t0 = time.perf_counter()
        v = verify(path)
        out["verify_us"] = (time.perf_counter() - t0) / v.entries * 1e6
        assert v.ok
    return out


def ledger_cost(keys: int = 50000, n: int = 200) -> float:
    """ms per ``Ledger.set`` (one delivery to PagerDuty or a webhook) with ``keys`` known."""
    from detector.pager.sinks import Ledger

    with tempfile.TemporaryDirectory(prefix="pager-ops-") as tmp:
        led = Ledger(Path(tmp) / "ledger.json")
        for i in range(keys):
            led._state[f"fl:c1:iso:network:nic:node-{i:06d}/mlx5_0"] = ("triggered", 1.0 + i)
        t0 = time.perf_counter()
        for i in range(n):
            led.set(f"fl:c1:iso:network:nic:new-{i:06d}/mlx5_0", "trigger", 1e6 + i)
            led.triggered()
        return (time.perf_counter() - t0) / n * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", action="append", default=[], help="another checkout to measure")
    ap.add_argument("--alerts", type=int, default=20000)
    ap.add_argument("--hold-s", type=float, default=20.0)
    ap.add_argument("--quiet-s", type=float, default=30.0)
    ap.add_argument("--audit", type=int, default=20000)
    ap.add_argument("--bootstrap", default=None)
    args = ap.parse_args()
    print(f"audit append (one {ISOLATION} envelope): {audit_cost(args.audit)}", flush=True)
    print(f"ledger: one delivery recorded with 50,000 keys known: {ledger_cost():.2f} ms",
          flush=True)
    trees = [Path(t).resolve() for t in args.tree] + [ROOT]
    with Broker(args.bootstrap) as broker:
        for tree in trees:
            r = in_flight(broker.bootstrap, tree, args.alerts, args.hold_s)
            print(f"{tree}: backlog of {r['alerts']} alerts, sink down for {args.hold_s:.0f} s, "
                  f"max_in_flight 10000: consumed {r['consumed']:.0f}, in-flight peak gauge "
                  f"{r['in_flight_peak_gauge']:.0f}", flush=True)
    for tree in trees:
        print(f"{tree}: unreachable bootstrap, {args.quiet_s:.0f} s: "
              f"{quiet(tree, args.quiet_s)} lines on stderr", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
