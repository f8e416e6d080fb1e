"""Behaviour of each detector through the engine, on small hand-made incidents."""

from __future__ import annotations

import itertools

import pytest

from detector.alerts import ESCALATION, ISOLATION, Alert
from detector.engine import Engine
from detector.events import NonFinite
from detector.testing import T0, ecc, feed, healthy_job, nic, step, thermal
from detector.topology import Topology


def firing(alerts: list[Alert]) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


# -- slow ranks ----------------------------------------------------------------------------


def test_a_ten_percent_slow_rank_is_found_within_ten_steps_and_escalated() -> None:
    alerts = feed(Engine(), healthy_job(steps=60, slow={3: 1.10}, slow_from=20))
    assert firing(alerts) == [(ESCALATION, "slow_node", "unknown", "gpu:node-000/3")]
    a = alerts[0]
    assert a.onset_ts == pytest.approx(T0 + 20, abs=1.5)
    steps_to_detect = a.detected_ts - (T0 + 20)
    assert steps_to_detect <= 10 + 5  # CUSUM steps + the wait for an explanation
    assert "ruled_out" in a.evidence and a.evidence["next_diagnostic"].startswith("dcgmi diag")


def test_healthy_jitter_whole_job_slowdowns_and_one_step_spikes_raise_nothing() -> None:
    events = list(healthy_job(steps=200, seed=7))
    # a checkpoint: every rank 1.5x slower for 4 steps; and one rank 3x for a single step
    patched = []
    for e in events:
        factor = 1.5 if 100 <= e.step < 104 else 1.0
        if e.rank == 9 and e.step == 150:
            factor = 3.0
        c = e.compute_ms * factor
        patched.append(e._replace(compute_ms=c, step_ms=max(e.step_ms * factor, c + 1)))
    assert firing(feed(Engine(), patched)) == []


def test_pipeline_stages_are_never_compared_with_each_other() -> None:
    stages = (600.0, 700.0, 650.0, 720.0)
    assert firing(feed(Engine(), healthy_job(ranks=32, steps=120,
                                             stage_compute_ms=stages))) == []
    alerts = feed(Engine(), healthy_job(ranks=32, steps=120, stage_compute_ms=stages,
                                        slow={17: 1.08}, slow_from=40))
    assert firing(alerts) == [(ESCALATION, "slow_node", "unknown", "gpu:node-002/1")]


def test_a_slow_rank_with_a_throttled_gpu_is_attributed_to_thermal_not_escalated() -> None:
    steps = list(healthy_job(steps=60, slow={3: 1.15}, slow_from=20))
    temps = [thermal(T0 + s + 0.5, "node-000", 3, clock_mhz=1650.0 if s >= 19 else 1980.0,
                     throttle=0x40 if s >= 19 else 0, temp_c=91.0 if s >= 19 else 66.0)
             for s in range(60)]
    events = sorted(steps + temps, key=lambda e: e.ts)
    alerts = feed(Engine(), events)
    assert firing(alerts) == [(ISOLATION, "slow_node", "thermal", "gpu:node-000/3")]
    assert {e["signal"] for e in alerts[0].evidence["signals"]} >= {"throttle"}


def test_a_slow_rank_that_recovers_is_resolved() -> None:
    alerts = feed(Engine(), healthy_job(steps=150, slow={3: 1.2}, slow_from=20, slow_to=50))
    assert [a.status for a in alerts] == ["firing", "resolved"]
    assert alerts[0].dedup_key == alerts[1].dedup_key
    assert alerts[1].detected_ts > T0 + 50


def test_two_slow_gpus_of_one_node_escalate_the_node() -> None:
    alerts = feed(Engine(), healthy_job(steps=60, slow={2: 1.15, 5: 1.15}, slow_from=20))
    assert firing(alerts) == [(ESCALATION, "slow_node", "unknown", "node:node-000")]


def test_duplicates_and_reordering_neither_raise_nor_hide_a_slow_rank() -> None:
    events = list(healthy_job(steps=60, slow={3: 1.15}, slow_from=20))
    noisy = []
    for i, e in enumerate(events):
        noisy.append(e)
        if i % 7 == 0:
            noisy.append(e)  # duplicate
    # swap neighbours in blocks: out of order by a few hundred ms
    for i in range(0, len(noisy) - 1, 5):
        noisy[i], noisy[i + 1] = noisy[i + 1], noisy[i]
    assert firing(feed(Engine(), noisy)) == [
        (ESCALATION, "slow_node", "unknown", "gpu:node-000/3")]
    assert firing(feed(Engine(), [e for e in noisy if e.rank != 3 or e.step < 20])) == []


