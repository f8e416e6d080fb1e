"""The lead's round-34 pins: what the end-of-round review found and the round left open.

revB34 F2 (moe34's hooks, ``JobMonitor._place_slow`` / ``_alike_without``): a real host fault
slowing every rank of a node that holds a moving MoE expert's two GPUs -- those two read host +
expert, their mates only the host's share, so the mates fall under ``_place_slow``'s bar, the
expert's GPUs are taken back as their place's and a rank found first is told alone: a healthy
GPU paged 3 s before its node (2 of 12 runs; 215f711 paged the node alone).
"""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.testing import feed
from tests.moejob import MOVES, moe_job
from tests.test_moe34 import NODE5


def _firing(seed: int, x: float) -> list[str]:
    slow = tuple((170, 10**6, r, x) for r in NODE5)  # x: extra log ratio of compute
    return [a.scope.key for a in feed(Engine(), moe_job(seed=seed, hot=MOVES, slow=slow))
            if a.status == "firing"]


@pytest.mark.parametrize("seed", [3411, 3414])
def test_a_host_fault_beside_the_moving_expert_pages_its_node(seed: int) -> None:
    """Every rank of node-005 5 % slower from step 170 beside the moving expert: the node."""
    assert set(_firing(seed, 0.05)) == {"node:node-005"}


@pytest.mark.parametrize(("seed", "x"), [(3410, 0.05), (3413, 0.06)])
def test_a_host_fault_beside_the_moving_expert_pages_no_gpu(seed: int, x: float) -> None:
    assert set(_firing(seed, x)) == {"node:node-005"}


def _finding_message(value: object) -> bytes:
    import orjson
    return orjson.dumps({"type": "finding", "source": "w", "id": [1, 2], "tag": 100.0,
                         "finding": {"ts": 100.0, "onset_ts": 90.0, "signal": "slow_rank",
                                     "kind": "slow_node", "cause": "unknown",
                                     "scope": {"level": "gpu", "node": "n1", "gpu": 0},
                                     "active": True, "verdict": False, "severity": 0.5,
                                     "evidence": {"zz": value, "rec": {"a": value}}}})


@pytest.mark.parametrize("big", [2**63, -(2**63) - 1, 10**30])
def test_an_integer_no_snapshot_can_hold_is_refused_in_a_finding(big: int) -> None:
    """revA34 F4: a findings message whose evidence holds 10**30 was taken, and the next
    snapshot of the correlator holding it failed (msgpack holds 64 bits): refused at decode."""
    from detector.findings import decode_message
    raw = _finding_message(0).replace(b'"zz":0', b'"zz":%d' % big)
    with pytest.raises(ValueError):
        decode_message(raw, wall_s=1000.0)


def test_a_64_bit_integer_in_a_finding_is_taken_and_snapshotted() -> None:
    from detector.correlate import Correlator
    from detector.findings import decode_message, finding_of
    from detector.statecodec import encode_state
    from detector.thresholds import Thresholds
    m = decode_message(_finding_message(2**63 - 1), wall_s=1000.0)
    c = Correlator(Thresholds())
    c.on_finding(finding_of(m.finding), [])
    assert encode_state(c)
