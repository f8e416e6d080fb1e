"""The batch path (detector.quiet) against the record path, on random batches.

A fetched batch of thermal, NIC, ECC or step records goes through ``quiet_run`` where
each record provably makes no finding, the rest through ``Monitors.process``.
These run the same random input both ways -- the record path alone by
replacing ``quiet_run`` with one that takes nothing -- and compare everything a
user or a snapshot sees.  Both paths take a unit's healthy step (its ``quiet``),
so that step is compared with the unit's general path alone, the full rules.  Each
comparison covers: the findings messages in order, the dead letters, the
counts and the state bytes.  The input mixes healthy runs with every reason the
batch path must step aside: faults that start and stop, counter resets and
missing values, late and duplicate samples, new units, far-ahead timestamps and
bad messages in the middle of a batch; the step messages (:class:`_Jobs`) steps that
overlap, duplicates, stragglers, late messages, lost ones, restarts and stray old step
numbers, slow ranks, checksum mismatches, gradient spikes, ranks moving, new jobs and a
job that stops.
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

import detector.engine
import detector.pipeline.source
from detector.decoding import decode
from detector.engine import Engine
from detector.events import ECC, NIC, STEP, THERMAL, InvalidMessage
from detector.gpu_health import GpuHealth
from detector.liveness import SCAN_S
from detector.network import NodeNics
from detector.pipeline.source import SourcePartition
from detector.quiet import quiet_run
from detector.statecodec import UNSIGNED
from detector.steps import JobMonitor
from detector.thermal import GpuThermal
from detector.thresholds import Thresholds


def _none(mon: Any, evs: list[Any], i: int, until: float = 0.0) -> int:
    return i  # takes nothing: every record goes the record path


class _Stream:
    """Random telemetry of a few nodes: mostly healthy, with episodes of every kind of trouble."""

    def __init__(self, rng: random.Random, nodes: int = 3, gpus: int = 5, nics: int = 4,
                 trouble: bool = True) -> None:
        self.rng = rng
        self.trouble = trouble
        self.ts = 1_700_000_000.0
        self.gpus = [(f"n{k}", g) for k in range(nodes) for g in range(gpus)]
        self.ports = [(f"n{k}", f"mlx5_{j}", 1) for k in range(nodes) for j in range(nics)]
        self.mode: dict[Any, str] = {}
        self.nic_c: dict[Any, list[int]] = {p: [0] * 11 for p in self.ports}
        self.ecc_c: dict[Any, list[int]] = {g: [0] * 8 for g in self.gpus}
        self.last: dict[Any, float] = {}

    def _mode(self, unit: Any, modes: tuple[str, ...]) -> str:
        if not self.trouble:
            return "ok"
        m = self.mode.get(unit, "ok")
        if self.rng.random() < (0.04 if m == "ok" else 0.15):
            m = "ok" if m != "ok" else self.rng.choice(modes)
        self.mode[unit] = m
        return m

    def _ts(self, unit: Any) -> float:
        r = self.rng.random() if self.trouble else 1.0
        if r < 0.03 and unit in self.last:
            return self.last[unit]  # a duplicate
        if r < 0.06:
            return self.ts - self.rng.uniform(0.5, 4.0)  # late
        if r < 0.07:
            return self.ts + self.rng.uniform(0.0, 0.2)
        return self.ts

    def thermal(self, node: str, gpu: int) -> dict[str, Any]:
        m = self._mode((THERMAL, node, gpu), ("hot", "cap", "hw", "minor", "gaps"))
        ts = self._ts((THERMAL, node, gpu))
        v: dict[str, Any] = {"ts": ts, "node": node, "gpu": gpu,
                             "gpu_temp_c": round(self.rng.gauss(62, 1.5), 1),
                             "mem_temp_c": 70.0, "power_w": 650.0,
                             "sm_clock_mhz": float(self.rng.choice((1980, 1965, 1995))),
                             "throttle": 0}
        if m == "hot":
            v["gpu_temp_c"] += 15.0
        elif m == "cap":
            v["throttle"], v["sm_clock_mhz"] = 0x4, 1500.0
        elif m == "hw":
            v["throttle"], v["sm_clock_mhz"] = 0x40, 1200.0
        elif m == "minor":
            v["throttle"], v["sm_clock_mhz"] = 0x4, 1900.0
        elif m == "gaps":
            v["ts"] = ts + self.rng.choice((0.0, 3.0, 9.0))
        if self.trouble and self.rng.random() < 0.03:
            v[self.rng.choice(("gpu_temp_c", "sm_clock_mhz", "throttle"))] = None
        self.last[(THERMAL, node, gpu)] = v["ts"]
        return v

    def nic(self, node: str, nic: str, port: int) -> dict[str, Any]:
        unit = (NIC, node, nic, port)
        m = self._mode(unit, ("errors", "flap", "down", "slow", "reset"))
        c = self.nic_c[(node, nic, port)]
        slow = m == "slow"
        c[0] += int(self.rng.uniform(40e9, 50e9) * (0.1 if slow else 1.0))
        c[1] += int(self.rng.uniform(40e9, 50e9) * (0.1 if slow else 1.0))
        c[6] += self.rng.randrange(1000)
        c[9] += self.rng.randrange(5)
        c[10] += self.rng.randrange(5)
        if m == "errors":
            c[self.rng.choice((2, 4, 7, 8))] += self.rng.randrange(1, 40)
        elif m == "flap":
            c[3] += 1
        elif m == "reset" and self.rng.random() < 0.3:
            c[:] = [0] * 11
        v: dict[str, Any] = {"ts": self._ts(unit), "node": node, "nic": nic, "port": port,
                             "link_state": "down" if m == "down" else "up", "rate_gbps": 400.0}
        names = ("tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors",
                 "xmit_discards", "xmit_wait", "out_of_sequence", "packet_seq_err",
                 "np_cnp_sent", "rp_cnp_handled")
        v.update(zip(names, c, strict=True))
        if self.trouble and self.rng.random() < 0.02:
            v[self.rng.choice(names)] = None
        self.last[unit] = v["ts"]
        return v

    def ecc(self, node: str, gpu: int) -> dict[str, Any]:
        unit = (ECC, node, gpu)
        m = self._mode(unit, ("sbe", "dbe", "nvlink", "pcie", "xid", "remap", "recovery",
                              "reset", "retired", "retired_dbe"))
        c = self.ecc_c[(node, gpu)]
        v: dict[str, Any] = {"ts": self._ts(unit), "node": node, "gpu": gpu}
        if m in ("sbe", "dbe", "nvlink", "pcie", "retired", "retired_dbe"):
            c[{"sbe": 0, "dbe": 1, "nvlink": 5, "pcie": 4, "retired": 2, "retired_dbe": 3}[m]] \
                += self.rng.randrange(1, 30)
        elif m == "reset" and self.rng.random() < 0.3:
            c[:] = [0] * 8
        elif m == "xid" and self.rng.random() < 0.3:
            v["xid"] = self.rng.choice((13, 31, 48, 79, 94))
        elif m == "remap":
            v["row_remap_pending"] = True
            v["row_remap_failure"] = self.rng.random() < 0.2
        elif m == "recovery":
            v["recovery_action"] = self.rng.choice(("gpu_reset", "none", "drain_p2p"))
        names = ("sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe",
                 "pcie_replay", "nvlink_crc_errors", "nvlink_replay_errors",
                 "nvlink_recovery_errors")
        v.update(zip(names, c, strict=True))
        if m == "ok" and self.rng.random() < 0.5:
            v["row_remap_pending"] = v["row_remap_failure"] = False
            v["recovery_action"] = "none"
        if self.trouble and self.rng.random() < 0.02:
            v[self.rng.choice(names)] = None
        self.last[unit] = v["ts"]
        return v

    def messages(self, topic: str, seconds: int, new_units_at: int) -> list[bytes | None]:
        out: list[bytes | None] = []
        units = self.ports if topic == NIC else self.gpus
        make = {THERMAL: self.thermal, NIC: self.nic, ECC: self.ecc}[topic]
        for sec in range(seconds):
            self.ts += 1.0
            live = units if sec >= new_units_at else units[: len(units) // 2]
            for unit in live:
                out.append(orjson.dumps(make(*unit)))
            r = self.rng.random() if self.trouble else 1.0
            if r < 0.03:
                out.append(self.rng.choice((b"not json", b'{"ts": "x"}', None,
                                            b'{"ts": 1.0, "node": "n0"}')))
            elif r < 0.04:  # far ahead of the clock, alone or three agreeing
                far = self.ts + 1000.0
                for _ in range(self.rng.choice((1, 3))):
                    v = make(*self.rng.choice(units))
                    v["ts"] = far
                    out.append(orjson.dumps(v))
        return out


class _Jobs:
    """Random step messages of a few TP 2 x DP 4 jobs, in arrival order, with trouble.

    Each step's ranks report in shuffled order a little after the step ends, so steps
    overlap; with ``trouble`` some messages come twice (at once, or after their step was
    decided), straggle, come late (a late one may carry a checksum of its own) or never;
    a job restarts from a checkpoint (every rank goes back) or sends one stray old step
    number after a pause; a rank runs slow, disagrees on the checksum, spikes its
    gradient norm or moves to another GPU for a while; a second job starts midway, the
    first stops before the end; one job may send no ``compute_ms``.  A job's ranks report
    within 50 ms of each other, or over 0.6 s (so the job's expiry check falls due in the
    middle of a step); a stream may put every ``ts`` on a grid of 1/8 s (clock and deadline
    equal).
    """

    def __init__(self, rng: random.Random, trouble: bool = True, ranks: int = 8) -> None:
        self.rng = rng
        self.trouble = trouble
        self.ranks = ranks
        self.t0 = 1_700_000_000.0
        self.grid = rng.random() < 0.5

    def _maybe(self, p: float) -> bool:
        return self.trouble and self.rng.random() < p

    def _job(self, name: str, start: float, steps: int, out: list[tuple[float, Any]]) -> None:
        rng, ranks = self.rng, self.ranks
        step_s = rng.uniform(0.7, 1.3)
        slow, slow_from = rng.randrange(ranks), rng.randrange(12, steps)
        bad, bad_from = rng.randrange(ranks), rng.randrange(12, steps)
        spiky, spiky_from = rng.randrange(ranks), rng.randrange(12, steps)
        no_compute = self._maybe(0.3)
        spread = rng.choice((0.05, 0.6))
        gpu_of = {r: (f"{name}-n{r // 4}", r % 4) for r in range(ranks)}
        restart_at, stray_at = (rng.randrange(12, steps - 4) if self.trouble else -1
                                for _ in range(2))
        s, t = 0, start
        for k in range(steps):
            t += step_s * rng.uniform(0.97, 1.03)
            if k == restart_at or (k > 12 and self._maybe(0.01)):
                s = max(0, s - rng.randrange(1, 6))  # a restart from a checkpoint, after a pause
                t += rng.uniform(6.0, 12.0)
            elif k == stray_at or (k > 12 and self._maybe(0.01)):
                # a pause, then one stray old step number
                t += rng.uniform(6.0, 9.0)
                out.append((t, self._message(name, max(0, s - 3), rng.randrange(ranks), t,
                                             gpu_of, 1.0, "c", 1.0, no_compute)))
            if self._maybe(0.01):
                r = rng.randrange(ranks)
                gpu_of[r] = (gpu_of[r][0], gpu_of[r][1] + 4)  # a rank moved to another GPU
            for r in range(ranks):
                if self._maybe(0.01):
                    continue  # lost
                factor = 1.4 if r == slow and slow_from <= k < slow_from + 25 else 1.0
                check = "x" if r == bad and bad_from <= k < bad_from + 6 else "c"
                grad = 20.0 if r == spiky and spiky_from <= k < spiky_from + 12 and (
                    rng.random() < 0.5) else 1.0
                ts = t + rng.uniform(0.0, spread)
                if self.grid:
                    ts = round(ts * 8.0) / 8.0
                v = self._message(name, s, r, ts, gpu_of, factor, check, grad, no_compute)
                delay = rng.uniform(0.0, 0.3)
                if self._maybe(0.03):
                    delay += rng.uniform(0.6, 3.0)  # a straggler
                elif self._maybe(0.01):
                    delay += rng.uniform(6.0, 10.0)  # late: its step decided without it
                    if rng.random() < 0.5:
                        v["param_checksum"] = "late"
                out.append((ts + delay, v))
                if self._maybe(0.02):  # a duplicate, at once or after its step was decided
                    out.append((ts + delay + rng.choice((0.01, 7.0)), v))
            s += 1

    def _message(self, job: str, s: int, r: int, ts: float, gpu_of: dict[int, Any],
                 factor: float, check: str, grad: float, no_compute: bool) -> dict[str, Any]:
        compute = round(700.0 * self.rng.lognormvariate(0.0, 0.015) * factor, 2)
        v: dict[str, Any] = {
            "ts": ts, "job": job, "step": s, "rank": r, "node": gpu_of[r][0],
            "gpu": gpu_of[r][1], "step_ms": 1250.0, "compute_ms": compute,
            "comm_ms": round(1250.0 - compute - 20.0, 2), "tp_rank": r % 2, "pp_rank": 0,
            "dp_rank": r // 2, "loss": 2.0,
            "grad_norm": round(grad * self.rng.lognormvariate(0.0, 0.05), 4),
            "param_checksum": f"{check}{s}-{r % 2}", "cluster": "c1"}
        if no_compute:
            del v["compute_ms"]
        return v

    def timed(self, steps: int = 100) -> list[tuple[float, bytes | None]]:
        """(arrival, message) in arrival order: bad messages among them."""
        out: list[tuple[float, Any]] = []
        self._job("job-a", self.t0, int(steps * 0.8), out)
        self._job("job-b", self.t0 + steps * 0.25, steps, out)
        out.sort(key=lambda x: x[0])
        msgs: list[tuple[float, bytes | None]] = []
        jump = int(len(out) * 0.9) if self._maybe(0.5) else -1
        for k, (at, v) in enumerate(out):
            msgs.append((at, orjson.dumps(v)))
            r = self.rng.random() if self.trouble else 1.0
            if r < 0.005:
                msgs.append((at, self.rng.choice((b"not json", None, b'{"ts": 1.0}'))))
            elif r < 0.008 or k == jump:  # far ahead of the clock, a stray or (once, late
                for _ in range(3 if k == jump else 1):  # in the stream) three agreeing
                    msgs.append((at, orjson.dumps({**v, "ts": at + 1000.0})))
        return msgs

    def messages(self, steps: int = 100) -> list[bytes | None]:
        return [m for _, m in self.timed(steps)]


def _batches(rng: random.Random, msgs: list[bytes | None]) -> list[list[Any]]:
    out, i = [], 0
    while i < len(msgs):
        k = rng.choice((1, 3, 7, 40, 200))
        out.append([(i + j, b"k", m, None) for j, m in enumerate(msgs[i:i + k])])
        i += k
    return out


def _run(topic: str, batches: list[list[Any]], cfg: Thresholds | None = None
         ) -> tuple[Any, ...]:
    part = SourcePartition(topic, 0, 4, cfg)
    emits: list[Any] = []
    dead: list[Any] = []
    states = []  # after every batch: a difference a later record would mend still shows
    for b in batches:
        part.process(b, 0.0, emits, dead)
        states.append(UNSIGNED.encode(part.state()))
    return emits, dead, part.stats(), part.monitors.stats(), part.offset, states


@pytest.mark.parametrize("topic", [THERMAL, NIC, ECC])
@pytest.mark.parametrize("seed", range(4))
def test_source_batches_same_as_record_path(topic: str, seed: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    msgs = _Stream(rng).messages(topic, 150, new_units_at=40)
    batches = _batches(rng, msgs)
    fast = _run(topic, batches)
    monkeypatch.setattr(detector.pipeline.source, "quiet_run", _none)
    slow = _run(topic, batches)
    assert fast[0] == slow[0]  # findings, seen, forget messages, in order
    assert fast[1] == slow[1]  # dead letters
    assert fast[2:] == slow[2:]  # counts, offset, state
    findings = [e for e in fast[0] if b'"finding"' in e.value]
    assert len(findings) >= 5 and fast[1]  # the input did make findings and dead letters


def _never_quiet(self: Any, s: Any, cfg: Any) -> bool:
    return False  # the unit's update decides every sample on its general path


# Other thresholds than the defaults: a quiet step reading a constant instead shows.
_OTHER = Thresholds(throttle_samples=0, hot_delta_c=2.0, retired_sbe_pages=1,
                    nic_throughput_ratio=0.97)


@pytest.mark.parametrize("topic", [THERMAL, NIC, ECC])
@pytest.mark.parametrize("seed", [4, 5, 6, 7, "other"])
def test_each_units_quiet_step_agrees_with_its_general_path(
        topic: str, seed: int | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit's ``quiet`` (the healthy step both paths take) against its ``update``'s general
    path alone, which decides every sample by the full rules: a ``quiet`` that takes a
    sample the rules would act on (or that the rules treat otherwise) shows here."""
    cfg = _OTHER if seed == "other" else None
    rng = random.Random(seed)
    batches = _batches(rng, _Stream(rng).messages(topic, 150, new_units_at=40))
    fast = _run(topic, batches, cfg)
    for unit in (GpuThermal, NodeNics, GpuHealth):
        monkeypatch.setattr(unit, "quiet", _never_quiet)
    general = _run(topic, batches, cfg)
    assert fast == general
    findings = [e for e in fast[0] if b'"finding"' in e.value]
    assert len(findings) >= 5 and fast[1]