def test_a_job_restart_is_not_a_fault() -> None:
    first = list(healthy_job(steps=50))
    again = [e._replace(ts=e.ts + 600.0, step=e.step + 20) for e in healthy_job(steps=50,
                                                                                seed=3)]
    eng = Engine()
    assert firing(feed(eng, first + again)) == []
    assert eng.stats()["job_restarts"] == 1


# -- hardware -----------------------------------------------------------------------------


def test_xid_48_fires_at_once_and_its_followers_join_the_same_problem() -> None:
    events = [ecc(T0, "node-007", 3), ecc(T0 + 5.0, "node-007", 3, dbe=1, retired_dbe=1),
              ecc(T0 + 5.0, "node-007", 3, dbe=1, retired_dbe=1, xid=48),
              ecc(T0 + 5.0, "node-007", 3, dbe=1, retired_dbe=1, xid=48),  # duplicate event
              ecc(T0 + 5.8, "node-007", 3, dbe=1, retired_dbe=1, xid=95, pending=True),
              ecc(T0 + 10.0, "node-007", 3, dbe=1, retired_dbe=1, pending=True,
                  recovery="gpu_reset")]
    alerts = feed(Engine(), events)
    assert firing(alerts) == [(ISOLATION, "hardware", "gpu_memory", "gpu:node-007/3")]
    assert alerts[0].detection_latency_s == 0.0 and alerts[0].detected_ts == T0 + 5.0
    assert alerts[0].action.name == "drain_gpu" and alerts[0].action.requires_approval


def test_application_xids_are_evidence_not_a_verdict() -> None:
    events = [ecc(T0 + i, "node-001", 2, xid=x) for i, x in enumerate((13, 31, 43))]
    assert firing(feed(Engine(), events)) == []


def test_counter_resets_and_single_correctable_errors_are_not_faults() -> None:
    events = [ecc(T0, "node-001", 0, sbe=40, pcie=12, nvlink=(5, 2, 0)),
              ecc(T0 + 5, "node-001", 0, sbe=41, pcie=12, nvlink=(5, 2, 0)),
              ecc(T0 + 10, "node-001", 0, sbe=0, pcie=0, nvlink=(0, 0, 0)),  # GPU reset
              ecc(T0 + 15, "node-001", 0, sbe=1, pcie=0, nvlink=(0, 0, 0))]
    assert firing(feed(Engine(), events)) == []


@pytest.mark.parametrize("kw,cause", [
    ({"failure": True, "xid": 64}, "gpu_memory"),
    ({"nvlink": (400, 120, 3)}, "nvlink"),
    ({"sbe": 500, "pending": True}, "gpu_memory"),  # (an SBE rate alone is evidence: health15)
    ({"recovery": "drain_and_reset"}, "gpu_hardware"),
    ({"pcie": 1000}, "gpu_hardware"),
])
def test_each_hardware_signal_raises_its_cause(kw: dict[str, object], cause: str) -> None:
    alerts = feed(Engine(), [ecc(T0, "node-002", 6), ecc(T0 + 5, "node-002", 6, **kw)])
    assert firing(alerts) == [(ISOLATION, "hardware", cause, "gpu:node-002/6")]
    # A recovery action names no cause: it waits (the allowed disorder) for an XID that does;
    # NVLink trouble waits 0.9 s for its node's other GPUs (their baseboard: hw18).
    assert alerts[0].detected_ts == T0 + 5 + (
        3.0 if "recovery" in kw else 0.9 if cause == "nvlink" else 0.0)


def test_a_recovery_action_that_arrives_before_its_xid_takes_the_xids_cause() -> None:
    events = [ecc(T0, "node-002", 6),
              ecc(T0 + 5.3, "node-002", 6, xid=154, recovery="drain_and_reset"),
              ecc(T0 + 5.0, "node-002", 6, failure=True, xid=64)]  # delivered late
    alerts = feed(Engine(), events)
    assert firing(alerts) == [(ISOLATION, "hardware", "gpu_memory", "gpu:node-002/6")]
    assert alerts[0].detected_ts == T0 + 5.0


def test_a_latched_hardware_problem_resolves_after_a_gpu_reset() -> None:
    events = [ecc(T0, "node-002", 6), ecc(T0 + 5, "node-002", 6, dbe=2, xid=48),
              ecc(T0 + 100, "node-002", 6, dbe=2), ecc(T0 + 200, "node-002", 6, dbe=0)]
    alerts = feed(Engine(), events)
    assert [a.status for a in alerts] == ["firing", "resolved"]


