"""Scoring alerts against labels: the catch window, scope levels, topics, problems, the table."""

from __future__ import annotations

import json
import random

import pytest

from detector.alerts import ESCALATION, ISOLATION, FiredAlert, Label, Scope
from replay.scoring import score

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
GPU_7_3 = Scope.of_gpu("node-007", 3)
NODE7 = Scope.of_node("node-007")


def label(fault_id: str = "f1", scope: Scope = GPU_7_3, *,
          start: float = 100.0, end: float = 110.0, kind: str = "hardware",
          cause: str = "gpu_memory", attributable: bool = True) -> Label:
    return Label(fault_id, kind, cause, scope, T0 + start, T0 + end, attributable)


def fired(dedup_key: str, scope: Scope, at: float, *, topic: str = ISOLATION,
          kind: str = "hardware", cause: str = "gpu_memory",
          status: str = "firing") -> FiredAlert:
    """An alert read back from a record, ``at`` seconds after T0."""
    envelope = {"id": f"{dedup_key}-{at}", "dedup_key": dedup_key, "status": status,
                "kind": kind, "cause": cause, "scope": scope.to_dict(),
                "action": {"name": "drain_node", "detail": "", "requires_approval": True,
                           "rollback": "undrain"},
                "onset_ts": T0 + at - 1.0, "detected_ts": T0 + at,
                "detection_latency_s": 1.0, "confidence": 0.9, "evidence": {},
                "job": "job-1", "tenant": "tenant-a"}
    return FiredAlert.from_record(topic, envelope)



# --- the catch window ----------------------------------------------------------------------


@pytest.mark.parametrize(("at", "caught"), [
    (100.0, True),      # at start_ts
    (105.0, True),
    (110.0, True),      # at end_ts
    (170.0, True),      # exactly end_ts + 60 s
    (170.001, False),
    (99.999, False),    # before the fault started
])
def test_catch_window_is_start_to_end_plus_60s(at: float, caught: bool) -> None:
    card = score([label()], [fired("a", NODE7, at)])
    assert card.faults[0].caught is caught
    assert card.total.false_positives == (0 if caught else 1)


def test_grace_is_configurable() -> None:
    card = score([label()], [fired("a", NODE7, 115.0)], grace_s=1.0)
    assert not card.faults[0].caught


# --- scope levels --------------------------------------------------------------------------


def test_gpu_fault_is_caught_by_its_gpu_or_its_node_but_not_a_switch_or_another_gpu() -> None:
    lab = label(scope=Scope.of_gpu("node-007", 3))
    assert score([lab], [fired("a", Scope.of_gpu("node-007", 3), 101.0)]).total.recall == 1.0
    assert score([lab], [fired("a", NODE7, 101.0)]).total.recall == 1.0
    for wrong in (Scope.of_switch("leaf-2"), Scope.of_gpu("node-007", 2),
                  Scope.of_node("node-008"), Scope.of_domain("rack-4")):
        card = score([lab], [fired("a", wrong, 101.0)])
        assert (card.total.recall, card.total.precision) == (0.0, 0.0), wrong


def test_node_fault_is_not_caught_by_a_finer_gpu_alert() -> None:
    # "the fault's target at the fault's level": a finer scope is not the target either.
    card = score([label(scope=NODE7, kind="slow_node", cause="thermal")],
                 [fired("a", Scope.of_gpu("node-007", 3), 101.0)])
    assert not card.faults[0].caught


def test_switch_fault_reported_as_node_alerts_is_one_miss_and_three_false_positives() -> None:
    lab = label(scope=Scope.of_switch("leaf-2"), kind="network", cause="switch")
    nodes = [fired(f"n{i}", Scope.of_node(f"node-00{i}"), 101.0 + i, kind="network",
                   cause="switch") for i in range(3)]
    card = score([lab], nodes)
    assert (card.total.missed, card.total.false_positives, card.total.problems) == (1, 3, 3)
    assert card.total.precision == 0.0
    assert [a.dedup_key for a in card.false_positives] == ["n0", "n1", "n2"]
    assert score([lab], [fired("s", Scope.of_switch("leaf-2"), 101.0)]).total.recall == 1.0


