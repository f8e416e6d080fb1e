"""faultline errors found by blind5's generator (issue 10, round 14), one reproducer each.

Each case is cut from a blind5 tuning log (`bench/blind5/cases/`, `python -m bench.blind5.cut`,
labels inside) and replayed through the command line as an operator would (`faultline
replay CASE --alerts-out FILE`, topology from the log). Each test states what an operator
needs; they are strict xfails until faultline does it (/work/helpers/blind5-findings.md).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bench.blind5 import measure
from bench.blind5 import score as sc
from bench.blind5.story import STORIES

CASES = Path(__file__).resolve().parents[1] / "bench" / "blind5" / "cases"


def run(name: str, tmp_path: Path) -> tuple[list[tuple[str, dict]], sc.Score]:
    """(firing alerts as (topic, value), DESIGN's score) of the case `name`."""
    log = CASES / f"{name}.jsonl.gz"
    out = tmp_path / f"{name}.alerts.jsonl"
    measure.replay(log, out)
    alerts = [(t, a) for t, a in sc.alerts_of(out) if a.get("status") == "firing"]
    return alerts, sc.score(sc.labels_of(log), alerts, name)


def caught(res: sc.Score, suffix: str) -> dict | None:
    """The fault whose id ends in `suffix`, when caught."""
    f = next(f for f in res.faults if f["fault_id"].endswith(suffix))
    return f if f["caught"] else None


def false_pages(res: sc.Score) -> list[str]:
    return [f"{p['kind']} {p['first'].get('scope')}" for p in res.problems if not p["caught"]]


def test_every_case_replays(tmp_path):
    """The harness itself (not an xfail): each case is there with its labels."""
    want = {"twin-nics-one-leaf": 2, "power-limit-wrong-node": 1, "loss-sdc-one-replica": 1,
            "longctx-slow-gpu": 1, "rl-bimodal-healthy": 0, "fan-two-gpus-one-node": 1,
            "leaf-upgrade-second-flap": 1, "power-limit-gpu-pages": 1,
            "job-power-limit-clock-behind": 0, "power-limit-node-ranks-join": 1}
    assert {p.name.removesuffix(".jsonl.gz") for p in CASES.glob("*.jsonl.gz")} == set(want)
    for name, n in want.items():
        assert len(sc.labels_of(CASES / f"{name}.jsonl.gz")) == n, name


# (Was a strict xfail: "E1: two cables of one leaf failing together (2 of its 4 nodes, one port
# each of 8) are isolated as the leaf switch".)  Fixed by room fabric15, round 15: a node facing
# its leaf with every port counts toward it with two or more ports in trouble, or one whose name
# is in trouble on as many of its nodes as make it failing (Correlator._switch_ports).
def test_two_nics_of_one_leaf_are_two_nic_alerts(tmp_path):
    # Slurm topology.conf, sw-leaf4 over h100n013-016 (RoCE, 8 ports a node, all facing the
    # leaf). Within 6 s, one port of h100n014 and one of h100n013 start erring (symbol,
    # receive, sequence errors) for 3-5 min; the other 14 + 16 ports of the leaf are clean.
    # A leaf's fault would show on many of the 32 ports it serves: this is two cables.
    alerts, res = run("twin-nics-one-leaf", tmp_path)
    assert caught(res, "twin0") and caught(res, "twin1"), "each erring port named"
    assert false_pages(res) == [], "no switch isolation: taking sw-leaf4 out drains 4 nodes"


# (Was a strict xfail, fixed by power14's node-scope cap (Correlator._node_cap): "E2: a power
# limit set on one node of a 2-node job (its 8 ranks ~15 % slower, power ~470 W against 700 W
# on the peer node, SM clock -18 %) raises nothing".)
def test_power_limit_on_one_node_of_two_is_named(tmp_path):
    # TP8 x DP2 on h100n007/008. `nvidia-smi -pl ~470` on h100n008 for ~8 min: its GPUs
    # report 0x4 at ~470 W (every busy H100 here reports 0x4 at ~700 W), clock ~1600 MHz
    # against ~1950; its ranks' compute +16 %, the peer node waits in comm. Two peers per
    # group: a tie by step time alone, but compute vs comm and the power figures name it.
    alerts, res = run("power-limit-wrong-node", tmp_path)
    hit = caught(res, "pl-wrong")
    assert hit, "a node-scope alert on h100n008"
    assert hit["cause_ok"], "cause power"


# (Was a strict xfail: "E2b (held-out seed 7): the wrong-node power limit is 3 GPU power
# isolations and a node escalation calling it unknown".  Fixed by thermal15: GPUs of a node
# capped on one poll, its ranks slow alike, are one node power page (Correlator._capped_with),
# which the node's other ranks join (Correlator._mates_cause).)
def test_power_limit_on_one_node_is_one_node_power_page(tmp_path):
    # The same fault on h100n007 (limit ~500 W): faultline isolates GPUs 1, 3 and 6 as
    # slow_node/power (0x4, clock -13-15 %) and escalates the node as slow_node/unknown. The
    # limit was set on the node, all 8 GPUs alike: one node power isolation, nothing beside.
    alerts, res = run("power-limit-gpu-pages", tmp_path)
    hit = caught(res, "pl-wrong")
    assert hit and hit["cause_ok"], "h100n007 named, cause power"
    assert false_pages(res) == [], "no GPU isolations beside it"


# (Was a strict xfail, fixed by sdc15's detector.sdc.ReplicaLoss: "E3: an SDC seen only in one
# replica's loss and grad norm, again and again (6-9 steps in 5 min), raises nothing".)
def test_loss_spikes_on_one_replica_are_escalated(tmp_path):
    # SFT TP8 x DP4 (loss on every rank). Replica 0's loss x1.6-4 and its ranks' grad norm
    # x1.4-2.8 on 9 steps 15-40 steps apart; the other replicas' losses stay within 3 %;
    # checksums agree (the corruption is averaged into every replica's gradient). One
    # data outlier is one step; the same replica, nine times, is a suspect (Megatron's
    # rerun-on-another-GPU check is the next step). Scope: the replica; escalation only.
    alerts, res = run("loss-sdc-one-replica", tmp_path)
    assert caught(res, "loss-sdc"), "an escalation naming sft-s replica 0"


def problems_on(res: sc.Score, node: str) -> list[str]:
    return [f"{p['topic'].split('.')[-1]} {p['kind']}/{p['first'].get('cause')} "
            f"{p['first'].get('scope')}" for p in res.problems
            if (p["first"].get("scope") or {}).get("node") == node]


# (Was a strict xfail: "E4: a healthy long-context job (one document a replica a step, 2-5x
# spread) has a node escalated as a >= 30 % gross outlier".  Fixed by room steps15, round 15: a
# warm-up step of a rank compared with its peers as a whole counts as gross only when it is also
# 3 noise units of the job's spread slow (JobMonitor._gross_prior).)
def test_long_context_spread_pages_nobody_healthy(tmp_path):
    # TP8 x DP4 on h100n001-004; each replica's compute is x lognormal(0, 0.42) clipped to
    # [0.45, 5], drawn anew every step: the slowest replica changes from step to step. A
    # replica 1.5x its peers' median on 3 steps is the workload. The one real fault in the
    # log (h100n004 GPU 2, 25-35 % slower from ~11 min) is the other test.
    alerts, res = run("longctx-slow-gpu", tmp_path)
    assert false_pages(res) == [], "h100n002 is healthy"


# (Was a strict xfail: "E5: a GPU 25-35 % slower for 16 min in a long-context job (2-5x step
# spread) is never escalated".  Fixed by room steps15, round 15: a rank's mean deviation over
# ~127 steps' weight against its standard error from the job's step-to-step spread
# (JobMonitor._check_sustained): h100n004 paged at step 467, 56 steps into the fault.)
def test_long_context_slow_gpu_is_escalated(tmp_path):
    # h100n004 GPU 2 slower by ~30 % from ~11 min to the end (~100 steps of 7-18 s). Its TP
    # group (the node's 8 ranks) is its replica; over 100 steps its compute is ~1.3x the
    # others' median (the per-step spread of 0.42 in log shrinks ~10x over 100 steps).
    alerts, res = run("longctx-slow-gpu", tmp_path)
    assert caught(res, "lc-slow"), "an escalation naming h100n004 (or its GPU 2)"


def test_rl_rollouts_page_nobody(tmp_path):
    # E6 (blind5, main fc2da1f: a node escalated as a >= 30 % gross outlier; fails on 2035cf3),
    # passes from steps14 42e075a on (a rank from its first step scored over a 10 % prior).
    # PPO, TP4 x DP4 on h100n005-006: 1-3 rollout iterations (compute x3 x the replica's
    # longest response, lognormal(0, 0.25)) between training iterations. Nothing is wrong.
    alerts, res = run("rl-bimodal-healthy", tmp_path)
    assert [a["scope"] for _t, a in alerts] == []


# (Was a strict xfail: "E7: one failing fan is three problems on its node: the throttling GPU
# (caught), its node's slow ranks as 'unknown', and the warm neighbour GPU as a thermal
# isolation".  Fixed by thermal15: the node's ranks slow alike join GPU 5's thermal isolation
# (Correlator._mates_cause); a GPU hot beside a hotter one that is hot or throttling is its
# evidence (GpuThermal._check_hot).)
def test_one_fan_is_one_problem(tmp_path):
    # dgx-b200-02: a fan module fails; GPU 5 climbs past 88 C and holds there with 0x20
    # (clock -6-10 %), GPU 4 warms ~10 C and never throttles. TP8: the node's 8 ranks run at
    # GPU 5's pace. One part to replace: one page (the node's cooling, or GPU 5 thermal with
    # the slow ranks joined to it), not a second one calling the same slowness unknown and a
    # third isolating a GPU that is neither throttled nor slow.
    alerts, res = run("fan-two-gpus-one-node", tmp_path)
    assert caught(res, "fan"), "control: the fan's GPU is caught"
    assert len(problems_on(res, "dgx-b200-02")) == 1, problems_on(res, "dgx-b200-02")


# (Was a strict xfail: "E8: a leaf's second, short flap (5-15 s, seen down on one node's 30 s
# sample, link_downed +1 on every port of all 4 nodes) is isolated as that node".)  Fixed by
# room fabric15, round 15: link_downed moving on a port up on both samples is told as evidence
# (detector.network's flap_seen) and counted when the switch window closes.
def test_leaf_flap_between_samples_stays_the_leaf(tmp_path):
    # tor5 (dgx-b200-17..20, idle) is upgraded: every port down 40-80 s (caught as tor5),
    # then a 5-15 s flap. Only dgx-b200-17's 30 s sample lands inside it; the other three
    # nodes' next samples show link_downed +1 on all 8 ports. One switch event, not a node.
    alerts, res = run("leaf-upgrade-second-flap", tmp_path)
    assert caught(res, "maint"), "control: tor5 is caught"
    assert false_pages(res) == [], "no node isolation of dgx-b200-17"


def _clock_right(src: Path, dst: Path, node: str, shift_s: float) -> None:
    """The case with one node's clock set right (its records' `ts` moved by `shift_s`)."""
    with gzip.open(src, "rt", encoding="utf-8") as fh, \
            gzip.open(dst, "wt", encoding="utf-8") as out:
        for line in fh:
            r = json.loads(line)
            if r["topic"].startswith("telemetry.") and r["value"].get("node") == node:
                r["value"]["ts"] += shift_s
            out.write(json.dumps(r) + "\n")


# (Was a strict xfail: "E9 (new on main with power14's node-scope cap): a job-wide
# `nvidia-smi -pl 800` is isolated as one node's own power limit when that node's clock is
# 60-200 s behind".  Fixed by room clock14, round 14: a node whose records lag steadily is taken
# at its offset (Monitors._behind): dgx-b200-11 at -86 s, its cap begins with the others'.)
def test_job_wide_power_limit_pages_nobody_with_a_clock_behind(tmp_path):
    # Elastic job B on dgx-b200-09..12 (TP8 x DP4, 1 s NVML collectors on some nodes): the
    # operator caps all 32 GPUs at 800 W at once for 5-7 min (every rank ~9 % slower alike,
    # 0x4 everywhere). dgx-b200-11's clock is ~150 s behind, so its cap "begins" ~150 s before
    # the others' in event time; it is one limit on the whole job. Nothing is wrong.
    alerts, res = run("job-power-limit-clock-behind", tmp_path)
    assert [a["scope"] for _t, a in alerts] == []


def test_job_wide_power_limit_with_clocks_right_pages_nobody(tmp_path):
    """Control for E9 (not an xfail): dgx-b200-11's clock set right, the same limit is quiet."""
    skew = STORIES["ops"](1).nodes["dgx-b200-11"].clock_off_s
    fixed = tmp_path / "clock-right.jsonl.gz"
    _clock_right(CASES / "job-power-limit-clock-behind.jsonl.gz", fixed, "dgx-b200-11", -skew)
    out = tmp_path / "clock-right.alerts.jsonl"
    measure.replay(fixed, out)
    assert [a["scope"] for t, a in sc.alerts_of(out) if a.get("status") == "firing"] == []
