"""Room capfix33, round 33: the review's two cap33 findings (revA33 2 and 3).

2. A node page withdrawn as the site's (cap33's _withdraw_for_site) was fired again when the
   site's partners' caps ended while the node's own went on: fire / resolve / fire on one key
   for one cap (84fce3e: node-004 capped 0..T0+800, nodes 11/7/2 from 45-52 s to T0+360 --
   fired +49.7, withdrawn +54.8, fired +369.8).  Now a node whose page was withdrawn for a cap
   wave keeps its ranks the site's while that wave lasts (a new wave may page it again).
3. A site released slowly (nodes let go 100 s apart) paged its last node 9 s after its own
   cap ended: the partner counted impact_onset_s from its end as told, ~45 s late, against
   the node's current time.  Now a partner counts while it ended within impact_onset_s plus
   the cap-clear telling delay (throttle_clear_samples samples) of this node's own cap end,
   or of now while this node is still capped.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

import tests.test_cap32 as cap32
import tests.test_cap33 as cap33
from detector.statecodec import SnapshotRefused
from detector.testing import T0
from tests.test_cap33 import NODE4, _all, _rel, _story


def test_a_withdrawn_page_is_not_fired_again_when_the_site_lets_go(monkeypatch) -> None:
    # /tmp/revA33/cap2.py own_first_site_rollout: 84fce3e fired node-004 again at +369.8 s.
    caps = {4: (0.0, 0.085, 800.0), 11: (45.0, 0.085), 7: (50.0, 0.085), 2: (52.0, 0.085)}
    alerts = [a for a in _all(monkeypatch, caps, steps=1000, nodes=16)
              if a.scope.key == "node:node-004"]
    story = _story(alerts)
    assert [s[0] for s in story] == ["firing", "resolved"], story
    assert "withdrawn" in alerts[1].evidence.get("resolved_because", ""), story


def test_a_withdrawn_page_stays_withdrawn_after_a_short_site_cap(monkeypatch) -> None:
    # /tmp/revA33/capprobe.py withdraw_then_partners_end: 84fce3e re-fired at +219.8 s.
    caps = {4: (0.0, 0.085, 600.0), 11: (45.0, 0.085, 200.0), 7: (50.0, 0.085, 200.0),
            2: (52.0, 0.085, 200.0)}
    story = _story(_all(monkeypatch, caps, steps=800, nodes=16))
    assert [s[0] for s in story] == ["firing", "resolved"], story


def test_a_site_released_100_s_apart_pages_nobody(monkeypatch) -> None:
    # /tmp/revA33/capprobe.py slowrel100: 84fce3e paged node-004 at T0+609, 9 s after its
    # cap (to T0+600) was lifted; 3cb6b2b paged nobody.
    caps = {2: (0.0, 0.085, 300.0), 3: (5.0, 0.085, 400.0), 5: (10.0, 0.085, 500.0),
            4: (3.0, 0.085, 600.0)}
    alerts = _all(monkeypatch, caps, steps=900, nodes=16)
    assert [a for a in alerts if a.status == "firing"] == [], _story(alerts)



# (was a strict xfail: moe45 regression -- tests/test_cap33.py)
def test_a_node_capped_on_alone_is_still_paged_after_the_site_let_go(monkeypatch) -> None:
    # Guard (cap33's item 2 as it stands now): node-004 capped to 880 s, the site's others to
    # 300 s -- paged once, within ~3 minutes of the site's end (its partners' ends told ~45 s
    # late, then impact_onset_s and the clear delay).
    caps = {2: (0.0, 0.085, 300.0), 3: (5.0, 0.085, 300.0), 5: (10.0, 0.085, 300.0),
            4: (3.0, 0.085, 880.0)}
    alerts = _all(monkeypatch, caps, steps=cap33.LONG)
    fired = [a for a in alerts if a.status == "firing"]
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in fired] == [NODE4], _story(alerts)
    assert 60.0 < _rel(fired[0]) + 100.0 - 300.0 < 180.0, _story(alerts)


@pytest.mark.parametrize("value", [{"node-a": "x"}, {"node-a": math.nan}, [], {7: T0}],
                         ids=str)
def test_a_forged_withdrawn_wave_is_refused(value: Any) -> None:
    corr = cap32._sound()
    corr._site_withdrawn = value
    with pytest.raises(SnapshotRefused) as exc:
        cap32._restore(corr)
    assert exc.value.reason == "malformed" and "_site_withdrawn" in str(exc.value)


def test_a_withdrawn_wave_survives_a_restore() -> None:
    corr = cap32._sound()
    corr._site_withdrawn = {"node-a": T0 + 3.0}
    assert cap32._restore(corr)._site_withdrawn == {"node-a": T0 + 3.0}
