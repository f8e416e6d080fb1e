"""The staged pipeline, Kafka-free: telemetry partitions to findings
(:mod:`detector.pipeline.source`), findings to alerts in event-time order
(:mod:`detector.pipeline.correlator`).  The Faust adapter in
:mod:`detector.service` hands batches over to a :mod:`~detector.pipeline.worker`
and produces what they return; the in-process :class:`~detector.engine.Engine`
runs one source and one correlator partition, findings passed in memory."""
