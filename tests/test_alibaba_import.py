"""Real per-worker iteration times (Alibaba PAI job 1, iterations 701-2300) imported and replayed.

The excerpt is an unchanged slice of ``job_1_norm.csv`` (clusterdata,
cluster-trace-gpu-v2020, CC BY 4.0): worker 6 becomes a straggler at iteration
~1811; workers 0-2 run a few percent slower than the rest.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from detector.cli.main import main
from replay.importers.alibaba import AlibabaImport
from replay.log import read_records
from replay.runner import replay_log

EXCERPT = Path(__file__).parent / "data" / "alibaba_job_1_excerpt.csv"


def test_the_excerpt_imports_to_contract_step_records(tmp_path: Path, capsys) -> None:
    out = tmp_path / "job1.jsonl.gz"
    assert main(["import", "alibaba", str(EXCERPT), "--out", str(out)]) == 0
    assert "wrote 1,600 step records" in capsys.readouterr().out
    values = [r.value for r in read_records(out)]
    assert len(values) == 1600 and {v["rank"] for v in values} == set(range(10))
    assert [v["ts"] for v in values] == sorted(v["ts"] for v in values)
    first = values[0]
    assert first == {"ts": first["ts"], "job": "pai-alibaba-job-1-excerpt", "step": 701,
                     "rank": 0, "node": "pai-alibaba-job-1-excerpt-w0", "gpu": 0,
                     "step_ms": first["compute_ms"], "compute_ms": first["compute_ms"]}


def test_bad_rows_are_counted_with_their_line_and_the_rest_imported(tmp_path: Path) -> None:
    imp = AlibabaImport("j")
    lines = [",worker,gpu,time,batch_time_norm", "0,0,25,1,476", "1,1,25,1,nan",
             "2,1,25", "3,2,25,1,-4", "4,3,25,1,433"]
    assert [r["value"]["rank"] for r in imp.records(lines)] == [0, 3]
    assert imp.invalid == Counter({"line 3: out of range": 1, "line 4: expected 5 columns": 1,
                                   "line 5: out of range": 1})
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    assert main(["import", "alibaba", str(bad), "--out", str(tmp_path / "x.jsonl")]) == 3


def test_a_row_the_contract_or_csv_cannot_hold_is_counted_not_imported_or_raised(
        tmp_path: Path) -> None:
    """A worker past 2^24, an iteration past 2^63, a time overflowing to inf, a field over
    csv's 128 KiB limit (csv.Error ended the import) and bytes that are not UTF-8
    (UnicodeDecodeError did) each cost their row only (room fixes, round 8)."""
    lines = [",worker,gpu,time,batch_time_norm", "0,16777216,25,1,476",
             f"1,1,25,{1 << 63},476", "2,1,25,1,1e308", '3,1,25,1,"' + "9" * 200_000 + '"',
             "4,3,25,1,433"]
    imp = AlibabaImport("j", ms_per_unit=10.0)
    assert [r["value"]["rank"] for r in imp.records(lines)] == [3]
    assert sorted(imp.invalid) == ["line 2: out of range", "line 3: out of range",
                                   "line 4: out of range",
                                   "line 5: field larger than field limit (131072)"]
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b",worker,gpu,time,batch_time_norm\n0,\xff\xfe,25,1,476\n1,3,25,1,433\n")
    out = tmp_path / "x.jsonl"
    assert main(["import", "alibaba", str(bad), "--out", str(out)]) == 3  # rows left out
    assert [r.value["rank"] for r in read_records(out)] == [3]


def test_worker_6_is_caught_and_nobody_else_is_paged(tmp_path: Path) -> None:
    out = tmp_path / "job1.jsonl"
    assert main(["import", "alibaba", str(EXCERPT), "--out", str(out)]) == 0
    res = replay_log(out)
    firing = [a for a in res.alerts if a.status == "firing"]
    # Alibaba's notes name one straggler.  Workers 0-2, ~8 % slower from the excerpt's start,
    # once fired, went quiet and fired again (the flapping); they are now learned as
    # start offsets and not paged at all, so this data no longer exercises the flap window:
    # test_issue10_regressions.py::test_a_slow_rank_that_returns_within_the_flap_window_...
    # pins that rule.
    assert {a.scope.node.rsplit("-", 1)[-1] for a in firing} == {"w6"}
    assert all(n == 1 for n in Counter(a.dedup_key for a in firing).values())
    t0 = min(r.value["ts"] for r in read_records(out)) - 701  # ts of iteration 0
    assert 1811 <= firing[0].detected_ts - t0 <= 1811 + 40  # >= 1.3x its peers from 1811
