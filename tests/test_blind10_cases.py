"""blind10 (round 19): the generator is deterministic and keeps DESIGN's input contract, and
every reproducer of a faultline error it found replays (bench/blind10/cases, strict xfails)."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from bench.blind10 import generate
from bench.blind10 import score as scoring
from tests import blindcases as bc

CASES = bc.cases_of("blind10")
REQUIRED = {"telemetry.step": ("ts", "job", "step", "rank", "node", "gpu", "step_ms"),
            "telemetry.ecc": ("ts", "node", "gpu"), "telemetry.thermal": ("ts", "node", "gpu"),
            "telemetry.nic": ("ts", "node", "nic", "port")}


@pytest.mark.parametrize("story", ["life", "zero3"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    a = generate.write(tmp_path / "a", story, 3, minutes=4.0)
    b = generate.write(tmp_path / "b", story, 3, minutes=4.0)
    assert a.read_bytes() == b.read_bytes()
    with gzip.open(a, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    assert recs[0]["topic"] == "topology"
    newest, steps, labels = 0.0, 0, 0
    for rec in recs[1:]:
        topic, v = rec["topic"], rec["value"]
        if topic == "labels":
            labels += 1
            assert v["start_ts"] <= v["end_ts"] and v["scope"]["level"]
            continue
        assert not labels, "labels come last"
        assert all(k in v for k in REQUIRED[topic]), (topic, v)
        assert all(not (isinstance(x, float) and not math.isfinite(x)) for x in v.values())
        assert v["ts"] > newest - 5.0, (topic, v["node"], v["ts"], newest)   # DESIGN: <= 5 s
        newest = max(newest, v["ts"])
        if topic == "telemetry.step":
            steps += 1
            assert v["step_ms"] >= v["compute_ms"] + v["comm_ms"] and v["comm_ms"] >= 0
            assert sum(k in v for k in ("tp_rank", "pp_rank", "dp_rank")) in (0, 3)
    assert steps > 200 and labels >= 1


def _one_page_a_fault(sc) -> bool:
    """Every fault caught, and by one problem: a second dedup_key for it pages twice."""
    return bc.every_fault_caught(sc) and sum(
        p["caught"] for p in sc["problems"]) <= len(sc["faults"])


def _names_the_clock(sc) -> bool:
    """Caught, and every alert that catches it shows the clock (the one field that differs).
    blind10 labels the lock unattributable (an escalation); round 39 (clu39, blind30 F2) pages
    a node-wide clock held by a setting as DESIGN's ``software`` cause, an isolation at the
    node whose action resets the clocks: that page, with the clock in its evidence, is right
    too (blind10's scorer counts only escalations for an unattributable label)."""
    cat = [p for p in sc["problems"] if p["caught"]]
    if bc.every_fault_caught(sc):
        return all("clock" in json.dumps(p["evidence"]) for p in cat)
    node = sc["faults"][0]["scope"]["node"]
    return len(sc["faults"]) == 1 and any(
        tp == "alerts.isolation" and a.get("status") == "firing" and a.get("cause") == "software"
        and a["scope"] == {"level": "node", "node": node} and a["action"]["name"] == "reset_clocks"
        and "sm_clock" in a["evidence"] for tp, a in sc["alerts"])


def _xid79_pages(sc) -> bool:
    """A firing message for the GPU (or its node) carries the XID 79 once it happened."""
    unit = sc["faults"][0]["scope"]
    return any(a.get("status") == "firing" and a["scope"].get("node") == unit["node"]
               and any(s.get("signal") == "xid" for s in a["evidence"].get("signals", ()))
               for _, a in sc["alerts"])


# name -> (what a right answer looks like, the strict-xfail reason or None). Built by
# `python -m bench.blind10.make_cases` (PLAN names the seed log and window); measured on main
# 160cbad (d7a702b's detector).
EXPECT: dict[str, tuple] = {
    # (Was a strict xfail: "K1: hgx-a06's loader stalls on all 8 of its ranks in 13 of 56 steps
    # (mean 1.15 s, max 2.4 s, all time in neither; 266 ms a step on average on 5.8 s steps, the
    # other 120 ranks waiting in comm): faultline sends nothing about hgx-a06 (in the full logs
    # it escalates 1 of 8 nvme-stalls, 857 s after onset)".  host20: detector.host_time, a
    # node's stalls that recur -- 6 hot steps over 2 minutes -- escalate the node.)
    "K1-nvme-stalls-unseen": (bc.every_fault_caught, None),
    # (Was a strict xfail: "K2: pp-int's stage-2 DP-1 TP group (hgx-b12 ranks 4-7) computes
    # 1.10x its one DP peer (median, 1.08-1.13) with 283 ms in neither against 35 ms from the
    # first step, while the peer waits 885 ms in comm against 376 ms: faultline sends nothing
    # in 330 s (0 of 8 numa-bind caught in the full logs)".  host20: detector.host_time, the
    # TP group's host time over its stage's other one for 240 s escalates the node.)
    "K2-numa-bind-unseen": (bc.every_fault_caught, None),
    # (Was a strict xfail: "K3: after pt-life's async checkpoint at step 50 two nodes'
    # write-backs run 12 steps longer than the rest (compute 1.05-1.07x, mean 1.03-1.04x, then
    # 1.00): faultline escalates hgx-a14 and hgx-a01 as slow_node/unknown at 198 s and 213 s
    # (the second when its ratio is back to 0.995) -- 6 such pages in the 8 life logs".  ep19:
    # in a job's first 130 steps a slow rank whose peers on 2 other nodes are as slow is held,
    # detector.steps JobMonitor._hold_shared.)
    "K3-async-ckpt-writeback-pages": (bc.no_false_positive, None),
    # (Was a strict xfail: "K4: hgx-b05/6 is isolated as hardware/gpu_hardware at 68 s for
    # 1046 PCIe replays; at 233 s, the isolation still open, the same GPU is escalated again
    # as slow_node/unknown (compute 1.10x during the next storm): two pages for one GPU, the
    # second without the replay evidence faultline already holds".  page20: a slow rank on a
    # GPU whose hardware isolation is open joins it, detector.correlate
    # Correlator._open_hardware.)
    "K4-aer-second-page": (_one_page_a_fault, None),
    # (Was a strict xfail: "K5: hgx-a03's 8 GPUs run locked at 1395 MHz (peers' median 1973
    # MHz), ~320 W against ~694 W, throttle 0, its ranks computing 1.30x: faultline escalates
    # the node (right) with only slow_rank signals, 'no thermal or power throttling' ruled
    # out and `dcgmi diag -r 3` next -- the clock, the one field that names the cause, is not
    # in the page".  page20: a busy GPU's reasonless clock is told (detector.throttle
    # sm_clock) and a slow escalation compares it with the job's other GPUs'
    # (Correlator._held_clock): evidence sm_clock, `nvidia-smi -q -d CLOCK` / `-rac` next.)
    "K5-locked-clocks-unnamed": (_names_the_clock, None),
    # (Was a strict xfail: "K6: hgx-b06/0 is isolated (drain_gpu) at 207 s for 3460 PCIe
    # replays; XID 79 (fell off the bus) follows at 412 s and no firing message says so -- in
    # the full log the isolation's action turns to drain_node only in its resolved message at
    # 717 s, and the second XID 79 (gone for good after a reboot) sends nothing".  page20: an
    # open isolation whose action comes to reach further fires again with it at once,
    # detector.correlate Correlator._raise.)
    "K6-xid79-under-open-isolation": (_xid79_pages, None),
    # (ali23, round 23: blind10 held life-s7's false page, lead round 22) hgx-a01's 8 ranks
    # 1.02-1.03x from the step after the snapshot, 1.06-1.08x on 4 steps, back to 1.00 at
    # step 161: held as the write-back (JobMonitor._hold_after_event) until 120 s after the
    # snapshot, when the CUSUM, alarmed still though the run had ended two steps before,
    # found them again and the node was escalated slow_node/unknown (resolved 817 s later).
    # A run is reported while it goes on (its latest step adds to its score).
    "K7-writeback-paged-after-hold": (bc.no_false_positive, None),
}


_replay = bc.cli_scorer(CASES, scoring, with_alerts=True)  # (in this process, once a case)


def test_every_case_has_an_expectation_and_replays():
    names = bc.names_of(CASES)
    assert names == set(EXPECT)
    for name in sorted(names):
        sc = _replay(name)
        assert sc["faults"] or sc["problems"] or EXPECT[name][1] is None, name


test_case = bc.case_test(EXPECT, _replay)
