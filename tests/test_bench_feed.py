"""The latency bench's paced feed (bench/kafka_bench.py): its shapes, the feed process that
keeps one producer for all its runs, and the log repeated in event time.

The feed is what the arrival -> alert figure starts from, so each of these must do what
the bench's report says it does: deliver every record in log order, paced, from one
long-lived producer (or a fresh one, for round 8's shape), and a repeated log that goes on
in time rather than starting over.
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import kafka_bench as kb  # noqa: E402

from detector.events import STEP, TELEMETRY_TOPICS  # noqa: E402


def _msg(topic: str, ts: float, **value: object) -> kb.Msg:
    v = {"ts": ts, "node": "node-000", **value}
    key = v.get("job" if topic == STEP else "node")
    return kb.Msg(topic, str(key).encode(), orjson.dumps(v), ts)


def _log(n: int, t0: float = 1_700_000_000.0) -> list[kb.Msg]:
    out = []
    for k in range(n):
        topic = TELEMETRY_TOPICS[k % len(TELEMETRY_TOPICS)]
        extra = {"job": "job-1", "step": 100 + k // 8, "rank": k % 4} if topic == STEP else {}
        out.append(_msg(topic, t0 + 0.01 * k, seq=k, **extra))
    return out


def test_feed_shapes_by_name_with_fields_replaced() -> None:
    dep = kb.feed_shape("deployed")
    assert (dep.linger_ms, dep.compression, dep.process, dep.fresh) == (50.0, "lz4", True, False)
    assert dep.label() == "deployed"
    old = kb.feed_shape("bench")
    assert (old.linger_ms, old.compression, old.process, old.fresh) == (5.0, "none", False, True)
    mod = kb.feed_shape("deployed:linger_ms=5,compression=none,stats=0")
    assert (mod.linger_ms, mod.compression, mod.stats, mod.process) == (5.0, "none", False, True)
    assert "linger 5 ms" in mod.label() and "no statistics" in mod.label()
    # the collectors' shape: several producers, a node's records through one; round 8's one
    assert (dep.producers, old.producers) == (2, 1)
    assert "one producer" in kb.feed_shape("deployed:producers=1").label()
    assert "2 producers" in kb.feed_shape("deployed:linger_ms=5").label()
    assert "8 producers" in kb.feed_shape("deployed:producers=8").label()
    with pytest.raises(ValueError, match="producers"):
        kb.feed_shape("bench:producers=2")  # in the bench's process: one producer
    with pytest.raises(ValueError, match="producers"):
        kb.feed_shape("deployed:producers=0")
    with pytest.raises(ValueError, match="unknown feed shape"):
        kb.feed_shape("nope")
    with pytest.raises(ValueError, match="field"):
        kb.feed_shape("deployed:lingr=5")


def test_a_repeated_log_goes_on_in_time_and_steps() -> None:
    log = _log(40)
    out = kb.repeat_log(log, 3, gap_s=1.0)
    assert len(out) == 120 and out[:40] == log
    span = log[-1].ts - log[0].ts
    ts = [m.ts for m in out]
    assert ts == sorted(ts)  # paced in order: each copy after the one before
    assert out[40].ts == pytest.approx(log[-1].ts + 1.0)
    for k in (1, 2):
        for a, b in zip(log, out[40 * k: 40 * (k + 1)], strict=True):
            va, vb = orjson.loads(a.value), orjson.loads(b.value)
            assert (b.topic, b.key) == (a.topic, a.key)
            assert vb["ts"] == pytest.approx(va["ts"] + k * (span + 1.0)) == b.ts
            assert vb["seq"] == va["seq"]  # the rest of the record unchanged
            if a.topic == STEP:
                lo, hi = 100, 100 + 39 // 8
                assert vb["step"] == va["step"] + k * (hi - lo + 1)
    steps = [orjson.loads(m.value)["step"] for m in out if m.topic == STEP]
    assert steps == sorted(steps)  # the job goes on; it does not restart
    assert kb.repeat_log(log, 1) is log


class _FakeProducer:
    """What produce() calls of a confluent-kafka Producer, keeping what it was given."""

    def __init__(self) -> None:
        self.got: list[tuple[str, bytes | None, int]] = []

    def produce(self, topic: str, value: bytes, key: bytes | None = None, **kw: object) -> None:
        self.got.append((topic, key, orjson.loads(value)["seq"]))

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0


def test_several_producers_take_a_node_each_all_its_records_in_log_order() -> None:
    """One producer for a fleet's partitions sent them in turn (librdkafka: a partition a
    produce request), so records stamped together reached Kafka up to ~0.9 s apart; the
    feed's records go through several, by key, so each writes a node's (a collector's)."""
    nodes = [f"node-{k:03d}" for k in range(16)]
    log = [kb.Msg(t, n.encode(), orjson.dumps({"ts": 1e9 + i, "seq": i}), 1e9 + i)
           for i, (t, n) in enumerate((TELEMETRY_TOPICS[i % 3], nodes[i % 16])
                                      for i in range(480))]
    fakes = [_FakeProducer() for _ in range(4)]
    kb.produce(fakes, "x.", log)  # type: ignore[arg-type]
    assert sum(len(f.got) for f in fakes) == len(log)
    owner = {}
    for k, f in enumerate(fakes):
        assert f.got, "every producer takes some nodes"
        seqs = [seq for _, _, seq in f.got]
        assert seqs == sorted(seqs)  # each in log order
        for _, key, _ in f.got:
            assert key is not None and owner.setdefault(key, k) == k  # a node: one producer
            assert kb.route(key, 4) == k
    assert kb.route(None, 4) == 0 and kb.route(b"node-001", 1) == 0
    one = _FakeProducer()
    kb.produce(one, "x.", log)  # type: ignore[arg-type]
    assert [seq for _, _, seq in one.got] == list(range(480))


@pytest.mark.kafka
def test_a_producer_of_the_feed_writes_the_partitions_its_number_names(
        kafka_bootstrap: str) -> None:
    """route() is librdkafka's partitioner's hash: with 8 partitions a topic and 8 producers,
    producer k writes partition k of every topic and nothing else -- a collector's few
    partitions, not the fleet's."""
    from confluent_kafka import Producer

    topic = f"feedroute-{uuid.uuid4().hex[:8]}"
    kb.create_topics(kafka_bootstrap, [topic], 8)
    keys = [f"node-{k:03d}".encode() for k in range(128)] + [b"job-1", b"job-2"]
    p = Producer({"bootstrap.servers": kafka_bootstrap})
    for key in keys:
        p.produce(topic, b"{}", key)
    assert p.flush(30) == 0
    got = {m.key(): m.partition() for m in kb.read_topic(kafka_bootstrap, topic)}
    assert len(got) == len(keys)
    assert {key: kb.route(key, 8) for key in keys} == got
    assert len(set(got.values())) == 8


def _read(bootstrap: str, topic: str) -> list[dict[str, object]]:
    return [orjson.loads(m.value()) for m in kb.read_topic(bootstrap, topic)]


@pytest.mark.kafka
def test_the_feed_process_keeps_one_producer_and_delivers_every_record_in_order(
        kafka_bootstrap: str) -> None:
    log = _log(400)
    with kb.FeedProcess({"log": log}) as feed:
        assert feed.proc.is_alive()
        got = []
        for shape in (kb.feed_shape("deployed"), kb.feed_shape("deployed"),
                      kb.feed_shape("deployed:fresh=1"), kb.feed_shape("deployed:fresh=1")):
            prefix = f"feedtest-{uuid.uuid4().hex[:8]}."
            kb.create_topics(kafka_bootstrap, [prefix + t for t in TELEMETRY_TOPICS], 2)
            t_before = time.time()
            # paced: 400 records over 4 s of event time at 4x, so ~1 s
            res = feed.run(shape, kafka_bootstrap, prefix, "log", 4.0, True)
            assert t_before <= res["t0"] <= t_before + 30
            assert 0.8 <= res["secs"] < 30  # paced, not at once
            got.append(res["new_producer"])
            # every 50th message's delivery, with its CreateTime-ish stamp in the feed
            assert len(res["acked"]) == 8
            assert all(res["t0"] <= a[0] <= res["t0"] + res["secs"] for a in res["acked"])
            assert res["stats"] and "int_latency" in res["stats"][-1]
            for t in TELEMETRY_TOPICS:
                seqs = [v["seq"] for v in _read(kafka_bootstrap, prefix + t)]
                want = [orjson.loads(m.value)["seq"] for m in log if m.topic == t]
                assert sorted(seqs) == want
        # the kept producer is made once; a fresh shape makes one every run
        assert got == [True, False, True, True]
    assert not feed.proc.is_alive()


@pytest.mark.kafka
def test_a_feed_process_error_is_raised_in_the_bench(kafka_bootstrap: str) -> None:
    with kb.FeedProcess({"log": _log(8)}) as feed, pytest.raises(RuntimeError,
                                                                  match="feed process"):
        feed.run(kb.feed_shape("deployed"), kafka_bootstrap, "x.", "no such feed", None, False)


@pytest.mark.kafka
@pytest.mark.parametrize("spec", ["deployed", "bench"])
def test_a_feed_alone_run_reports_the_feeds_own_delivery_times(kafka_bootstrap: str,
                                                               spec: str) -> None:
    import kafka_throughput as kt

    log = _log(400)
    with kb.FeedProcess({"log": log}) as feed, kb.Broker(kafka_bootstrap) as broker:
        r = kt.feed_alone_run(broker, log, 100.0, 2, kb.feed_shape(spec), feed, "log")
    assert r["events"] == 400 and r["feed_shape"]["name"] == spec
    assert 0.8 * 100 <= r["achieved_rate"] <= 1.2 * 100  # paced at the asked rate
    # every 50th message's produce() -> delivery report, as librdkafka timed it
    assert len(r["acked"]) == 8 and all(0 <= a[2] < 30 for a in r["acked"])
    assert r["producer_cpu_s"] > 0
    kt.feed_alone_report([{"share": 0.5, "label": "", "runs": [r]}])  # prints, no error