# -- thermal ------------------------------------------------------------------------------


def test_power_cap_dips_are_normal_but_a_throttled_clock_drop_is_not() -> None:
    cap = [thermal(T0 + i, "node-003", 1, clock_mhz=1980 if i < 10 else 1940, throttle=0 if
                   i < 10 else 0x4) for i in range(30)]
    assert firing(feed(Engine(), cap)) == []
    hot = [thermal(T0 + i, "node-003", 1, clock_mhz=1980 if i < 10 else 1600,
                   throttle=0 if i < 10 else 0x40, temp_c=92) for i in range(30)]
    alerts = feed(Engine(), hot)
    assert firing(alerts) == [(ISOLATION, "slow_node", "thermal", "gpu:node-003/1")]
    assert alerts[0].onset_ts == T0 + 10 and alerts[0].detected_ts == T0 + 12
    brake = [thermal(T0 + i, "node-003", 1, clock_mhz=1980 if i < 10 else 1500,
                     throttle=0 if i < 10 else 0x80) for i in range(30)]
    assert firing(feed(Engine(), brake)) == [(ISOLATION, "slow_node", "power", "gpu:node-003/1")]


# -- network ------------------------------------------------------------------------------


def nic_stream(nodes: list[str], seconds: int, *, bad: dict[tuple[str, str], str] | None = None,
               start_bad: int = 20, nics: int = 4) -> list:
    """NIC samples at 1 Hz; ``bad`` maps (node, nic) -> "errors" | "down" | "slow"."""
    bad = bad or {}
    out = []
    totals: dict[tuple[str, str], list[int]] = {}
    for t in range(seconds):
        for node in nodes:
            for k in range(nics):
                name = f"mlx5_{k}"
                tot = totals.setdefault((node, name), [0, 0, 0])
                kind = bad.get((node, name)) if t >= start_bad else None
                tot[0] += (2 if kind == "slow" else 20) * 10**9 // 8 * 8 // 8
                if kind == "errors":
                    tot[1] += 30
                if kind == "down" and t == start_bad:
                    tot[2] += 1
                out.append(nic(T0 + t + 0.01 * k, node, name, tx=tot[0], rx=tot[0],
                               errors=tot[1], link_downed=tot[2],
                               up=not (kind == "down" and t < start_bad + 3)))
    return out


def test_nic_link_down_errors_and_slow_ports_are_nic_problems_without_topology() -> None:
    bad = {("node-000", "mlx5_1"): "down", ("node-001", "mlx5_2"): "errors",
           ("node-002", "mlx5_0"): "slow"}
    alerts = feed(Engine(), nic_stream(["node-000", "node-001", "node-002"], 60, bad=bad))
    assert sorted(firing(alerts)) == [
        (ISOLATION, "network", "nic", "nic:node-000/mlx5_1:1"),
        (ISOLATION, "network", "nic", "nic:node-001/mlx5_2:1"),
        (ISOLATION, "network", "nic", "nic:node-002/mlx5_0:1")]
    down = next(a for a in alerts if a.scope.nic == "mlx5_1")
    # A lost link waits the switch window (no topology: are other nodes losing theirs?).
    assert down.detection_latency_s == Engine().cfg.switch_window_s


def test_healthy_nics_and_counter_resets_raise_nothing() -> None:
    events = nic_stream(["node-000", "node-001"], 60)
    at_reset = next(e.tx_bytes for e in events if e.node == "node-001" and e.nic == "mlx5_3"
                    and e.ts > T0 + 30)
    # a driver reload: the port's counters restart from zero and keep counting
    reset = [e._replace(tx_bytes=e.tx_bytes - at_reset, rx_bytes=e.rx_bytes - at_reset)
             if e.node == "node-001" and e.nic == "mlx5_3" and e.ts > T0 + 30 else e
             for e in events]
    assert firing(feed(Engine(), reset)) == []


TOPO = Topology.from_text("""
Topology=t
NodeSet=node-[000-007] Gpus=8 Nics=mlx5_[0-3]
SwitchName=rail[0-3]-leaf0 Nodes=node-[000-007] Nics=mlx5_0
SwitchName=rail1-leaf0 Nodes=node-[000-007] Nics=mlx5_1
SwitchName=rail2-leaf0 Nodes=node-[000-007] Nics=mlx5_2
SwitchName=rail3-leaf0 Nodes=node-[000-007] Nics=mlx5_3
""".replace("SwitchName=rail[0-3]-leaf0", "SwitchName=rail0-leaf0"))