def test_quiet_run_takes_the_healthy_majority() -> None:
    """The batch path is used: a healthy stream goes nearly all through it."""
    s = _Stream(random.Random(7), trouble=False)
    msgs = s.messages(THERMAL, 60, new_units_at=0)
    part = SourcePartition(THERMAL, 0, 4)
    part.process([(k, None, m, None) for k, m in enumerate(msgs[:len(s.gpus) * 5])], 0.0, [], [])
    evs = [decode(THERMAL, m) for m in msgs[len(s.gpus) * 5:]]  # type: ignore[arg-type]
    # (All but the record at each sweep with periodic work: detector.liveness's look at the
    # newest records every SCAN_S of event time, silent17.)
    mon, i, stops = part.monitors, 0, 0
    while (i := quiet_run(mon, evs, i)) < len(evs):
        mon.process(evs[i], [])
        i, stops = i + 1, stops + 1
    assert stops <= (evs[-1].ts - evs[0].ts) / SCAN_S + 1 < len(evs) / 50


def test_repeated_offsets_are_skipped_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    msgs = _Stream(rng).messages(NIC, 30, new_units_at=0)
    recs = [(k, None, m, None) for k, m in enumerate(msgs)]
    # a fetch repeated after a seek, and one out of order
    batches = [recs[:100], recs[50:200], recs[200:260][::-1], recs[260:]]
    fast = _run(NIC, batches)
    monkeypatch.setattr(detector.pipeline.source, "quiet_run", _none)
    assert _run(NIC, batches) == fast


