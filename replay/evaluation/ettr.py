"""What detection is worth: an effective-training-time ratio (ETTR) estimate for a corpus.

ETTR is the share of wall time a training job spends making progress. Faults
arrive at Llama 3's rate (419 unexpected interruptions in 54 days on 16,384
GPUs; arXiv 2407.21783) scaled to the job's size; each costs time that
depends on its class and on whether — and how fast — a detector caught it.
Each fault of the corpus is one sample of its kind's cost, and kinds are
weighted by the Llama 3 root-cause mix (:data:`replay.sim.plan.LLAMA3_WEIGHTS`),
so the figure does not depend on how many faults of each kind the corpus
holds. The model is deliberately simple and printed with every result
(:meth:`EttrModel.describe`):

- **fail-stop** (``hbm_dbe``, ``row_remap_failure``): the job crashes either
  way and loses half a checkpoint interval plus a restart. Caught after
  ``L`` s, the restart waits for the detection and the isolation:
  ``C/2 + L + I + R``. Missed, nobody knows which unit failed, so the job
  may be rescheduled onto it and crash once more (probability ``p``):
  ``(C/2 + R) * (1 + p)``.
- **fail-slow** (``thermal``, ``power``, ``silent_slow``, ``nvlink``,
  ``nic``, ``switch``): the job runs ``d`` slower (``d`` measured on the log:
  step time during the fault over the minute before). Caught:
  ``d * (L + I) + R`` (a planned restart without the unit, after saving a
  checkpoint). Missed: ``d * N + R``, someone notices after ``N``.
- **SDC** (``sdc_checksum``, ``sdc_gradnorm``): every step after the
  corruption is suspect and the job rolls back to the checkpoint before it.
  Caught: ``L + C/2 + I + R``; missed: noticed after ``N`` (a loss spike,
  a divergence): ``N + C/2 + R``.
- **false isolations**: each drains a healthy unit and costs ``I + R`` (a
  restart without it). The corpus' benign events are time-compressed, so a
  rate per GPU-day would not scale to a large job; instead false isolations
  are counted per fault of the corpus (``f``), i.e. benign trouble is
  assumed to come at the corpus' ratio to faults.

``ETTR = 1 - rate * (E[cost per fault] + f * (I + R))``, with
``rate = 419 / (54 d * 16,384 GPUs) * job GPUs``.

>>> m = EttrModel()
>>> fast = [FaultOutcome("silent_slow", True, 10.0, 0.1),
...         FaultOutcome("hbm_dbe", True, 0.0, 0.0)]
>>> slow = [FaultOutcome("silent_slow", True, 600.0, 0.1),
...         FaultOutcome("hbm_dbe", False, None, 0.0)]
>>> estimate(fast, m).ettr > estimate(slow, m).ettr
True
>>> estimate([], m).ettr
1.0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, NamedTuple

from replay.sim.plan import LLAMA3_WEIGHTS

FAIL_STOP = frozenset({"hbm_dbe", "row_remap_failure"})
SDC = frozenset({"sdc_checksum", "sdc_gradnorm"})
# everything else is fail-slow


class FaultOutcome(NamedTuple):
    """One fault of the corpus as one detector saw it."""

    kind: str  # the simulator's fault kind
    caught: bool
    latency_s: float | None
    slowdown: float  # job throughput lost while the fault lasts (0.05 = 5 % slower)


@dataclass(frozen=True)
class EttrModel:
    """Parameters of the ETTR estimate (seconds unless named otherwise)."""

    checkpoint_interval_s: float = 1800.0
    restart_s: float = 600.0
    isolation_s: float = 300.0
    notice_s: float = 3600.0  # until a person notices a fault no detector caught
    repeat_p: float = 0.5  # a missed fail-stop unit gets the restarted job and fails again
    job_gpus: int = 16384
    interruptions: float = 419.0  # Llama 3: unexpected interruptions ...
    days: float = 54.0  # ... in this many days ...
    fleet_gpus: int = 16384  # ... on this many GPUs
    count_false_isolations: bool = True

    @property
    def fault_rate_per_s(self) -> float:
        return self.interruptions / (self.days * 86400.0 * self.fleet_gpus) * self.job_gpus

    def describe(self) -> str:
        c, r, i, n = (self.checkpoint_interval_s / 60, self.restart_s / 60,
                      self.isolation_s / 60, self.notice_s / 60)
        per_day = self.fault_rate_per_s * 86400
        return "\n".join([
            f"ETTR = 1 - rate * (E[cost per fault] + f * (I + R)); rate = "
            f"{self.interruptions:g} / ({self.days:g} d * {self.fleet_gpus:,} GPUs) * "
            f"{self.job_gpus:,} GPUs = {per_day:.2f} faults/day",
            f"  C = checkpoint interval {c:g} min, R = restart {r:g} min, I = isolation "
            f"{i:g} min, N = time to notice a missed fault {n:g} min, p = {self.repeat_p:g}, "
            "L = detection latency, d = measured job slowdown",
            "  fail-stop (hbm_dbe, row_remap_failure): caught C/2 + L + I + R; "
            "missed (C/2 + R)(1 + p)",
            "  fail-slow (thermal, power, silent_slow, nvlink, nic, switch): caught "
            "d(L + I) + R; missed d*N + R",
            "  SDC (sdc_checksum, sdc_gradnorm): caught L + C/2 + I + R; missed N + C/2 + R",
            "  E[cost] weights kinds by the Llama 3 root-cause mix; f = false isolations per "
            "fault in the corpus" + ("" if self.count_false_isolations else " (not counted here)"),
        ])

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


def fault_cost_s(o: FaultOutcome, m: EttrModel) -> float:
    """Seconds of the job's progress one fault costs under the model."""
    half = m.checkpoint_interval_s / 2
    r, i = m.restart_s, m.isolation_s
    lat = max(0.0, o.latency_s or 0.0)
    d = max(0.0, o.slowdown)
    if o.kind in FAIL_STOP:
        return half + lat + i + r if o.caught else (half + r) * (1 + m.repeat_p)
    if o.kind in SDC:
        return lat + half + i + r if o.caught else m.notice_s + half + r
    return d * (lat + i) + r if o.caught else d * m.notice_s + r


