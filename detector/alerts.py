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
from dataclasses import dataclass, field
from typing import Any, NamedTuple

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
class Alert:
    """One message of the alert envelope, for ``alerts.isolation`` or ``alerts.escalation``."""

    topic: str
    dedup_key: str
    status: str
    kind: str
    cause: str
    scope: Scope
    action: Action
    onset_ts: float
    detected_ts: float
    confidence: float
    evidence: dict[str, Any] = field(default_factory=dict)
    job: str | None = None
    tenant: str | None = None
    cluster: str | None = None
    summary: str = ""

    @property
    def detection_latency_s(self) -> float:
        return round(self.detected_ts - self.onset_ts, 6)

    @property
    def id(self) -> str:
        """Unique per message, yet the same when a replay re-emits the same message."""
        h = hashlib.blake2b(digest_size=8)
        h.update(f"{self.dedup_key}|{self.status}|{self.detected_ts:.6f}".encode())
        return h.hexdigest()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id, "dedup_key": self.dedup_key, "status": self.status,
            "kind": self.kind, "cause": self.cause, "scope": self.scope.to_dict(),
            "action": self.action.to_dict(), "onset_ts": round(self.onset_ts, 6),
            "detected_ts": round(self.detected_ts, 6),
            "detection_latency_s": self.detection_latency_s,
            "confidence": round(self.confidence, 3), "evidence": self.evidence,
            "job": self.job, "tenant": self.tenant,
        }
        if self.cluster is not None:
            d["cluster"] = self.cluster
        if self.summary:
            d["summary"] = self.summary
        return d

    def record(self) -> dict[str, Any]:
        """The incident-log record shape: ``{"topic": ..., "value": envelope}``."""
        return {"topic": self.topic, "value": self.to_dict()}


@dataclass(frozen=True, slots=True)
class FiredAlert:
    """An alert read back from a file or a topic: what scoring and parity tests compare."""

    topic: str
    dedup_key: str
    status: str
    kind: str
    cause: str
    scope: Scope
    onset_ts: float
    detected_ts: float
    confidence: float
    raw: dict[str, Any]

    @classmethod
    def from_record(cls, topic: str, v: dict[str, Any]) -> FiredAlert:
        try:
            return cls(topic, str(v["dedup_key"]), str(v["status"]), str(v["kind"]),
                       str(v["cause"]), Scope.from_dict(v["scope"]), float(v["onset_ts"]),
                       float(v["detected_ts"]), float(v.get("confidence", 0.0)), v)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{topic}: not an alert envelope: {exc}") from None


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
            lab = cls(str(v["fault_id"]), str(v["kind"]), str(v["cause"]),
                      Scope.from_dict(v["scope"]), float(v["start_ts"]), float(v["end_ts"]),
                      bool(v["attributable"]))
        except KeyError as exc:
            raise ValueError(f"label {v.get('fault_id', '?')}: missing {exc}") from None
        if lab.kind not in KINDS or lab.cause not in CAUSES:
            raise ValueError(f"label {lab.fault_id}: unknown kind/cause {lab.kind}/{lab.cause}")
        return lab

    def to_dict(self) -> dict[str, Any]:
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope.to_dict(), "start_ts": self.start_ts, "end_ts": self.end_ts,
                "attributable": self.attributable}
