"""``faultline collect``: a per-node agent turning what a GPU node exports into the contract.

dcgm-exporter (GPU thermal, ECC, XID), node_exporter's infiniband collector or
the ``/sys/class/infiniband`` tree itself (NIC ports, RoCE ``hw_counters``)
and the kernel log (XIDs with their own times) become ``telemetry.thermal``,
``telemetry.ecc`` and ``telemetry.nic`` messages (DESIGN.md), produced to
Kafka or written as an incident log.  The field mapping lives in
:mod:`detector.collect.fields` so the Prometheus importer shares it.
"""
