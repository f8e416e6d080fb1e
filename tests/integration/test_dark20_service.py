"""Through Kafka, a node gone dark under its job is paged in seconds of event time (dark20).

The log is produced at real time (speed 1), as collectors deliver: a job's step partition
falls quiet when the job stalls, and its clock moves on with the wall clock (idle
advance), as in production.  node-001 dies at 90 s under job-1 (its other ranks wait busy
in the collective); job-2 is stopped at 80 s (its GPUs idle) and node-005 goes dark at
90 s: a drain.  The page for node-001 comes less than 60 s of event time after its death
(main waited for the 240 s bound); node-005 is not paged.
"""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest
from service_harness import Deployment, wait_for

from tests.test_liveness import write

pytestmark = pytest.mark.kafka

T0 = 1767225600.0
NODES = [f"node-{i:03d}" for i in range(8)]
JOBS = {"job-1": NODES[:4], "job-2": NODES[4:]}
LOST, DRAINED = "node-001", "node-005"
DARK_AT, STOP_AT, END = 90.0, 80.0, 170.0
EVERY = 5.0  # telemetry interval (s)


def records() -> list[dict]:
    rng = random.Random(7)
    out: list[tuple[float, int, dict]] = []
    for node in NODES:
        gone = DARK_AT if node in (LOST, DRAINED) else 1e9
        idle_from = STOP_AT if node in JOBS["job-2"] else 1e9
        for topic in ("thermal", "ecc", "nic"):
            t = T0 + rng.uniform(0, EVERY)
            while t < T0 + min(END, gone):
                if topic == "nic":
                    v: dict = {"ts": t, "node": node, "nic": "mlx5_0", "port": 1,
                               "link_state": "up", "rate_gbps": 400.0,
                               "tx_bytes": int((t - T0) * 1e9), "rx_bytes": int((t - T0) * 1e9)}
                    out.append((t, len(out), {"topic": "telemetry.nic", "value": v}))
                else:
                    for gpu in range(2):
                        v = {"ts": t, "node": node, "gpu": gpu}
                        if topic == "thermal" and t - T0 >= idle_from:
                            v.update(gpu_temp_c=40.0, power_w=90.0, sm_clock_mhz=345.0,
                                     throttle=1)
                        elif topic == "thermal":
                            v.update(gpu_temp_c=65.0 + rng.random(), power_w=600.0,
                                     sm_clock_mhz=1980.0, throttle=0)
                        else:
                            v.update(sbe_volatile=0, dbe_volatile=0)
                        out.append((t, len(out), {"topic": f"telemetry.{topic}", "value": v}))
                t += EVERY * rng.uniform(0.9, 1.1)
    for job, nodes in JOBS.items():
        stop = DARK_AT if job == "job-1" else STOP_AT
        for s in range(int(stop / 2)):
            t = T0 + 2.0 * s + 1.0
            for k, node in enumerate(nodes):
                for gpu in range(2):
                    out.append((t, len(out), {"topic": "telemetry.step", "value": {
                        "ts": t, "job": job, "step": s, "rank": 2 * k + gpu, "node": node,
                        "gpu": gpu, "step_ms": 2000.0, "compute_ms": 1500.0,
                        "comm_ms": 480.0}}))
    out.sort(key=lambda r: r[:2])
    return [r[2] for r in out]


def test_a_node_lost_under_its_job_is_paged_within_a_minute_and_a_drain_is_not(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    # each dark node shares its telemetry partitions with a live one (which sees time pass)
    part = {n: zlib.crc32(n.encode()) % 4 for n in NODES}
    for dark in (LOST, DRAINED):
        assert any(part[n] == part[dark] for n in NODES if n not in (LOST, DRAINED))
    log = write(tmp_path, records())
    dep = Deployment(kafka_bootstrap, tmp_path)
    try:
        worker = dep.start_worker("w1")
        producer = dep.produce_log(log, speed=1.0)

        def page() -> list[dict]:
            try:
                alerts = dep.alerts()
            except RuntimeError:  # (the alert topics are made by the worker)
                return []
            return [v for _, v in alerts if v["kind"] == "unattributed"
                    and v["status"] == "firing"]

        pages = wait_for("the page of the node lost under its job", page,
                         END + 60.0, interval_s=2.0, on_timeout=worker.log_tail)
        assert [p["scope"]["node"] for p in pages] == [LOST], pages
        latency = pages[0]["detected_ts"] - (T0 + DARK_AT)
        assert latency < 60.0, latency
        assert "stopped stepping with it" in pages[0]["evidence"]["recommended_because"]
        out, _ = producer.communicate(timeout=END + 60)
        assert producer.returncode == 0, out.decode(errors="replace")
        # the log's end and then some: the drained node was judged (quiet) and not paged
        wait_for("the correlator past the drained node's fast window",
                 lambda: worker.released() >= T0 + DARK_AT + 90, 120, on_timeout=worker.log_tail)
        assert [p["scope"]["node"] for p in page()] == [LOST]
        print(f"dark20: paged {latency:.1f} s of event time after the death")
        assert worker.terminate() == 0, worker.log_tail()
    finally:
        dep.stop_all()
