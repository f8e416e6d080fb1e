"""hang23 (round 23): the hung-rank rule (detector.hang) on a cut of the real blind8 log whose
pool's next job paged a false hang, and on blind13's M1, which it must still page."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from detector import hang
from detector.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
# blind8 held scale-1k-s7 (/tmp/blind8/corp/held), 409-530 s after its t = 0: gpu0131's thermal
# samples, its jobs' steps and gpu0135's (whose steps set the source's scan times):
#   python -m bench.blind8.cut scale-1k-s7.jsonl.gz OUT --from 409 --to 530 --nodes gpu0131 \
#       --step-nodes gpu0131,gpu0135 --topics telemetry.step,telemetry.thermal --labels none
# ft-37f22c (TP2xDP2 on gpu0131/0-3, 0.7 s steps) ends at 447.5 s, its GPUs idle; at 515.4 s
# ft-b0075b starts on them, its first step (its layout) told at 516.1 s.  The source's look at
# 515.7 s (68 s silent) finds three of them sampled busy, gpu0131/2 not yet: main paged
# gpu0131/2 `unattributed` -- the same as ft-4d18d1 on its GPUs 4-7 at 885.7 s in the whole
# log (a cut keeps the mechanism, not the whole log's scan times).
POOL = ROOT / "tests" / "data" / "blind8-scale-1k-s7-next-job.jsonl.gz"
M1 = ROOT / "bench" / "blind13" / "cases" / "M1-rank-hang-no-page.jsonl.gz"


def _replay(log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    """The log's alerts (``faultline replay``), and each hang look's (job, what _idle_few saw)."""
    looks: list = []
    seen = hang._idle_few

    def spy(corr, job):
        found = seen(corr, job)
        looks.append((job, found))
        return found

    monkeypatch.setattr(hang, "_idle_few", spy)
    out = tmp_path / "alerts.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["replay", str(log), "--alerts-out", str(out), "--quiet"]) == 0
    return [json.loads(line)["value"] for line in out.read_text().splitlines()], looks


def test_a_pool_job_s_gpus_taken_by_the_next_job_before_its_layout_is_no_hang(
        tmp_path, monkeypatch):
    alerts, looks = _replay(POOL, tmp_path, monkeypatch)
    # The shape the rule reads was there (3 of ft-37f22c's 4 GPUs busy, one idle) ...
    assert ("ft-37f22c", ("gpu0131", [2], 4)) in looks
    # ... but those GPUs had idled 60 s after its last step: the next job's, not its peers'.
    assert [a for a in alerts if a["kind"] == "unattributed"] == []


def test_control_blind13_m1_a_rank_hung_is_still_named_at_once(tmp_path, monkeypatch):
    alerts, _ = _replay(M1, tmp_path, monkeypatch)
    hung = [a for a in alerts if a["kind"] == "unattributed" and a["status"] == "firing"]
    assert [(a["scope"]["node"], a["scope"]["gpu"], a["job"]) for a in hung] == [
        ("gr-01", 1, "el-pt")]
    # (the rank hung after its step ending at 615.0 s: named at the first look, 76 s on --
    # as before hang23 -- not a later one)
    e = hung[0]["evidence"]
    assert hang.hang_s(e["step_period_s"]) <= hung[0]["detected_ts"] - e["last_step_ts"] < (
        2 * hang.hang_s(e["step_period_s"]))