def _engine_run(evs: list[Any], many: bool) -> tuple[Any, ...]:
    eng = Engine()
    alerts: list[Any] = []
    rejected = 0
    i = 0
    while i < len(evs):
        chunk = evs[i:i + 97]
        i += 97
        if many:
            alerts += eng.process_many(chunk)
        else:
            for ev in chunk:
                alerts += eng.process(ev)
        rejected += len(eng.rejected)
        eng.rejected.clear()
    alerts += eng.finish()
    return ([a.to_dict() for a in alerts], rejected, eng.stats(), eng.snapshot())


def _log_order(seed: int, kinds: tuple[str, ...]) -> list[Any]:
    """Decoded records of ``kinds`` in a log's order: by time, kinds interleaved."""
    keyed = []
    for k, topic in enumerate(kinds):
        rng = random.Random(100 * seed + k)
        if topic == STEP:
            timed = _Jobs(rng).timed(120)
        else:
            stream = _Stream(rng)
            timed = [(None, raw) for raw in stream.messages(topic, 120, new_units_at=30)]
            at = stream.ts
        for arrival, raw in timed:
            try:
                ev = decode(topic, raw)  # type: ignore[arg-type]
            except (InvalidMessage, TypeError):
                continue
            if arrival is not None:
                at = arrival
            elif ev.ts < at + 100.0:
                at = ev.ts  # (a far-ahead stray stays where it was sent)
            keyed.append((at, k, ev))
    keyed.sort(key=lambda x: (x[0], x[1]))
    return [ev for _, _, ev in keyed]


