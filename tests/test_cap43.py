"""cap43 (round 43, issue 10): one cap rule; a site's cap in waves, and its end.

The cap rule (detector.correlate.power._power_impact) weighs a slow rank's SW power cap by its
clock (_clock_explains) and then by its power (_own_limit, a limit of its own set low):
tests/test_pcap42.py, test_pcap29.py and test_power34.py pin both measures.

revA38 F1: a site's cap in waves at 30 s polls -- a node capped anew 30-200 s after its last
wave kept that wave's onset (its power_cap verdict, cleared only after five free samples, still
standing), so a node capped with it in the new wave had no partner: escalated unknown or
isolated power, 5 of 8 seeds with 4 GPUs a node (1, 3, 5, 6) and seed 1 with 8 on the start.
Now a throttle_seen begun a minute or more after one was let go on the GPU begins its node's
wave anew (correlate.power._cap_begun).

cap40's +9 %: a rank held as the site's is released a minute after the whole site's cap let go
(correlate.power._site_let_go; tests/test_cap40.py).
"""

from __future__ import annotations

import pytest

from tests.test_revA38 import capped_log, pages, site_waves


@pytest.mark.parametrize(("gpn", "seed"), [(4, 3), (4, 5), (8, 1)])
def test_a_site_cap_in_waves_at_30_s_polls_pages_nobody(gpn: int, seed: int) -> None:
    # (the start: node-003 escalated (4, 3); node-007 isolated power, node-004 and node-002
    # escalated (4, 5); node-002 escalated (8, 1))
    assert pages(capped_log(seed=seed, nodes=8, gpn=gpn, poll_s=30, steps=1800, capped=False,
                            cooling=False, waves=site_waves(seed))) == []
