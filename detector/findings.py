"""Findings: what a per-device or per-job monitor tells the correlator.

A monitor watches one stream (a job's steps, a GPU's ECC/XID or thermal
samples, a node's NIC ports) and reports *changes of state* — a signal becoming
active, getting worse, or clearing — never one message per event.  The
correlator turns findings into problems and alerts; keeping findings sparse is
what lets it sit on a single partition in the Kafka deployment.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from detector.alerts import Scope


class Finding(NamedTuple):
    """One change of state of one signal on one unit."""

    ts: float            # event time of the evidence that caused this change
    onset_ts: float      # event time of the first sample of the anomalous run
    signal: str          # what was seen: "xid", "dbe", "throttle", "slow_rank", "link_down", ...
    kind: str            # the alert kind this points to: hardware, network, slow_node, sdc
    cause: str           # the cause it names (``unknown`` when it names none)
    scope: Scope         # the unit it is about (gpu, nic, node, job ...)
    active: bool         # False: the signal cleared
    verdict: bool        # True: enough on its own to raise a problem; False: evidence only
    severity: float      # 0..1, how sure / how bad; feeds the alert's confidence
    evidence: dict[str, Any]
    job: str | None = None
    tenant: str | None = None
    cluster: str | None = None
    rank: int | None = None
    dp_rank: int | None = None
    escalate: bool = False  # needs a human even though the cause is known

    @property
    def key(self) -> str:
        """Identity of the signal on its unit: a later finding with the same key replaces it."""
        return f"{self.signal}@{self.scope.key}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, for the findings topic between the monitors and the correlator."""
        d = self._asdict()
        d["scope"] = self.scope.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        """Inverse of :meth:`to_dict`; raises ValueError on a malformed finding."""
        try:
            return cls(**{**d, "scope": Scope.from_dict(d["scope"])})
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a finding: {exc}") from None
