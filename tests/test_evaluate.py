"""The evaluation harness: corpora, combined scoring, baselines, ETTR, ``faultline evaluate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from detector import testing as t
from detector.alerts import ESCALATION, ISOLATION, FiredAlert, Label, Scope
from detector.cli import main
from replay.evaluation.baselines import PrometheusRules, StragglerScore
from replay.evaluation.corpus import LogRecipe, build_corpus, parse_seeds, read_manifest
from replay.evaluation.ettr import EttrModel, FaultOutcome, estimate
from replay.evaluation.score import combine, score
from replay.log import read_records

T0 = t.T0
TOPO = "topologies/h100-128.topo"
# 16 GPUs on two nodes: TP 4 x DP 4, so every peer group has four replicas
FAULTY = LogRecipe("tiny-faults", TOPO, "node-[000-001]", 4, 1, 4, 300.0,
                   faults=("hbm_dbe", "sdc_checksum"), benign=("spike", "app_xid"))
HEALTHY = LogRecipe("tiny-healthy", TOPO, "node-[002-003]", 4, 1, 4, 200.0,
                    benign=("spike",))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    build_corpus(out, [FAULTY, HEALTHY], [41, 42], scale="test", workers=1)
    return out


def fired(alert) -> FiredAlert:  # noqa: ANN001 - an Alert
    return FiredAlert.from_record(alert.topic, alert.to_dict())


# -- the corpus ----------------------------------------------------------------------------


def test_manifest_round_trips_and_matches_the_logs_labels(corpus: Path) -> None:
    man = read_manifest(corpus)
    assert man["seeds"] == [41, 42]
    assert [e["name"] for e in man["logs"]] == ["tiny-faults", "tiny-healthy"]
    faulty, healthy = man["logs"]
    assert faulty["topology"] == TOPO and faulty["topology_name"] == "h100-128"
    assert faulty["job"]["gpus"] == 16 and healthy["faults"] == [] and healthy["healthy"]
    labels = [r.value for r in read_records(corpus / faulty["file"]) if r.topic == "labels"]
    assert sorted(lab["fault_id"] for lab in labels) == sorted(
        f["fault_id"] for f in faulty["faults"])
    assert {f["kind"] for f in faulty["faults"]} == {"hbm_dbe", "sdc_checksum"}
    assert all(f["shape"] == "step" and 0.03 <= f["magnitude"] <= 0.3
               for f in faulty["faults"])


def test_manifest_and_seed_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="corpus.json"):
        read_manifest(tmp_path)
    (tmp_path / "corpus.json").write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="not a faultline-corpus"):
        read_manifest(tmp_path)
    assert parse_seeds("3..5") == [3, 4, 5] and parse_seeds("7,9") == [7, 9]
    with pytest.raises(ValueError, match="--seeds"):
        parse_seeds("5..3")
    with pytest.raises(ValueError, match="needs as many seeds"):
        build_corpus(tmp_path, [FAULTY, HEALTHY], [1], workers=1)


# -- combining scorecards ------------------------------------------------------------------


def _label(fid: str, start: float) -> Label:
    return Label(fid, "hardware", "gpu_memory", Scope.of_gpu("node-001", 2), T0 + start,
                 T0 + start + 10, True)


def _alert(key: str, at: float) -> FiredAlert:
    return FiredAlert.from_record(ISOLATION, {
        "dedup_key": key, "status": "firing", "kind": "hardware", "cause": "gpu_memory",
        "scope": {"level": "gpu", "node": "node-001", "gpu": 2}, "onset_ts": T0 + at,
        "detected_ts": T0 + at})


def test_combined_scorecards_score_each_log_alone_then_pool() -> None:
    # Log A: a fault caught after 1 s and one missed. Log B: no fault, but an alert on the
    # same GPU at the same event time as A's missed fault - logs overlap in event time.
    a = score([_label("a1", 100), _label("a2", 300)], [_alert("x", 101)])
    b = score([], [_alert("y", 305)])
    c = score([_label("c1", 100)], [_alert("z", 104)])
    total = combine([a, b, c])
    assert (total.total.faults, total.total.caught, total.total.false_positives) == (3, 2, 1)
    assert total.total.problems == 3 and total.total.precision == pytest.approx(2 / 3)
    assert total.total.latency_median_s == pytest.approx(2.5)  # pooled: 1 s and 4 s
    assert total.total.latency_max_s == pytest.approx(4.0)
    assert [r.kind for r in total.rows] == ["hardware"]
    # scored as one log, B's alert would have caught A's second fault
    lumped = score([_label("a1", 100), _label("a2", 300), _label("c1", 100)],
                   [_alert("x", 101), _alert("y", 305), _alert("z", 104)])
    assert lumped.total.caught == 3


# -- the Prometheus-rule baseline ----------------------------------------------------------


def _run(det, events) -> list:  # noqa: ANN001
    out = []
    for ev in sorted(events, key=lambda e: e.ts):
        out += det.feed(ev)
    return out + det.finish()


def _thermal(node: str, gpus: int, seconds: int, hot: dict[int, tuple[int, int]] | None = None):
    for s in range(seconds):
        for g in range(gpus):
            lo, hi = (hot or {}).get(g, (-1, -1))
            yield t.thermal(T0 + s + 0.1 * g, node, g, temp_c=90.0 if lo <= s < hi else 66.0)


def test_prometheus_fires_once_on_an_xid_after_scrape_and_evaluation() -> None:
    events = list(_thermal("node-003", 4, 200))
    events.append(t.ecc(T0 + 50.3, "node-003", 2, xid=48))
    events.append(t.ecc(T0 + 51.0, "node-003", 2, xid=94))  # same GPU: the same alert
    out = _run(PrometheusRules(), events)
    firing = [a for a in out if a.status == "firing"]
    assert [(a.dedup_key, a.scope.key, a.topic) for a in firing] == [
        ("prom/GpuXidError/gpu:node-003/2", "gpu:node-003/2", ISOLATION)]
    latency = firing[0].detected_ts - (T0 + 50.3)
    assert 0.0 < latency <= 30.0  # up to one scrape interval, then up to one evaluation


def test_prometheus_fires_on_a_dbe_increase_and_temperature_needs_its_for() -> None:
    events = list(_thermal("node-001", 2, 400, hot={0: (100, 140), 1: (100, 300)}))
    for s in range(0, 400, 5):
        events.append(t.ecc(T0 + s + 0.2, "node-001", 1, dbe=1 if s >= 200 else 0))
    out = _run(PrometheusRules(), events)
    firing = {a.dedup_key: a for a in out if a.status == "firing"}
    assert set(firing) == {"prom/GpuDoubleBitError/gpu:node-001/1",
                           "prom/GpuTemperatureHigh/gpu:node-001/1"}  # GPU 0: hot for 40 s only
    dbe = firing["prom/GpuDoubleBitError/gpu:node-001/1"]
    assert 0.0 < dbe.detected_ts - (T0 + 200.2) <= 30.0 and dbe.cause == "gpu_memory"
    hot = firing["prom/GpuTemperatureHigh/gpu:node-001/1"]
    assert 60.0 <= hot.detected_ts - (T0 + 100.0) <= 60.0 + 30.0 and hot.cause == "thermal"


def test_prometheus_does_not_aggregate_a_switch() -> None:
    nodes = [f"node-{i:03d}" for i in range(4)]
    events = []
    for s in range(120):
        for n in nodes:
            down = 40 <= s < 70
            events.append(t.nic(T0 + s + 0.05, n, "mlx5_0", up=not down,
                                link_downed=1 if s >= 40 else 0))
            events.append(t.nic(T0 + s + 0.06, n, "mlx5_1"))
    out = [fired(a) for a in _run(PrometheusRules(), events)]
    firing = [a for a in out if a.status == "firing"]
    assert sorted(a.scope.key for a in firing) == [f"nic:{n}/mlx5_0:1" for n in nodes]
    switch = Label("sw", "network", "switch", Scope.of_switch("rail0-leaf0"), T0 + 40, T0 + 70,
                   True)
    card = score([switch], out)
    assert card.total.caught == 0 and card.total.false_positives == 4


# -- the straggler baseline ----------------------------------------------------------------


@pytest.mark.parametrize(("factor", "flagged"), [(1.4, True), (1.1, False)])
def test_straggler_flags_a_40pct_slow_rank_not_a_10pct_one(factor: float, flagged: bool) -> None:
    det = StragglerScore()
    out = _run(det, t.healthy_job(ranks=16, steps=250, slow={6: factor}, slow_from=20))
    firing = [a for a in out if a.status == "firing"]
    if flagged:
        assert firing and {a.scope.key for a in firing} == {"gpu:node-000/6"}
        assert all(a.topic == ESCALATION and a.kind == "slow_node" for a in firing)
        assert len({a.dedup_key for a in firing}) == 1  # one problem, re-sent per report
        assert firing[0].detected_ts - T0 == pytest.approx(60.0, abs=0.1)  # first report
    else:
        assert firing == []


# -- ETTR ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["silent_slow", "hbm_dbe", "sdc_checksum"])
def test_ettr_rises_as_detection_gets_faster(kind: str) -> None:
    m = EttrModel()
    ettrs = [estimate([FaultOutcome(kind, True, lat, 0.1)], m).ettr
             for lat in (0.0, 10.0, 300.0, 3000.0)]
    missed = estimate([FaultOutcome(kind, False, None, 0.1)], m).ettr
    assert ettrs == sorted(ettrs, reverse=True) and len(set(ettrs)) == 4
    assert ettrs[0] > missed


def test_ettr_is_one_without_faults_and_false_isolations_cost() -> None:
    m = EttrModel()
    assert estimate([], m).ettr == 1.0
    caught = [FaultOutcome("hbm_dbe", True, 0.0, 0.0)]
    assert estimate(caught, m, false_isolations=1).ettr < estimate(caught, m).ettr
    no_fp = EttrModel(count_false_isolations=False)
    assert estimate(caught, no_fp, false_isolations=1).ettr == estimate(caught, no_fp).ettr


# -- the command ---------------------------------------------------------------------------


def test_evaluate_cli_prints_one_table(corpus: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "eval.json"
    assert main(["evaluate", str(corpus), "--workers", "1", "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    assert "2 logs (1 with faults, 1 healthy), 2 faults" in text
    for needle in ("faultline, per fault kind", "hardware", "sdc", "prometheus-rules",
                   "nvidia-straggler", "per 1,000 GPU-days", "ETTR = 1 - rate",
                   "faultline: missed faults"):
        assert needle in text, needle
    data = json.loads(out_json.read_text())
    assert set(data["detectors"]) == {"faultline", "prometheus-rules", "nvidia-straggler"}
    fl = data["detectors"]["faultline"]
    assert fl["total"]["faults"] == 2 and fl["healthy"]["gpu_days"] > 0
    assert {f["sim_kind"] for f in fl["faults"]} == {"hbm_dbe", "sdc_checksum"}
    # reliability: every problem the scorer counted, once, and its precision
    rel = fl["reliability"]
    assert "confidence against observed precision" in text and "expected calibration" in text
    assert rel["problems"] == fl["total"]["problems"] > 0
    assert rel["observed"] == round(fl["total"]["precision"], 4)
    assert sum(f["problems"] for f in rel["families"]) == rel["problems"]
    assert sum(f["false"] for f in rel["families"]) == fl["total"]["false_positives"]


def test_reliability_rows_are_first_firings_and_real_by_the_scoring_rule() -> None:
    from replay.evaluation.reliability import problem_rows, summary
    lab = Label("f1", "hardware", "gpu_memory", Scope.of_gpu("n1", 0), T0, T0 + 10, True)

    def alert(key: str, node: str, status: str, conf: float) -> FiredAlert:
        return FiredAlert.from_record(ISOLATION, {
            "dedup_key": key, "status": status, "kind": "hardware", "cause": "gpu_memory",
            "scope": {"level": "gpu", "node": node, "gpu": 0}, "onset_ts": T0 + 1,
            "detected_ts": T0 + 1, "confidence": conf,
            "evidence": {"raw_confidence": 0.5, "conditions": {"topology": "full"}}})
    alerts = [alert("a", "n1", "firing", 0.9), alert("a", "n1", "firing", 0.2),
              alert("a", "n1", "resolved", 0.1), alert("b", "n2", "firing", 0.8),
              alert("c", "n3", "resolved", 0.7)]  # a resolution alone is no problem
    card = score([lab], alerts)
    rows = problem_rows(alerts, card.false_positives, "log")
    assert [(r["dedup_key"], r["confidence"], r["raw"], r["real"]) for r in rows] == [
        ("a", 0.9, 0.5, True), ("b", 0.8, 0.5, False)]
    s = summary(rows, ("topology",))
    assert (s["problems"], s["observed"], s["families"][0]["topology"]) == (2, 0.5, "full")
    assert s["brier"] == round((0.1 ** 2 + 0.8 ** 2) / 2, 4)


def test_evaluate_cli_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate"]) == 2
    assert main(["evaluate", "--build", str(tmp_path / "c")]) == 2
    assert "--seeds" in capsys.readouterr().err


def test_evaluate_html_has_the_per_kind_tables_and_latency_plot(corpus: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[
                                                                    str]) -> None:
    page = tmp_path / "eval.html"
    assert main(["evaluate", str(corpus), "--workers", "1", "--no-baselines",
                 "--html", str(page)]) == 0
    assert f"wrote {page}" in capsys.readouterr().out
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text
    assert '<p class="verdict" id="verdict">faultline caught ' in text
    assert "<h2>faultline per fault kind</h2>" in text and "<td>all</td>" in text
    assert "Detection latency by simulated fault</h2><figure><svg" in text