@pytest.mark.parametrize("seed", range(3))
def test_engine_process_many_same_as_process(seed: int) -> None:
    """Mixed kinds in log order (the in-process Engine's input), runs ending at releases."""
    evs = _log_order(seed, (THERMAL, NIC, ECC))
    fast = _engine_run(evs, True)
    slow = _engine_run(evs, False)
    assert fast == slow
    assert len(fast[0]) >= 3


@pytest.mark.parametrize("seed", range(6))
def test_engine_process_many_with_steps_same_as_process(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same with step messages among the samples; and both against the jobs' general
    path alone (their quiet step taking nothing)."""
    evs = _log_order(seed, (THERMAL, NIC, ECC, STEP))
    fast = _engine_run(evs, True)
    slow = _engine_run(evs, False)
    assert fast == slow
    monkeypatch.setattr(JobMonitor, "quiet", _never_quiet_step)
    assert _engine_run(evs, False) == fast
    assert len(fast[0]) >= 3
    assert fast[2]["step"] > 1000 and fast[2]["late_steps"] and fast[2]["duplicate_steps"]


def test_engine_process_many_uses_the_batch_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def spy(mon: Any, evs: list[Any], i: int, until: float = 0.0) -> int:
        j = quiet_run(mon, evs, i, until)
        calls.append(j - i)
        return j

    monkeypatch.setattr(detector.engine, "quiet_run", spy)
    s = _Stream(random.Random(5), trouble=False)
    evs = [decode(THERMAL, m) for m in s.messages(THERMAL, 40, 0)]  # type: ignore[arg-type]
    Engine().process_many(evs)
    assert sum(calls) > len(evs) * 0.8


def _never_quiet_step(self: Any, e: Any) -> bool:
    return False  # the job's add decides every message on its general path


@pytest.mark.parametrize("seed", range(6))
def test_step_batches_same_as_record_path(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step partition: the batch path against the record path, and both against the jobs'
    general path alone (``JobMonitor.quiet`` taking nothing), which decides every message by
    the full rules: a quiet step that takes a message the rules would act on shows here."""
    rng = random.Random(seed)
    batches = _batches(rng, _Jobs(rng).messages())
    fast = _run(STEP, batches)
    monkeypatch.setattr(detector.pipeline.source, "quiet_run", _none)
    slow = _run(STEP, batches)
    assert fast[0] == slow[0]  # findings, in order
    assert fast[1] == slow[1]  # dead letters
    assert fast[2:] == slow[2:]  # counts, offset, state after every batch
    monkeypatch.setattr(JobMonitor, "quiet", _never_quiet_step)
    assert _run(STEP, batches) == fast
    # The input did what it is for: findings, dead letters, and every case quiet steps aside for.
    signals = {orjson.loads(e.value)["finding"]["signal"] for e in fast[0]
               if b'"type":"finding"' in e.value}
    assert {"slow_rank", "checksum_mismatch", "job_layout"} <= signals
    stats = fast[3]
    assert fast[1] and stats["late_steps"] and stats["duplicate_steps"] and stats["job_restarts"]
    part = SourcePartition(STEP, 0, 4)
    for b in batches:
        part.process(b, 0.0, [], [])
    jobs = part.monitors._jobs.values()
    assert len(jobs) == 2 and any(n < 0 for j in jobs for n in j._done.values())  # expired


def test_quiet_run_takes_most_step_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch path is used for steps: of a healthy job's messages only a step's first and
    last, and those that meet an expiry check or a sweep, go the record path."""
    taken = []

    def spy(mon: Any, evs: list[Any], i: int, until: float = float("inf")) -> int:
        j = quiet_run(mon, evs, i, until)
        taken.append(j - i)
        return j

    monkeypatch.setattr(detector.pipeline.source, "quiet_run", spy)
    msgs = _Jobs(random.Random(2), trouble=False, ranks=32).messages(40)
    part = SourcePartition(STEP, 0, 4)
    emits: list[Any] = []
    for k in range(0, len(msgs), 500):
        part.process([(j, None, m, None) for j, m in enumerate(msgs[k:k + 500], k)], 0.0,
                     emits, [])
    assert sum(taken) > 0.75 * len(msgs)
    assert part.monitors.counts["step"] == len(msgs)


def test_engine_runs_stop_before_the_correlator_is_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run never moves the clock to the correlator's next due time (``until``): what is
    due there is released by the record that reaches it, before any later record's findings."""
    runs = []

    def spy(mon: Any, evs: list[Any], i: int, until: float = float("inf")) -> int:
        j = quiet_run(mon, evs, i, until)
        if j > i:
            runs.append(j - i)
            assert mon.clock < until
        return j

    monkeypatch.setattr(detector.engine, "quiet_run", spy)
    total = 0
    for seed in range(6):
        eng = Engine()
        evs = _log_order(seed, (THERMAL, NIC, ECC, STEP))
        total += len(evs)
        for k in range(0, len(evs), 500):
            eng.process_many(evs[k:k + 500])
    assert sum(runs) > 0.3 * total


@pytest.mark.parametrize("lead_s", [4.9995, 4.999, 4.5, 5.0, 5.0005])
def test_a_record_near_the_ahead_bound_ends_the_run_or_is_taken_alike(
        lead_s: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """quiet_run bounds a record's lead over the clock short of AHEAD_S (cpu17: one comparison
    a record, the bound set again each sweep deadline): a sample just under or over AHEAD_S
    ahead, and the healthy ones after it, give what the record path gives."""
    s = _Stream(random.Random(11), trouble=False)
    msgs = s.messages(THERMAL, 40, new_units_at=0)
    at = len(s.gpus) * 20
    before = orjson.loads(msgs[at - 1])  # type: ignore[arg-type]
    shifted = orjson.loads(msgs[at])  # type: ignore[arg-type]
    shifted["ts"] = before["ts"] + lead_s
    msgs[at] = orjson.dumps(shifted)
    batches = [[(i + j, b"k", m, None) for j, m in enumerate(msgs[i:i + 200])]
               for i in range(0, len(msgs), 200)]
    fast = _run(THERMAL, batches)
    monkeypatch.setattr(detector.pipeline.source, "quiet_run", _none)
    slow = _run(THERMAL, batches)
    assert fast == slow


def test_a_per_sample_hook_is_fed_alike_by_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tracker put in the one hook list (detector.sample_hooks) sees every record of its
    kind, in order and at the same time, whichever path took it -- and one that may make a
    finding (its quiet says when) ends a batch run there, so its findings come alike too."""
    from detector import sample_hooks
    from detector.alerts import Scope
    from detector.events import EccSample, NicSample, StepSample, ThermalSample
    from detector.findings import Finding

    fed: list[tuple[Any, ...]] = []

    def note(mon: Any, e: Any, ts: float, findings: list[Any]) -> None:
        fed.append((type(e).__name__, e.node, ts))
        if type(e) in (NicSample, StepSample) and int(ts) % 7 == 0:  # a finding now and then
            findings.append(Finding(ts, ts, "hook", "slow_node", "unknown",
                                    Scope.of_node(e.node), True, False, 0.0,
                                    {}))

    def quiet(mon: Any, e: Any) -> bool:
        return type(e) not in (NicSample, StepSample) or int(e.ts) % 7 != 0

    for t in (StepSample, NicSample, ThermalSample, EccSample):
        monkeypatch.setitem(sample_hooks.NOTES, t, (*sample_hooks.NOTES[t], note))
        monkeypatch.setitem(sample_hooks.ASKS, t, (*sample_hooks.ASKS[t], quiet))
    evs = _log_order(1, (THERMAL, NIC, ECC, STEP))
    fast = _engine_run(evs, True)
    by_batch, fed[:] = list(fed), []
    slow = _engine_run(evs, False)
    assert fast == slow
    assert fed == by_batch
    assert {k for k, _, _ in fed} == {"StepSample", "NicSample", "ThermalSample", "EccSample"}
    assert len(fed) > len(evs) * 0.9
    assert fast[2]["findings"] > sum(1 for k, _, ts in fed if k in (
        "NicSample", "StepSample") and int(ts) % 7 == 0) > 0