def test_trouble_on_most_nodes_behind_a_switch_is_one_switch_alert() -> None:
    nodes = [f"node-{i:03d}" for i in range(8)]
    bad = {(n, "mlx5_2"): "errors" for n in nodes[:6]}
    alerts = feed(Engine(topology=TOPO), nic_stream(nodes, 60, bad=bad))
    assert firing(alerts) == [(ISOLATION, "network", "switch", "switch:rail2-leaf0")]
    assert alerts[0].evidence["nodes_affected"] == 6
    assert alerts[0].tenant is None


def test_one_bad_cable_behind_a_switch_is_still_a_nic_alert() -> None:
    nodes = [f"node-{i:03d}" for i in range(8)]
    alerts = feed(Engine(topology=TOPO), nic_stream(nodes, 60, bad={("node-004", "mlx5_2"):
                                                                     "errors"}))
    assert firing(alerts) == [(ISOLATION, "network", "nic", "nic:node-004/mlx5_2:1")]


# -- silent data corruption -----------------------------------------------------------------


def test_a_checksum_minority_is_flagged_on_the_same_step() -> None:
    events = [step(T0 + s + 0.001 * r, r, s, checksum="bad" if (r == 5 and s >= 12) else f"c{s}")
              for s in range(20) for r in range(8)]
    alerts = feed(Engine(), events)
    # (An escalation since sdc16: the vote says where, not why -- a rerun tells a transient
    # upset from a GPU that computes wrong.)
    assert firing(alerts) == [(ESCALATION, "sdc", "gpu_hardware", "gpu:node-000/5")]
    assert alerts[0].onset_ts == T0 + 12 + 0.005
    assert alerts[0].detected_ts == T0 + 12 + 0.007  # the step's last message


def test_repeated_gradient_spikes_on_one_replica_escalate_but_a_single_one_does_not() -> None:
    def grads(spike_steps: set[int]) -> list:
        return [step(T0 + s + 0.001 * r, r, s, grad_norm=40.0 if (r == 6 and s in spike_steps)
                     else 1.0 + 0.05 * ((r * 7 + s) % 5)) for s in range(80) for r in range(8)]
    assert firing(feed(Engine(), grads({30}))) == []
    alerts = feed(Engine(), grads({30, 34, 41, 47}))
    assert firing(alerts) == [(ESCALATION, "sdc", "unknown", "gpu:node-000/6")]
    assert alerts[0].onset_ts == pytest.approx(T0 + 30.006)


def test_a_nan_loss_on_one_rank_is_escalated() -> None:
    eng = Engine()
    alerts = eng.process_nonfinite(NonFinite(T0, "job-1", 5, 3, "node-000", 3, "loss", 0, 0, 3))
    assert firing(alerts) == [(ESCALATION, "sdc", "unknown", "gpu:node-000/3")]


# -- state -----------------------------------------------------------------------------------


