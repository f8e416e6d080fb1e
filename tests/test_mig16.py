"""mig16 (round 16, issue 10): temperature follows load -- a GPU is hot for its power, not for
being busier than its node's other GPUs.

One node, 8 GPUs sampled every 10 s.  GPUs 0-3 serve inference from the start, their power
swinging per request between 250 and 400 W; a training job's 4 ranks start on GPUs 4-7 one by
one (every 3 minutes: the node's idle GPUs, 0x1, count for nothing), each then at a steady
600 W.  Temperature follows the physics of blind6's generator, not its numbers: 24 C inlet
air plus 0.07 C/W times the power low-passed over 40 s (the heat sink), a per-GPU offset of
up to 1.5 C (its place in the airflow), 0.3 C of noise, integer degrees as DCGM sends them.
"""

from __future__ import annotations

import math
import random

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.node_temps import NodeTemps
from detector.testing import T0, feed, thermal

START_S = (0.0, 180.0, 360.0, 540.0)  # training ranks on GPUs 4-7 start one by one


def _node_log(minutes: float, *, fan_gpu: int | None = None, fan_at_s: float = 0.0,
              seed: int = 9920) -> list:
    rng = random.Random(seed)
    offset = [rng.uniform(-1.5, 1.5) for _ in range(8)]
    heat = [60.0] * 8           # low-passed power (W)
    c_per_w = [0.07] * 8
    out = []
    for i in range(int(minutes * 6)):
        t = 10.0 * i
        for g in range(8):
            if g < 4:
                power, idle = rng.uniform(250.0, 400.0), False
            else:
                idle = t < START_S[g - 4]
                power = 60.0 + rng.gauss(0, 2) if idle else 600.0 + rng.gauss(0, 5)
            heat[g] += (power - heat[g]) * (1.0 - math.exp(-10.0 / 40.0))
            if g == fan_gpu and t >= fan_at_s:  # the fan failing: the GPU's C/W climbs by
                c_per_w[g] = min(0.11, c_per_w[g] + 0.004)  # half in 50 s, to 0.11 in 100 s
            temp = 24.0 + offset[g] + c_per_w[g] * heat[g] + rng.gauss(0, 0.3)
            out.append(thermal(T0 + t + 0.01 * g, "node-000", g, temp_c=float(round(temp)),
                               power_w=round(power, 1), clock_mhz=210.0 if idle else 1410.0,
                               throttle=0x1 if idle else 0))
    return out


def _pages(events: list) -> list[tuple[str, str, str, float]]:
    return [(a.topic, a.cause, a.scope.key, a.detected_ts - T0) for a in feed(Engine(), events)
            if a.status == "firing"]


def test_training_ranks_starting_beside_an_inference_server_are_not_hot() -> None:
    # While the ranks start, the node's busy GPUs are the inference server's (~47 C) and one
    # to three training GPUs at ~66 C: 19 C over the busy GPUs' median, every training GPU
    # isolated as slow_node/thermal on main.  For its power each is where its mates are.
    assert _pages(_node_log(15.0)) == []


def test_a_training_gpus_failing_fan_beside_an_inference_server_is_found() -> None:
    # The same node, everything started; GPU 6's fan fails at +12 min: ~66 -> ~90 C at
    # 600 W, its mates unchanged.  Found as on an equally loaded node (the mates' slope
    # is fitted without it: a GPU alone at its power must not explain its own heat).
    pages = _pages(_node_log(20.0, fan_gpu=6, fan_at_s=720.0))
    assert [p[:3] for p in pages] == [(ISOLATION, "thermal", "gpu:node-000/6")]
    assert pages[0][3] - 720.0 <= 90.0, f"found {pages[0][3] - 720.0:.0f} s after the fan"


def test_a_gpu_alone_at_its_power_does_not_explain_its_own_heat() -> None:
    # Five GPUs at 600 W and 66 C, one at 700 W and 85 C: a slope fitted with it would be
    # 0.19 C/W and call it normal; without it there is no pair at unequal load, the node's
    # median rules (66 C), and it is 19 C over.
    n = NodeTemps()
    for g in range(6):
        n.gpus.add(g)
        n.temps[g], n.times[g] = (85.0, 100.0) if g == 5 else (66.0, 100.0)
        n.power[g] = n.raw[g] = 700.0 if g == 5 else 600.0  # (a first sample's power)
    n.reference(100.0)
    assert n.for_power(5, 1.0) == n.median_c == 66.0
    # With two GPUs of an inference server at 320 W, 47 C, the mates' slope is 0.068 C/W:
    # the 700 W GPU's expected temperature is 72.8 C (the median moved to its power), and at
    # 85 C it is still 12 C over.
    for g in (6, 7):
        n.gpus.add(g)
        n.temps[g], n.times[g] = 47.0, 100.0
        n.power[g] = n.raw[g] = 320.0
    n.reference(101.0)
    assert 72.0 <= n.for_power(5, 1.0) <= 73.5
    assert 85.0 - n.for_power(5, 1.0) >= 12.0
