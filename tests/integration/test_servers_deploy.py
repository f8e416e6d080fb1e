"""deploy/ as the real tools read it: promtool, amtool, systemd, and faultline's own CLI."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from servers_harness import DEPLOY, require

from detector.cli import build_parser

pytestmark = pytest.mark.servers


def run(*argv: str, cwd: Path) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(argv)} failed:\n{out}"
    return out


def test_the_alert_rules_check_and_pass_their_unit_tests() -> None:
    promtool = require("promtool")
    d = DEPLOY / "prometheus"
    assert "SUCCESS: 9 rules found" in run(promtool, "check", "rules", "faultline-rules.yml",
                                             cwd=d)
    assert "SUCCESS" in run(promtool, "test", "rules", "faultline-rules.test.yml", cwd=d)
    run(promtool, "check", "config", "prometheus.yml", cwd=d)


def test_the_alertmanager_example_is_a_valid_configuration() -> None:
    amtool = require("amtool")
    out = run(amtool, "check-config", "alertmanager.yml", cwd=DEPLOY / "alertmanager")
    assert "SUCCESS" in out and "2 receivers" in out


def test_the_dashboard_is_importable_json() -> None:
    dash = json.loads((DEPLOY / "grafana" / "faultline-dashboard.json").read_text())
    assert dash["uid"] and dash["title"] == "faultline"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        for t in p.get("targets", []):
            assert t["datasource"]["uid"] == "${datasource}"


def _exec_args(unit: Path) -> list[str]:
    (line,) = [x for x in unit.read_text().splitlines() if x.startswith("ExecStart=")]
    argv = shlex.split(line.removeprefix("ExecStart="))
    if argv[0] == "/bin/sh":  # sh -c 'exec ... faultline serve ... $$((9463 + %i))'
        argv = shlex.split(re.sub(r"\$+\(\([^)]*\)\)", "9464", argv[2]).removeprefix("exec "))
    assert argv[0].endswith("/bin/faultline")
    return [a.replace("%i", "1") for a in argv[1:]]


@pytest.mark.parametrize("unit", ["faultline-serve@.service", "faultline-pager.service",
                                  "faultline-collect.service"])
def test_the_systemd_units_run_real_subcommands(unit: str, tmp_path: Path) -> None:
    path = DEPLOY / "systemd" / unit
    args = build_parser().parse_args(_exec_args(path))
    assert args.command in ("serve", "pager", "collect")
    analyze = shutil.which("systemd-analyze")
    if analyze is not None:  # part of systemd: on Debian, not a server to install
        copy = tmp_path / unit.replace("@.", "@1.")
        copy.write_text(path.read_text().replace("/opt/faultline/.venv/bin/faultline",
                                                 sys.executable))
        run(analyze, "verify", str(copy), cwd=tmp_path)
