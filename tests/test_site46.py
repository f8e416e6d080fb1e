"""site46 (round 46, issue 10): site power caps let go in turn or answering demand response.

revA45 F7 (tests/test_revA45.py): a site's cap let go GPU by GPU paged the last GPU let go on
a node ~100 s after it was back at pace -- its run, told alike with its node's mates, told
again "grown" against them once they were let go first (detector.steps.slow._grown_runs).
blind21 tune facility-s3's false positive (tests/test_blind21_cases.py D2): a demand-response
cap's first node, one rank told slow alone on the cap's first step, isolated power at its GPU
before its seven mates were found slow alike (detector.correlate.power._hold_for_mates).
"""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.testing import feed
from tests.test_revA45 import _firing, _released


@pytest.mark.parametrize(("seed", "order"), [(1, "up"), (2, "up"), (2, "down")])
def test_a_site_cap_let_go_gpu_by_gpu_pages_nobody_at_other_seeds(seed: int, order: str) -> None:
    # at the start (97d3ae5): seed 1 up gpu:node-002/5 isolated power at 459 s and node-002/4
    # escalated at 705 s; seed 2 up node-002/7 and node-003/6 escalated at 701-704 s; seed 2
    # down node-002/0 at 701 s
    assert _firing(feed(Engine(), _released(seed=seed, spread_s=200.0, order=order))) == []
