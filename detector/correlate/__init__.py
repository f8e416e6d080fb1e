"""From findings to problems to alerts: attribution, isolation granularity, escalation, lifecycle.

The correlator is the only place that decides what to say.  It receives sparse
findings from the monitors, in (near) event-time order, and keeps:

- the **device map** — every active finding by unit, so a slow rank can be
  explained by what its own GPU (or node) is showing;
- **problems** — one per (topic, kind, unit), each with its ``dedup_key``,
  active findings, evidence and status; a problem fires once, re-fires only
  when its cause is refined, and resolves after ``resolve_after_s`` of quiet
  (hardware problems are latched until the GPU is reset);
- **timers** in event time, for decisions that need a little more evidence:
  NIC trouble waits ``switch_window_s`` to see whether the whole switch is
  failing (one switch alert, not one per node), and an unexplained slow rank
  waits ``escalate_after_s`` for an explanation before a human is paged.

Where things are: a module a concern, its functions the Correlator's methods (bound in
its class body, detector/correlate/correlator.py), their state the Correlator's (made
in its ``__init__``):

- ``correlator``: :class:`Correlator` -- its state, entry points, timers, prune, the
  busy/idle GPUs told;
- ``problems``: problems raised, joined, resolved; their alerts;
- ``slow``: a slow rank's explanation, wait and escalation; host-time slowness;
- ``thermal``: throttles and heat -- a slow rank's brake, a node's cooling;
- ``power``: SW power caps -- routine, a node's, a site's;
- ``ports``: a port's throughput against its mates only where they carry the same jobs;
- ``explain``: a new isolation taking over the slow ranks it explains;
- ``narrow``: a node's slow page narrowed to its one GPU still slow, its other ranks back;
- ``hardware``: a GPU failing job after job, NVLink baseboards, PCIe replays;
- ``common``: :class:`Problem` and what several of these read;
- detector.part_window: shared-part windows (a switch, a domain).
"""

# ruff: noqa: F401
# (every name the old module defined, for whoever imports it from here)

from detector.correlate.common import (
    _CAP_SIGNALS,
    _CAPPING,
    _DRAINS,
    _THROTTLES,
    FACILITY_CAP_MEMORY,
    REMAP_INSTANT_S,
    Problem,
    _alike,
    _found_alike,
    _node_of,
    _reason_bits,
    _remap_pending,
)
from detector.correlate.correlator import (
    _CONGESTION,
    _IDLE_KINDS,
    _IDLE_SETS,
    _NEVER,
    Correlator,
    _says_what_not_why,
    _shared_idle,
)
from detector.correlate.hardware import (
    _BOARD_HELD_MAX,
    BOARD_MIN_GPUS,
    BOARD_SPREAD_S,
    _listed,
)
from detector.correlate.power import (
    _MAX_NOISE_SIGMA,
    _SPIKE_RATIO,
    _baseline,
    _explained,
    _is_drop,
    _pace,
    _pace_noise,
    _within_cap,
    check_power_restored,
)
from detector.correlate.problems import (
    _GENERIC,
    _gpus_told,
    _summary,
)
from detector.correlate.slow import (
    _CLOCK_PEERS,
    _in_step,
)
from detector.correlate.thermal import (
    _above,
    _harmless_heat,
    _node_wide_reason,
)
from detector.findings import Finding
from detector.part_window import BOARD_WINDOW_S
from detector.recovery import Placement
from detector.thresholds import Thresholds
