"""Importers: operators' notes as labels, kcat captures as logs (Prometheus: tests/integration)."""

from __future__ import annotations

import orjson

from detector.alerts import Scope
from detector.cli.main import main
from replay.importers.kcat import KcatImport, contract_topic
from replay.importers.labels import labels_from_rows, parse_scope
from replay.log import Record, read_records, write_records
from replay.runner import replay_log


def test_every_scope_level_reads_back_from_its_printed_key():
    for scope in (Scope.of_gpu("node-7", 3), Scope.of_node("n.a-1"), Scope.of_nic("n", "mlx5_3", 1),
                  Scope.of_nic("n", "mlx5_3"), Scope.of_switch("leaf-2"), Scope.of_domain("r4"),
                  Scope.of_replica("job/x", 5), Scope.of_job("job-1")):
        assert parse_scope(scope.key) == scope


def test_bad_note_rows_are_counted_with_their_reason_and_the_rest_kept():
    recs, bad = labels_from_rows([
        "start,end,scope,kind,cause,attributable",
        "10,20,node:n1,slow_node,unknown,",
        "10,20,gpu:n1/x,hardware,gpu_hardware,",
        "10,20,node:n1,broken,thermal,",
        "10,20,rack:r1,hardware,thermal,",
        "2026-01-01 00:00:00,2026-01-01T00:01:00+00:00,node:n2,hardware,power,no"])
    assert [r["value"]["attributable"] for r in recs] == [False, False]
    assert recs[1]["value"]["start_ts"] == 1767225600.0
    assert sorted(bad) == ["line 3: invalid literal for int() with base 10: 'x'",
                           "line 4: kind must be one of slow_node, hardware, network, sdc, "
                           "unattributed", "line 5: scope 'rack:r1': unknown level 'rack'"]
    assert labels_from_rows(["start,end,kind"])[1]  # a header without scope/cause


def test_a_notes_file_of_bad_rows_is_counted_row_by_row_never_a_traceback():
    """A field over csv's 128 KiB limit raised csv.Error out of the import; a 'nan' time
    or an unprintable name went into a label that replay then refuses (room fixes, round 8)."""
    recs, bad = labels_from_rows([
        "start,end,scope,kind,cause",
        'nan,20,node:n1,hardware,power',
        '10,now-1e999h,node:n1,hardware,power',
        '10,20,"node:' + "n" * 200_000 + '",hardware,power',
        '10,20,node:n\x1b[2J,hardware,power',
        "10,20,node:n2,hardware,power"])
    assert [r["value"]["scope"] for r in recs] == [{"level": "node", "node": "n2"}]
    assert sorted(k.split(":")[0] for k in bad) == [f"line {n}" for n in (2, 3, 4, 5)]
    assert all(len(k) <= 200 for k in bad)
    _, bad = labels_from_rows(['"' + "h" * 200_000 + '",end'])
    assert list(bad) == ["header: field larger than field limit (131072)"]


def test_a_kcat_capture_is_sorted_by_event_time_with_prefixed_topics_mapped():
    def env(topic: str, value: object, offset: int) -> str:
        return orjson.dumps({"topic": topic, "partition": offset % 2, "offset": offset,
                             "key": "n1", "payload": orjson.dumps(value).decode()}).decode()

    lines = [env("dev.telemetry.ecc", {"ts": 3.0, "node": "n1", "gpu": 0, "xid": 79}, 1),
             env("dev.telemetry.thermal", {"ts": 1.0, "node": "n1", "gpu": 0}, 2),
             env("other.topic", {"ts": 2.0}, 3),
             env("dev.telemetry.ecc", [1, 2], 4),
             orjson.dumps({"topic": "dev.telemetry.ecc", "payload": None}).decode()]
    imp = KcatImport()
    recs = imp.records(lines)
    assert [(r["topic"], r["value"]["ts"]) for r in recs] == [("telemetry.thermal", 1.0),
                                                             ("telemetry.ecc", 3.0)]
    assert sum(imp.skipped.values()) == 3
    assert contract_topic("alerts.isolation") == "alerts.isolation"
    assert contract_topic("xtelemetry.step") is None


def test_import_labels_makes_a_log_replay_scores(tmp_path, capsys):
    log = tmp_path / "in.jsonl"
    write_records(log, [{"topic": "telemetry.ecc", "value": {
        "ts": 100.0 + i, "node": "n1", "gpu": 2, **({"xid": 79} if i == 5 else {})}}
        for i in range(10)])
    notes = tmp_path / "notes.csv"
    notes.write_text("start,end,scope,kind,cause\n104,110,gpu:n1/2,hardware,gpu_hardware\n")
    out = tmp_path / "out.jsonl"
    assert main(["import", "labels", str(log), "--labels", str(notes), "--out", str(out)]) == 0
    recs = [r for r in read_records(out) if isinstance(r, Record)]
    assert recs[-1].topic == "labels" and len(recs) == 11
    card = replay_log(out).scorecard()
    assert (card.total.faults, card.total.caught, card.total.attribution) == (1, 1, 1.0)


def test_import_prometheus_that_cannot_be_reached_says_so_and_exits_1(tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc = main(["import", "prometheus", "--url", f"http://127.0.0.1:{port}", "--start", "now-1h",
               "--end", "now", "--out", str(tmp_path / "x.jsonl")])
    assert rc == 1
    assert f"127.0.0.1:{port}" in capsys.readouterr().err
    assert main(["import", "prometheus", "--url", "http://x", "--start", "10", "--end", "5",
                 "--out", str(tmp_path / "y.jsonl")]) == 2  # a usage error, before any request


def test_prometheus_chunks_tile_the_range_and_shrink_for_a_large_cluster():
    from replay.importers.prometheus import PrometheusImport

    imp = PrometheusImport("http://prometheus", 1000.0, 1000.0 + 86400, step_s=15.0)
    for series, most_points in ((0, 1000), (200_000, 5)):
        imp.series = series
        chunks = imp.chunks()
        assert chunks[0][0] == imp.start and chunks[-1][1] == imp.end
        for (_, a_end), (b_start, _) in zip(chunks, chunks[1:], strict=False):
            assert b_start == a_end + imp.step_s  # every evaluation time once, none skipped
        assert max(round((e - s) / imp.step_s) + 1 for s, e in chunks) == most_points