@pytest.mark.parametrize(("label_port", "alert_port", "caught"), [
    (1, 1, True),
    (1, 2, False),
    (None, 2, True),   # a label without a port names the whole NIC
    (1, None, True),   # so does an alert without one
    (None, None, True),
])
def test_nic_ports_match_when_equal_or_left_out(label_port: int | None, alert_port: int | None,
                                                caught: bool) -> None:
    lab = label(scope=Scope.of_nic("node-007", "mlx5_3", label_port), kind="network",
                cause="nic")
    card = score([lab], [fired("a", Scope.of_nic("node-007", "mlx5_3", alert_port), 101.0)])
    assert card.faults[0].caught is caught


def test_nic_fault_is_caught_by_its_node_not_by_another_nic() -> None:
    lab = label(scope=Scope.of_nic("node-007", "mlx5_3", 1), kind="network", cause="nic")
    assert score([lab], [fired("a", NODE7, 101.0)]).faults[0].caught
    assert not score([lab], [fired("a", Scope.of_nic("node-007", "mlx5_2", 1),
                                   101.0)]).faults[0].caught


# --- topics and attribution ----------------------------------------------------------------


def test_unattributable_fault_is_caught_only_by_an_escalation() -> None:
    lab = label(kind="slow_node", cause="unknown", attributable=False)
    isolation = fired("iso", NODE7, 101.0, kind="slow_node", cause="unknown")
    escalation = fired("esc", NODE7, 102.0, topic=ESCALATION, kind="unattributed",
                       cause="unknown")
    card = score([lab], [isolation, escalation])
    assert card.faults[0].by == escalation
    assert card.faults[0].latency_s == pytest.approx(2.0)
    assert [(a.topic, a.dedup_key) for a in card.false_positives] == [(ISOLATION, "iso")]
    assert score([lab], [isolation]).total.recall == 0.0


def test_attributable_fault_is_caught_by_an_escalation_too() -> None:
    esc = fired("esc", NODE7, 101.0, topic=ESCALATION, kind="unattributed", cause="unknown")
    card = score([label()], [esc])
    assert card.faults[0].caught and card.faults[0].attributed is False


def test_same_dedup_key_on_both_topics_is_two_problems() -> None:
    card = score([label()], [fired("k", NODE7, 101.0),
                             fired("k", NODE7, 101.0, topic=ESCALATION)])
    assert card.total.problems == 2 and card.total.false_positives == 0


def test_latency_and_attribution_come_from_the_first_catching_alert() -> None:
    late_right = fired("b", Scope.of_gpu("node-007", 3), 104.0, cause="gpu_memory")
    early_wrong = fired("a", NODE7, 101.5, cause="thermal")
    card = score([label()], [late_right, early_wrong])  # input order is not time order
    res = card.faults[0]
    assert res.by == early_wrong
    assert res.latency_s == pytest.approx(1.5)
    assert res.attributed is False
    assert card.total.attribution == 0.0
    assert score([label()], [late_right]).total.attribution == 1.0


# --- problems ------------------------------------------------------------------------------


def test_resent_firing_messages_are_one_problem() -> None:
    card = score([label()], [fired("a", NODE7, t) for t in (101.0, 102.0, 103.0)]
                 + [fired("fp", Scope.of_node("node-001"), t) for t in (101.0, 130.0)])
    assert (card.total.problems, card.total.false_positives) == (2, 1)
    assert card.total.precision == 0.5
    assert card.false_positives[0].detected_ts == T0 + 101.0  # its first firing message


def test_a_problem_that_also_fires_outside_the_window_still_catches() -> None:
    card = score([label()], [fired("a", NODE7, 101.0), fired("a", NODE7, 500.0)])
    assert card.total.false_positives == 0


def test_resolved_messages_never_count() -> None:
    card = score([label()], [fired("a", NODE7, 101.0, status="resolved")])
    assert not card.faults[0].caught
    assert card.total.problems == 0 and card.total.precision is None


