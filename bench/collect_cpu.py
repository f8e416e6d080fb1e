"""CPU the collector spends per scrape of one node (8 GPUs, 8 IB ports), on this machine.

The exporters run in processes of their own — a dcgm-exporter double serving
dcgm-exporter's page for 8 GPUs (the fields faultline maps plus the usual
others, as a real page has), and Debian's node_exporter (or, with --sysfs-only,
no exporter: the collector reads the sysfs tree) — so the figure is the
agent's own CPU: fetch, parse with prometheus_client, map, serialise, hand to
the sink (an incident log on /dev/null).  Also the cost of parsing the whole
dcgm page without the line filter, to show what the filter saves.

    python bench/collect_cpu.py [--scrapes 200]
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prometheus_client import CollectorRegistry  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from detector.collect.agent import CollectMetrics, Collector, http_get  # noqa: E402
from detector.collect.exposition import parse_samples  # noqa: E402
from detector.collect.fields import DCGM_METRICS  # noqa: E402
from detector.collect.sinks import LogSink  # noqa: E402
from detector.collect.testing import write_ib_port  # noqa: E402

DOUBLE = """
import sys, time
sys.path.insert(0, {root!r})
from detector.collect.testing import DcgmDouble, DcgmState, DCGM_FIELDS
# a real page also carries fields faultline does not map: DCP profiling, clocks, energy
for i in range(20):
    DCGM_FIELDS[f"DCGM_FI_PROF_EXTRA_{{i}}"] = ("gauge", "profiling field", 0.5)
d = DcgmDouble(DcgmState(gpus=8), port={port})
print("ready", flush=True)
time.sleep(3600)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 30
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while True:
        try:
            with opener.open(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scrapes", type=int, default=200)
    ap.add_argument("--sysfs-only", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="collect-bench-") as tmp:
        sysfs = Path(tmp) / "sys"
        for k in range(8):
            write_ib_port(sysfs, f"mlx5_{k}", hw_counters={"np_cnp_sent": 5})
        try:
            dport = free_port()
            procs.append(subprocess.Popen([sys.executable, "-c", DOUBLE.format(
                root=str(ROOT), port=dport)], stdout=subprocess.PIPE))
            dcgm_url = f"http://127.0.0.1:{dport}/metrics"
            wait_up(dcgm_url)
            ne_url = None
            exporter = shutil.which("prometheus-node-exporter")
            if exporter and not args.sysfs_only:
                nport = free_port()
                procs.append(subprocess.Popen([
                    exporter, f"--path.sysfs={sysfs}", f"--web.listen-address=127.0.0.1:{nport}",
                    "--log.level=error"], stderr=subprocess.DEVNULL))
                ne_url = f"http://127.0.0.1:{nport}/metrics"  # all default collectors on
                wait_up(ne_url)
            sink = LogSink("/dev/null")
            c = Collector("node-000", sink, CollectMetrics(CollectorRegistry()),
                          dcgm_url=dcgm_url, node_exporter_url=ne_url,
                          sysfs=None if ne_url else str(sysfs), interval_s=1.0)
            msgs = len(c.tick())
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(args.scrapes):
                c.tick()
            cpu = (time.process_time() - cpu0) / args.scrapes
            wall = (time.perf_counter() - wall0) / args.scrapes
            page = http_get(dcgm_url, 5)
            t0 = time.process_time()
            for _ in range(20):
                list(text_string_to_metric_families(page))
            unfiltered = (time.process_time() - t0) / 20
            t0 = time.process_time()
            for _ in range(20):
                parse_samples(page, DCGM_METRICS)
            filtered = (time.process_time() - t0) / 20
            ne_all = ne_ib = None
            if ne_url:
                ne_all = len(http_get(ne_url, 5))
                ne_ib = len(http_get(ne_url + "?collect%5B%5D=infiniband", 5))
            sink.close()
        finally:
            for p in procs:
                p.terminate()
                p.wait(10)
    res = {"scrapes": args.scrapes, "messages_per_scrape": msgs,
           "nic_source": "node_exporter" if ne_url else "sysfs",
           "cpu_ms_per_scrape": round(cpu * 1e3, 2), "wall_ms_per_scrape": round(wall * 1e3, 2),
           "dcgm_page_bytes": len(page), "dcgm_parse_ms_whole_page": round(unfiltered * 1e3, 2),
           "dcgm_parse_ms_filtered": round(filtered * 1e3, 2),
           "node_exporter_page_bytes_all": ne_all, "node_exporter_page_bytes_infiniband": ne_ib}
    print(f"collector: {res['cpu_ms_per_scrape']} ms CPU ({res['wall_ms_per_scrape']} ms wall) "
          f"per scrape of 8 GPUs + 8 IB ports via {res['nic_source']}, {msgs} messages; "
          f"at a 10 s interval {res['cpu_ms_per_scrape'] / 100:.2f} % of one core")
    print(f"dcgm page {len(page):,} bytes: parse {res['dcgm_parse_ms_whole_page']} ms whole, "
          f"{res['dcgm_parse_ms_filtered']} ms with the line filter")
    if ne_url:
        print(f"node_exporter page {ne_all:,} bytes with all default collectors, "
              f"{ne_ib:,} asking for infiniband alone")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
