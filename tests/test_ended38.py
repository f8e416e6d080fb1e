"""svc38's `ended` in a watermarks message (when the fetch that found an idle source at its end was
sent) is untrusted input from the findings topic: a malformed, nested, oversized or non-finite
entry is refused by the decoder with a reason (the stream goes on), and a far-future one is taken
no later than the correlator's now."""

from __future__ import annotations

import orjson
import pytest

from detector.findings import WatermarksMessage, decode_message

WALL = 1_767_225_600.0


def _raw(ended: object) -> bytes:
    return orjson.dumps({"type": "watermarks", "clocks": [["thermal/0", None, True]],
                         "ended": ended})


@pytest.mark.parametrize("ended", [
    [["thermal/0", "nan"]], [["thermal/0", float("inf")]], [["thermal/0"]],
    [["thermal/0", [[[1.0]]]]], [[["thermal/0"], 1.0]], "thermal/0", [["thermal/0", 1.0, 2.0]],
    [["thermal/0", 1.0]] * ((1 << 16) + 1), [["\x00bad", 1.0]],
], ids=["nan-string", "inf", "short", "nested", "name-a-list", "not-a-list", "long-entry",
        "too-many", "unprintable"])
def test_a_malformed_ended_is_refused_with_a_reason(ended: object) -> None:
    with pytest.raises(ValueError):
        decode_message(_raw(ended), wall_s=WALL)


def test_a_well_formed_ended_decodes_a_far_future_one_left_for_the_correlator_to_cap() -> None:
    msg = decode_message(_raw([["thermal/0", WALL - 2.0], ["thermal/1", 1e300]]), wall_s=WALL)
    assert type(msg) is WatermarksMessage
    assert msg.ended == [("thermal/0", WALL - 2.0), ("thermal/1", 1e300)]