def test_new_dedup_key_is_a_new_problem_which_catches_if_it_lies_in_the_window() -> None:
    first, again = fired("a", NODE7, 101.0), fired("a-restarted", NODE7, 150.0)
    card = score([label()], [first, again])
    assert (card.total.problems, card.total.false_positives, card.total.precision) == (2, 0, 1.0)
    assert card.faults[0].by == first

    late = fired("a-restarted", NODE7, 171.0)  # past end_ts + 60 s: catches nothing
    card = score([label()], [first, late])
    assert (card.total.problems, card.total.false_positives, card.total.precision) == (2, 1, 0.5)
    assert card.false_positives == (late,)


# --- per kind ------------------------------------------------------------------------------


def test_per_kind_precision_puts_false_positives_under_the_alerts_claimed_kind() -> None:
    labs = [label("hw", kind="hardware"),
            label("slow", Scope.of_gpu("node-009", 0), kind="slow_node", cause="thermal")]
    alerts = [
        fired("hw", NODE7, 101.0, kind="hardware"),
        # Catches the slow_node fault while claiming "hardware": counted as slow_node.
        fired("slow", Scope.of_node("node-009"), 102.0, kind="hardware", cause="thermal"),
        fired("fp-net", Scope.of_switch("leaf-1"), 103.0, kind="network", cause="switch"),
        fired("fp-hw", Scope.of_node("node-001"), 104.0, kind="hardware"),
    ]
    rows = {r.kind: r for r in score(labs, alerts).rows}
    assert list(rows) == ["slow_node", "hardware", "network"]  # DESIGN's kind order
    assert (rows["hardware"].problems, rows["hardware"].false_positives) == (2, 1)
    assert rows["hardware"].precision == 0.5
    assert (rows["slow_node"].problems, rows["slow_node"].precision) == (1, 1.0)
    assert (rows["network"].faults, rows["network"].problems) == (0, 1)
    assert (rows["network"].precision, rows["network"].recall) == (0.0, None)


def test_per_kind_recall_and_latency() -> None:
    labs = [label(f"f{i}", Scope.of_gpu("node-007", i), start=100.0 * (i + 1),
                  end=100.0 * (i + 1) + 5) for i in range(5)]
    # Latencies 0, 1, 2, 3 s; the fifth fault is missed.
    alerts = [fired(f"a{i}", Scope.of_gpu("node-007", i), 100.0 * (i + 1) + i) for i in range(4)]
    row = score(labs, alerts).rows[0]
    assert (row.kind, row.faults, row.caught, row.missed, row.recall) == ("hardware", 5, 4, 1, 0.8)
    assert row.latency_median_s == pytest.approx(1.5)
    assert row.latency_p95_s == pytest.approx(2.85)
    assert row.latency_max_s == pytest.approx(3.0)


def test_empty_inputs_give_no_rates_and_no_errors() -> None:
    card = score([], [])
    assert card.rows == ()
    t = card.total
    assert (t.faults, t.problems, t.precision, t.recall, t.latency_median_s,
            t.attribution) == (0, 0, None, None, None, None)
    assert "-" in card.format().splitlines()[1]
    json.dumps(card.to_dict())

    only_missed = score([label()], [])
    assert (only_missed.total.recall, only_missed.total.precision) == (0.0, None)
    only_fp = score([], [fired("a", NODE7, 1.0)])
    assert (only_fp.total.recall, only_fp.total.precision) == (None, 0.0)


def test_alert_on_another_topic_is_refused() -> None:
    with pytest.raises(ValueError, match="telemetry.step"):
        score([], [fired("a", NODE7, 1.0, topic="telemetry.step")])


def test_negative_grace_is_refused() -> None:
    with pytest.raises(ValueError, match="grace_s"):
        score([], [], grace_s=-1.0)


# --- output --------------------------------------------------------------------------------