def test_snapshot_and_restore_mid_incident_changes_nothing() -> None:
    events = sorted(itertools.chain(
        healthy_job(steps=80, slow={3: 1.12}, slow_from=30),
        [ecc(T0 + 40.5, "node-001", 2, dbe=1, xid=48)]), key=lambda e: e.ts)
    whole = feed(Engine(), events)
    eng = Engine()
    half = feed(eng, events[: len(events) // 2], finish=False)
    eng2 = Engine.restore(eng.snapshot())
    rest = feed(eng2, events[len(events) // 2:])
    assert [a.to_dict() for a in half + rest] == [a.to_dict() for a in whole]
    assert len(firing(whole)) == 2


def test_a_gpu_that_keeps_failing_after_two_resets_goes_to_hardware_inspection() -> None:
    events = []
    t = T0
    for _cycle in range(3):
        events += [ecc(t, "node-004", 2, sbe=5), ecc(t + 1, "node-004", 2, sbe=5, xid=79),
                   ecc(t + 60, "node-004", 2, sbe=0)]  # reset: counters back to zero
        t += 100
    alerts = feed(Engine(), events)
    esc = [a for a in alerts if a.topic == ESCALATION and a.status == "firing"]
    assert [(a.kind, a.cause, a.scope.key) for a in esc] == [
        ("hardware", "gpu_hardware", "gpu:node-004/2")]
    assert esc[0].detected_ts == T0 + 201
    assert "hardware inspection" in esc[0].evidence["next_diagnostic"]
    assert esc[0].action.name == "investigate"


NVL = Topology.from_text("""
Topology=nvl
NodeSet=tray-[00-07] Gpus=4 Nics=mlx5_[0-3]
Domain=rack-[0-1] Nodes=tray-[00-07]
SwitchName=leaf0 Nodes=tray-[00-07]
""")


def nvlink_stream(bad: set[tuple[str, int]], seconds: int = 40) -> list:
    """ECC samples every 5 s for 4 trays x 4 GPUs of rack-0; ``bad`` GPUs count NVLink errors."""
    out = []
    for t in range(0, seconds, 5):
        for node in ("tray-00", "tray-01", "tray-02", "tray-03"):
            for g in range(4):
                errs = 200 * max(0, t - 10) if (node, g) in bad else 0
                out.append(ecc(T0 + t + 0.1 * g, node, g, nvlink=(errs, errs // 3, 0)))
    return out


def test_nvlink_trouble_across_an_nvl72_rack_is_one_domain_alert() -> None:
    bad = {(f"tray-0{i}", g) for i in range(3) for g in range(4)}
    alerts = feed(Engine(topology=NVL), nvlink_stream(bad))
    assert firing(alerts) == [(ISOLATION, "hardware", "nvlink", "domain:rack-0")]
    assert alerts[0].evidence["nodes_affected"] == 3


def test_nvlink_errors_on_one_gpu_of_a_rack_stay_that_gpus() -> None:
    alerts = feed(Engine(topology=NVL), nvlink_stream({("tray-02", 1)}))
    assert firing(alerts) == [(ISOLATION, "hardware", "nvlink", "gpu:tray-02/1")]
    # held for the domain window, then decided
    assert alerts[0].detected_ts == pytest.approx(alerts[0].onset_ts + 6.0)


def test_memory_stays_bounded_resolved_problems_and_ended_jobs_are_forgotten() -> None:
    eng = Engine()
    feed(eng, healthy_job(steps=150, slow={3: 1.2}, slow_from=20, slow_to=50), finish=False)
    assert len(eng.correlator.problems) == 1
    # two hours later another job runs: the first job and its resolved problem are gone
    feed(eng, healthy_job(steps=20, t0=T0 + 7300, job="job-2"), finish=False)
    assert eng.stats()["jobs"] == 1
    assert eng.correlator.problems == {}


def test_job_state_grows_with_the_ranks_seen_not_the_largest_rank_number() -> None:
    eng = Engine()
    events = list(healthy_job(steps=30))
    huge = step(events[40].ts, (1 << 24) - 1, events[40].step)
    feed(eng, [*events[:41], huge, *events[41:]])
    job = eng.monitors._jobs["job-1"]
    assert len(job._base) < 1000 and (1 << 24) - 1 in job._slot


def test_a_record_from_the_year_2100_changes_nothing_and_a_real_gap_is_kept() -> None:
    from detector.events import InvalidMessage
    from detector.testing import YEAR_2100

    events = list(healthy_job(steps=40, slow={3: 1.2}, slow_from=15))
    clean = firing(feed(Engine(), events))
    eng = Engine()
    poisoned = [*events[:100], events[100]._replace(ts=YEAR_2100), *events[100:]]
    assert firing(feed(eng, poisoned)) == clean != []
    assert [e.field for e in eng.rejected] == ["ts"]
    assert isinstance(eng.rejected[0], InvalidMessage)
    assert eng.clock < YEAR_2100
    # In the service, a partition's first record is checked against the wall clock.
    from detector.monitors import Monitors
    mon = Monitors(wall_clock=lambda: T0)
    with pytest.raises(InvalidMessage, match="ts_out_of_range"):
        mon.process(thermal(T0 + 301.0, "node-000", 0), [])
    mon.process(thermal(T0 + 1.0, "node-000", 0), [])
    with pytest.raises(InvalidMessage, match="ahead of the partition's clock"):
        mon.process(thermal(YEAR_2100, "node-000", 0), [])
    assert mon.clock == T0 + 1.0


def test_one_stray_message_with_an_old_step_number_is_not_a_restart() -> None:
    # steps 8 s apart (a large model): a message 6 s after the last step is not late
    events = list(healthy_job(steps=40, slow={3: 1.2}, slow_from=15, step_s=8.0))
    clean = firing(feed(Engine(), events))
    stray = events[300]._replace(step=0, rank=7, ts=events[299].ts + 6.0)
    eng = Engine()
    assert firing(feed(eng, [*events[:300], stray, *events[300:]])) == clean != []
    assert eng.stats()["job_restarts"] == 0
