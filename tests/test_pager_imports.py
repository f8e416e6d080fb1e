"""The pager is its own process: it must not pull in the detection service (or Faust)."""

import subprocess
import sys


def test_pager_does_not_import_the_service():
    code = ("import sys, detector.cli.pager_cmd, detector.pager.kafka_io, detector.kafka.admin\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('detector.service', 'faust',"
            " 'replay')))\n"
            "print(' '.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "", f"the pager imports {out}"
