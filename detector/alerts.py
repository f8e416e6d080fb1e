"""The output contract (DESIGN.md, "Output contract"): scopes, the alert envelope, labels.

An :class:`Alert` is what faultline says about one problem at one moment; the
same problem seen again keeps its ``dedup_key`` so a pager never pages twice.

>>> s = Scope.of_gpu("node-007", 3)
>>> s.key, s.to_dict()
('gpu:node-007/3', {'level': 'gpu', 'node': 'node-007', 'gpu': 3})
>>> Scope.from_dict({"level": "nic", "node": "node-007", "nic": "mlx5_3"}).key
'nic:node-007/mlx5_3'
>>> Scope.of_gpu("node-007", 3).contains(Scope.of_node("node-007"))
False
>>> Scope.of_node("node-007").contains(Scope.of_gpu("node-007", 3))
True
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from detector.events import MAX_NAME_CHARS

ISOLATION = "alerts.isolation"
ESCALATION = "alerts.escalation"
ALERT_TOPICS = (ISOLATION, ESCALATION)

KINDS = ("slow_node", "hardware", "network", "sdc", "unattributed")
CAUSES = ("thermal", "power", "gpu_memory", "gpu_hardware", "nvlink", "nic", "switch",
          "software", "unknown")
LEVELS = ("gpu", "node", "nic", "switch", "domain", "replica", "job")


class Scope(NamedTuple):
    """An isolation unit: the smallest part of the cluster that contains a fault."""

    level: str
    node: str | None = None
    gpu: int | None = None
    nic: str | None = None
    port: int | None = None
    switch: str | None = None
    domain: str | None = None
    job: str | None = None
    dp_rank: int | None = None

    @classmethod
    def of_gpu(cls, node: str, gpu: int) -> Scope:
        return cls("gpu", node=node, gpu=gpu)

    @classmethod
    def of_node(cls, node: str) -> Scope:
        return cls("node", node=node)

    @classmethod
    def of_nic(cls, node: str, nic: str, port: int | None = None) -> Scope:
        return cls("nic", node=node, nic=nic, port=port)

    @classmethod
    def of_switch(cls, switch: str) -> Scope:
        return cls("switch", switch=switch)

    @classmethod
    def of_domain(cls, domain: str) -> Scope:
        return cls("domain", domain=domain)

    @classmethod
    def of_replica(cls, job: str, dp_rank: int) -> Scope:
        return cls("replica", job=job, dp_rank=dp_rank)

    @classmethod
    def of_job(cls, job: str) -> Scope:
        return cls("job", job=job)

    @property
    def key(self) -> str:
        """A stable, readable identity used in dedup keys and maps."""
        lv = self.level
        if lv == "gpu":
            return f"gpu:{self.node}/{self.gpu}"
        if lv == "node":
            return f"node:{self.node}"
        if lv == "nic":
            port = f":{self.port}" if self.port is not None else ""
            return f"nic:{self.node}/{self.nic}{port}"
        if lv == "switch":
            return f"switch:{self.switch}"
        if lv == "domain":
            return f"domain:{self.domain}"
        if lv == "replica":
            return f"replica:{self.job}/{self.dp_rank}"
        return f"job:{self.job}"

    def to_dict(self) -> dict[str, Any]:
        lv = self.level
        if lv == "gpu":
            return {"level": lv, "node": self.node, "gpu": self.gpu}
        if lv == "node":
            return {"level": lv, "node": self.node}
        if lv == "nic":
            d: dict[str, Any] = {"level": lv, "node": self.node, "nic": self.nic}
            if self.port is not None:
                d["port"] = self.port
            return d
        if lv == "switch":
            return {"level": lv, "switch": self.switch}
        if lv == "domain":
            return {"level": lv, "domain": self.domain}
        if lv == "replica":
            return {"level": lv, "job": self.job, "dp_rank": self.dp_rank}
        return {"level": lv, "job": self.job}

    @classmethod
    def from_dict(cls, d: Any) -> Scope:
        """Parse a scope object; raises ValueError naming the missing or wrong id."""
        if not isinstance(d, dict):
            raise ValueError(f"scope must be an object, got {type(d).__name__}")
        lv = d.get("level")
        need: dict[str, tuple[str, ...]] = {
            "gpu": ("node", "gpu"), "node": ("node",), "nic": ("node", "nic"),
            "switch": ("switch",), "domain": ("domain",), "replica": ("job", "dp_rank"),
            "job": ("job",),
        }
        if lv not in need:
            raise ValueError(f"scope level must be one of {list(need)}, got {lv!r}")
        for k in need[lv]:
            if d.get(k) is None:
                raise ValueError(f"scope level {lv!r} needs {k!r}")
        for k in ("gpu", "port", "dp_rank"):
            if d.get(k) is not None and type(d[k]) is not int:
                raise ValueError(f"scope {k!r} must be an integer, got {d[k]!r}")
        for k in ("node", "nic", "switch", "domain", "job"):  # names (DESIGN.md, "Bounds")
            v = d.get(k)
            if v is not None and (type(v) is not str or len(v) > MAX_NAME_CHARS
                                  or not v.isprintable()):
                raise ValueError(f"scope {k!r} must be a printable name of at most "
                                 f"{MAX_NAME_CHARS} characters, got {str(v)[:40]!r}")
        return cls(lv, node=d.get("node"), gpu=d.get("gpu"), nic=d.get("nic"),
                   port=d.get("port") if lv == "nic" else None, switch=d.get("switch"),
                   domain=d.get("domain"), job=d.get("job"), dp_rank=d.get("dp_rank"))

    def contains(self, other: Scope) -> bool:
        """True when ``other`` lies inside this unit (node ⊃ its GPUs and NICs)."""
        if self.key == other.key:
            return True
        if self.level == "node":
            return other.level in ("gpu", "nic") and other.node == self.node
        return False


@dataclass(frozen=True, slots=True)
class Action:
    """What to do about a problem; never carried out by faultline itself."""

    name: str
    detail: str
    rollback: str
    requires_approval: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "detail": self.detail,
                "requires_approval": self.requires_approval, "rollback": self.rollback}


@dataclass(frozen=True, slots=True)
class Granularity:
    """What isolating an alert's scope takes out of the work (DESIGN.md, output contract).

    ``share_of_job`` is the share of the job's data-parallel replicas taken out: with
    replica-level isolation the job goes on with the rest.  A count is None where unknown.
    """

    gpus: int | None = None
    ranks: int | None = None
    dp_replicas: int | None = None
    share_of_job: float | None = None
    jobs: int | None = None  # training jobs with work on the scope (a shared part: several)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"gpus": self.gpus, "ranks": self.ranks,
                             "dp_replicas": self.dp_replicas,
                             "share_of_job": None if self.share_of_job is None
                             else round(self.share_of_job, 4)}
        if self.jobs is not None:
            d["jobs"] = self.jobs
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Granularity:
        if not isinstance(d, dict):
            raise ValueError(f"granularity must be an object, got {type(d).__name__}")
        ints = {k: d.get(k) for k in ("gpus", "ranks", "dp_replicas", "jobs")}
        for k, v in ints.items():
            if v is not None and type(v) is not int:
                raise ValueError(f"granularity {k!r} must be an integer, got {v!r}")
        share = d.get("share_of_job")
        if share is not None and not isinstance(share, int | float):
            raise ValueError(f"granularity 'share_of_job' must be a number, got {share!r}")
        return cls(ints["gpus"], ints["ranks"], ints["dp_replicas"],
                   None if share is None else float(share), ints["jobs"])

    def line(self) -> str:
        """``8 GPUs, 8 ranks, 1 DP replica (3.1 % of job-1)`` — the known parts."""
        parts = []
        for n, what in ((self.gpus, "GPU"), (self.ranks, "rank"), (self.dp_replicas,
                                                                     "DP replica")):
            if n is not None:
                parts.append(f"{n} {what}{'' if n == 1 else 's'}")
        text = ", ".join(parts) or "unknown"
        if self.share_of_job is not None:
            text += f" ({100 * self.share_of_job:.1f} % of the job)"
        if self.jobs is not None and self.jobs > 1:
            text += f" across {self.jobs} jobs"
        return text


@dataclass(frozen=True, slots=True)
class Recovery:
    """How long until the work runs again: estimated at firing, measured at resolution."""

    estimate_s: float | None
    basis: str
    measured_s: float | None = None  # a resolved message: onset to resolution

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"estimate_s": None if self.estimate_s is None
                             else round(self.estimate_s, 1), "basis": self.basis}
        if self.measured_s is not None:
            d["measured_s"] = round(self.measured_s, 3)
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Recovery:
        if not isinstance(d, dict):
            raise ValueError(f"recovery must be an object, got {type(d).__name__}")
        est, measured = d.get("estimate_s"), d.get("measured_s")
        for k, v in (("estimate_s", est), ("measured_s", measured)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                raise ValueError(f"recovery {k!r} must be a number, got {v!r}")
        return cls(None if est is None else float(est), str(d.get("basis") or ""),
                   None if measured is None else float(measured))

    def line(self) -> str:
        head = "unknown" if self.estimate_s is None else f"~{_duration(self.estimate_s)}"
        if self.measured_s is not None:
            head = f"{_duration(self.measured_s)} measured (estimated {head})"
        return f"{head}: {self.basis}" if self.basis else head


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


# The envelope's fields, in the order written; anything else in a record is kept as is.
_ENVELOPE_FIELDS = frozenset((
    "id", "dedup_key", "status", "kind", "cause", "scope", "action", "onset_ts",
    "detected_ts", "detection_latency_s", "granularity", "recovery", "confidence",
    "evidence", "job", "tenant", "cluster", "summary"))


@dataclass(frozen=True, slots=True)
class Alert:
    """The alert envelope, one type for everything that makes or reads alerts.

    The engine makes them; the pager, scoring and reports read them back from records
    with :meth:`from_record`, so a renamed field fails every reader's tests, not none.
    """

    topic: str
    dedup_key: str
    status: str
    kind: str
    cause: str
    scope: Scope
    action: Action | None
    onset_ts: float
    detected_ts: float
    confidence: float
    evidence: dict[str, Any] = field(default_factory=dict)
    job: str | None = None
    tenant: str | None = None
    cluster: str | None = None
    summary: str = ""
    granularity: Granularity | None = None
    recovery: Recovery | None = None
    message_id: str | None = None        # the ``id`` a record carried, kept as read
    unknown: dict[str, Any] = field(default_factory=dict)  # newer fields, passed on untouched

    @property
    def detection_latency_s(self) -> float:
        return round(self.detected_ts - self.onset_ts, 6)

    @property
    def id(self) -> str:
        """Unique per message, yet the same when a replay re-emits the same message."""
        if self.message_id is not None:
            return self.message_id
        h = hashlib.blake2b(digest_size=8)
        h.update(f"{self.dedup_key}|{self.status}|{self.detected_ts:.6f}".encode())
        return h.hexdigest()

    @property
    def next_diagnostic(self) -> str | None:
        diag = self.evidence.get("next_diagnostic") if isinstance(self.evidence, dict) else None
        return str(diag) if diag else None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id, "dedup_key": self.dedup_key, "status": self.status,
            "kind": self.kind, "cause": self.cause, "scope": self.scope.to_dict(),
            "action": self.action.to_dict() if self.action is not None else None,
            "onset_ts": round(self.onset_ts, 6), "detected_ts": round(self.detected_ts, 6),
            "detection_latency_s": self.detection_latency_s,
        }
        if self.granularity is not None:
            d["granularity"] = self.granularity.to_dict()
        if self.recovery is not None:
            d["recovery"] = self.recovery.to_dict()
        d.update({"confidence": round(self.confidence, 3), "evidence": self.evidence,
                  "job": self.job, "tenant": self.tenant})
        if self.cluster is not None:
            d["cluster"] = self.cluster
        if self.summary:
            d["summary"] = self.summary
        if self.unknown:
            d.update({k: v for k, v in self.unknown.items() if k not in d})
        return d

    @property
    def raw(self) -> dict[str, Any]:
        """The envelope as a JSON-able dict (what :meth:`to_dict` gives)."""
        return self.to_dict()

    def record(self) -> dict[str, Any]:
        """The incident-log record shape: ``{"topic": ..., "value": envelope}``."""
        return {"topic": self.topic, "value": self.to_dict()}

    @classmethod
    def from_record(cls, topic: str, v: Any) -> Alert:
        """Read an envelope back (from a file or a topic); ValueError names what is wrong."""
        try:
            if not isinstance(v, dict):
                raise TypeError(f"an envelope is an object, got {type(v).__name__}")
            act = v.get("action")
            if act is not None and not isinstance(act, dict):
                raise TypeError(f"action must be an object, got {type(act).__name__}")
            action = None if act is None else Action(
                str(act.get("name") or ""), str(act.get("detail") or ""),
                str(act.get("rollback") or ""), bool(act.get("requires_approval", True)))
            evidence = v.get("evidence")
            opt = {k: (None if v.get(k) is None else str(v[k]))
                   for k in ("job", "tenant", "cluster")}
            gran, rec = v.get("granularity"), v.get("recovery")
            msg_id = v.get("id")
            if v.get("status") not in ("firing", "resolved"):
                raise ValueError(f"status must be firing or resolved, got {v.get('status')!r}")
            return cls(
                topic, _text(v, "dedup_key"), v["status"], _text(v, "kind"), _text(v, "cause"),
                Scope.from_dict(v["scope"]), action, _time(v, "onset_ts"),
                _time(v, "detected_ts"), float(v.get("confidence") or 0.0),
                evidence if isinstance(evidence, dict) else {}, opt["job"], opt["tenant"],
                opt["cluster"], str(v.get("summary") or ""),
                None if gran is None else Granularity.from_dict(gran),
                None if rec is None else Recovery.from_dict(rec),
                None if msg_id is None else str(msg_id),
                {k: x for k, x in v.items() if k not in _ENVELOPE_FIELDS})
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{topic}: not an alert envelope: {exc}") from None


def _text(v: dict[str, Any], k: str) -> str:
    """A required string of an envelope (a null is not the string 'None')."""
    x = v[k]
    if type(x) is not str:
        raise TypeError(f"{k} must be a string, got {type(x).__name__}")
    return x


def _time(v: dict[str, Any], k: str) -> float:
    """A required event time of an envelope: a finite number (not a string, not NaN)."""
    x = v[k]
    if type(x) not in (int, float) or not math.isfinite(x):
        raise ValueError(f"{k} must be a finite number, got {str(x)[:40]!r}")
    return float(x)


# What scoring, the pager and the parity tests read: the same envelope type.
FiredAlert = Alert


class Label(NamedTuple):
    """Ground truth for one injected fault, carried in incident logs under topic ``labels``."""

    fault_id: str
    kind: str
    cause: str
    scope: Scope
    start_ts: float
    end_ts: float
    attributable: bool

    @classmethod
    def from_dict(cls, v: Any) -> Label:
        if not isinstance(v, dict):
            raise ValueError("label must be an object")
        try:
            if type(v["attributable"]) is not bool:  # bool("false") is True
                raise TypeError(f"attributable must be true or false, got "
                                f"{str(v['attributable'])[:40]!r}")
            lab = cls(_text(v, "fault_id"), _text(v, "kind"), _text(v, "cause"),
                      Scope.from_dict(v["scope"]), _time(v, "start_ts"), _time(v, "end_ts"),
                      v["attributable"])
        except KeyError as exc:
            raise ValueError(f"label {str(v.get('fault_id', '?'))[:40]}: missing {exc}") from None
        except (TypeError, ValueError, OverflowError) as exc:  # a bad label, not a crash
            raise ValueError(f"label {str(v.get('fault_id', '?'))[:40]}: {exc}") from None
        if lab.kind not in KINDS or lab.cause not in CAUSES:
            raise ValueError(f"label {lab.fault_id}: unknown kind/cause {lab.kind}/{lab.cause}")
        return lab

    def to_dict(self) -> dict[str, Any]:
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope.to_dict(), "start_ts": self.start_ts, "end_ts": self.end_ts,
                "attributable": self.attributable}