def test_format_puts_numbers_in_their_row_and_lists_fps_and_misses() -> None:
    labs = [label("hw-1"), label("hw-2", Scope.of_gpu("node-008", 1)),
            label("net-1", Scope.of_switch("leaf-2"), kind="network", cause="switch")]
    alerts = [fired("a", NODE7, 102.5), fired("b", Scope.of_node("node-003"), 120.0,
                                               kind="network", cause="nic")]
    text = score(labs, alerts).format()
    lines = {ln.split()[0]: ln.split() for ln in text.splitlines()[1:4]}
    # kind faults caught missed problems FP precision recall med p95 max attrib
    assert lines["hardware"][1:8] == ["2", "1", "1", "1", "0", "1.000", "0.500"]
    assert lines["hardware"][8] == "2.500"
    assert lines["network"][1:8] == ["1", "0", "1", "1", "1", "0.000", "0.000"]
    assert lines["network"][8] == "-"
    assert lines["all"][1:8] == ["3", "1", "2", "2", "1", "0.500", "0.333"]
    fp_lines = text[text.index("false positives:"):text.index("missed faults:")].splitlines()
    assert fp_lines[1].split() == ["isolation", "network", "nic", "node:node-003",
                                   "2026-01-01T00:02:00.000Z", "b"]
    missed = text[text.index("missed faults:"):].splitlines()[1:]
    assert [ln.split()[:3] for ln in missed] == [["hw-2", "hardware", "gpu:node-008/1"],
                                                 ["net-1", "network", "switch:leaf-2"]]


def test_to_dict_is_json_and_names_the_catching_alert() -> None:
    card = score([label()], [fired("a", NODE7, 101.0), fired("fp", Scope.of_node("n"), 1.0)])
    d = json.loads(json.dumps(card.to_dict()))
    assert d["total"]["precision"] == 0.5
    assert d["rows"][0]["kind"] == "hardware"
    assert d["faults"][0]["by"]["dedup_key"] == "a"
    assert d["faults"][0]["latency_s"] == pytest.approx(1.0)
    assert [fp["dedup_key"] for fp in d["false_positives"]] == ["fp"]


# --- the index agrees with the rule applied naively ----------------------------------------


def _naive_catches(lab: Label, a: FiredAlert, grace_s: float) -> bool:
    if a.status != "firing" or not lab.start_ts <= a.detected_ts <= lab.end_ts + grace_s:
        return False
    if not lab.attributable and a.topic != ESCALATION:
        return False
    ls, s = lab.scope, a.scope
    if ls.level == "nic" and s.level == "nic":
        return (ls.node, ls.nic) == (s.node, s.nic) and (
            ls.port is None or s.port is None or ls.port == s.port)
    return ls.key == s.key or (ls.level in ("gpu", "nic") and s == Scope.of_node(ls.node))


def test_indexed_scoring_matches_a_naive_pairwise_check() -> None:
    rng = random.Random(7)

    def scope() -> Scope:
        node = f"node-{rng.randrange(4)}"
        return rng.choice([
            Scope.of_gpu(node, rng.randrange(3)), Scope.of_node(node),
            Scope.of_nic(node, f"mlx5_{rng.randrange(2)}", rng.choice([None, 1, 2])),
            Scope.of_switch(f"leaf-{rng.randrange(2)}"),
        ])

    labs = []
    for i in range(60):
        start = rng.uniform(0, 2000)
        labs.append(label(f"f{i}", scope(), start=start, end=start + rng.uniform(0, 30),
                          kind=rng.choice(["hardware", "network", "slow_node"]),
                          attributable=rng.random() < 0.7))
    alerts = [fired(f"k{rng.randrange(150)}", scope(), rng.uniform(0, 2100),
                    topic=rng.choice([ISOLATION, ESCALATION]),
                    status=rng.choice(["firing", "firing", "resolved"]))
              for _ in range(600)]
    card = score(labs, alerts)

    for res in card.faults:
        catchers = [a for a in alerts if _naive_catches(res.label, a, 60.0)]
        assert res.caught is bool(catchers)
        if catchers:
            assert res.by is not None
            assert res.by.detected_ts == min(a.detected_ts for a in catchers)
    problems = {(a.topic, a.dedup_key) for a in alerts if a.status == "firing"}
    catching = {(a.topic, a.dedup_key) for a in alerts
                if any(_naive_catches(lab, a, 60.0) for lab in labs)}
    assert card.total.problems == len(problems)
    assert card.total.false_positives == len(problems - catching)
    assert 0 < card.total.false_positives < card.total.problems  # the case exercises both
    assert 0 < card.total.caught < card.total.faults
    assert sum(r.problems for r in card.rows) == card.total.problems