@dataclass(frozen=True)
class EttrResult:
    ettr: float
    ettr_faults_only: float
    expected_cost_s: float  # per fault, Llama 3 mix
    cost_by_kind_s: dict[str, float]
    faults_per_day: float
    false_isolations_per_fault: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate(outcomes: Sequence[FaultOutcome], m: EttrModel,
             false_isolations: int = 0) -> EttrResult:
    """ETTR under the model for one detector's outcomes (and false isolations) on a corpus."""
    by_kind: dict[str, list[float]] = {}
    for o in outcomes:
        by_kind.setdefault(o.kind, []).append(fault_cost_s(o, m))
    mean = {k: sum(v) / len(v) for k, v in by_kind.items()}
    weights = {k: LLAMA3_WEIGHTS.get(k, 0.0) for k in mean}
    total_w = sum(weights.values())
    if total_w > 0:
        expected = sum(mean[k] * weights[k] for k in mean) / total_w
    else:  # kinds outside the Llama 3 mix only: weigh them equally
        expected = sum(mean.values()) / len(mean) if mean else 0.0
    rate = m.fault_rate_per_s if outcomes else 0.0
    per_fault = false_isolations / len(outcomes) if outcomes else 0.0
    lost = rate * expected
    lost_fp = (rate * per_fault * (m.isolation_s + m.restart_s)
               if m.count_false_isolations else 0.0)
    return EttrResult(ettr=round(max(0.0, 1.0 - lost - lost_fp), 6),
                      ettr_faults_only=round(max(0.0, 1.0 - lost), 6),
                      expected_cost_s=round(expected, 1),
                      cost_by_kind_s={k: round(v, 1) for k, v in sorted(mean.items())},
                      faults_per_day=round(rate * 86400, 3),
                      false_isolations_per_fault=round(per_fault, 4))
