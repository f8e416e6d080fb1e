"""``faultline report`` opened in a real headless browser (Debian's chromium), offline.

A small labelled incident is simulated, replayed to an alerts file, and turned into the
report; chromium loads it with every host name unresolvable (so nothing may come from
a CDN), the rendered DOM must hold every alert, and a screenshot is kept under
build/test-artifacts/ for a person to look at.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from servers_harness import ROOT, require

from detector.alerts import ALERT_TOPICS, Alert
from detector.cli import main
from replay.log import Record, read_records

pytestmark = pytest.mark.servers
ARTIFACTS = ROOT / "build" / "test-artifacts"


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
         "--hide-scrollbars", f"--user-data-dir={profile}", "--no-first-run",
         "--host-resolver-rules=MAP * ~NOTFOUND", *args],
        capture_output=True, text=True, timeout=120, check=True)


def test_the_report_opens_offline_with_every_alert(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    log, alerts_file, page = (tmp_path / "incident.jsonl.gz", tmp_path / "alerts.jsonl",
                              tmp_path / "report.html")
    assert main(["simulate", "--topology", str(ROOT / "topologies" / "h100-128.topo"),
                 "--duration", "560", "--tp", "8", "--dp", "4", "--seed", "3",
                 "--faults", "hbm_dbe,nic,silent_slow,sdc_checksum,thermal",
                 "--out", str(log)]) == 0
    assert main(["replay", "--quiet", str(log), "--alerts-out", str(alerts_file)]) == 0
    assert main(["report", str(log), "--alerts", str(alerts_file), "-o", str(page)]) == 0
    verdict = capsys.readouterr().out.splitlines()[-2]
    assert re.fullmatch(r"\d+ faults? isolated, .*", verdict), verdict

    alerts = [Alert.from_record(r.topic, r.value) for r in read_records(alerts_file)
              if isinstance(r, Record) and r.topic in ALERT_TOPICS]
    assert len({a.dedup_key for a in alerts}) >= 4
    text = page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), "external resource"
    assert "<script" not in text and "<link" not in text

    dom = _chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile").stdout
    assert verdict in dom.replace("&amp;", "&")
    sections = re.findall(r'<section class="alert[^"]*" id="([^"]+)" data-dedup-key="([^"]+)" '
                          r'data-alert-ids="([^"]*)">', dom)
    assert {key for _, key, _ in sections} == {a.dedup_key for a in alerts if
                                               a.status == "firing"}
    shown_ids = {i for _, _, ids in sections for i in ids.split()}
    assert {a.id for a in alerts} <= shown_ids
    for anchor, _, _ in sections:  # each alert's signal is plotted, with its three figures
        body = dom.split(f'id="{anchor}"', 1)[1].split("</section>", 1)[0]
        assert "<svg" in body or "no step telemetry" in body, anchor
        for fact in ("detection latency", "granularity", "recovery", "rollback"):
            assert f"<th>{fact}</th>" in body, (anchor, fact)

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "incident-report.png"
    shot.unlink(missing_ok=True)
    _chromium(f"--screenshot={shot}", "--window-size=1400,2400", page.as_uri(),
              profile=tmp_path / "profile")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
