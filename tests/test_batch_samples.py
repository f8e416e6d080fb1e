"""The batch path of samples (detector.quiet) against the record path, on random batches.

A fetched batch of thermal, NIC or ECC samples goes through ``quiet_run`` where
each record provably makes no finding, the rest through ``Monitors.process``.
These run the same random input both ways -- the record path alone by
replacing ``quiet_run`` with one that takes nothing -- and compare everything a
user or a snapshot sees.  Both paths take a unit's healthy step (its ``quiet``),
so that step is compared with the unit's general path alone, the full rules.  Each
comparison covers: the findings messages in order, the dead letters, the
counts and the state bytes.  The input mixes healthy runs with every reason the
batch path must step aside: faults that start and stop, counter resets and
missing values, late and duplicate samples, new units, far-ahead timestamps and
bad messages in the middle of a batch.
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
from detector.events import ECC, NIC, THERMAL, InvalidMessage
from detector.gpu_health import GpuHealth
from detector.network import NodeNics
from detector.pipeline.source import SourcePartition
from detector.quiet import quiet_run
from detector.statecodec import UNSIGNED
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
    assert quiet_run(part.monitors, evs, 0) == len(evs)


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


@pytest.mark.parametrize("seed", range(3))
def test_engine_process_many_same_as_process(seed: int) -> None:
    """Mixed kinds in log order (the in-process Engine's input), runs ending at releases."""
    keyed = []
    for k, topic in enumerate((THERMAL, NIC, ECC)):
        stream = _Stream(random.Random(100 * seed + k))
        at = stream.ts
        for raw in stream.messages(topic, 120, new_units_at=30):
            try:
                ev = decode(topic, raw)  # type: ignore[arg-type]
            except (InvalidMessage, TypeError):
                continue
            if ev.ts < at + 100.0:
                at = ev.ts  # (a far-ahead stray stays where it was sent)
            keyed.append((at, k, ev))
    keyed.sort(key=lambda x: (x[0], x[1]))  # the log's order: by time, kinds interleaved
    evs = [ev for _, _, ev in keyed]
    fast = _engine_run(evs, True)
    slow = _engine_run(evs, False)
    assert fast == slow
    assert len(fast[0]) >= 3


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
