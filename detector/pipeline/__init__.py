"""The staged pipeline of the service, Kafka-free: telemetry partitions to findings
(:mod:`detector.pipeline.source`), findings to alerts in event-time order
(:mod:`detector.pipeline.correlator`).  The Faust adapter in
:mod:`detector.service` hands batches over and produces what they return."""
