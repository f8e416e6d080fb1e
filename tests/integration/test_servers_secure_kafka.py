"""The worker and the pager against a broker that speaks only SASL_SSL and enforces ACLs.

Each process runs as its own user with exactly the ACLs README lists for it;
an incident goes in, its alerts come out of the worker and through the pager
to a webhook.  A user that may read ``faultline.state`` but not write it is
refused when it tries.  Both processes run at ``log_level = debug`` (the
worker also with aiokafka's debug output asked for by name), and no password
appears in anything they print.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from secure_broker import SecureBroker
from servers_harness import ROOT
from service_harness import TEST_SETTINGS

from detector.alerts import ESCALATION, ISOLATION
from detector.audit import verify
from detector.events import TELEMETRY_TOPICS
from detector.logs import REDACTED
from detector.pager.testing import Receiver
from detector.service.kafka_io import DEADLETTER, FINDINGS, STATE, topic_plan
from detector.settings import Settings

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PREFIX = "sec."
GROUP = "faultline-sec"
PAGER_GROUP = "faultline-pager-sec"
R, W, D = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE

# What README's "Kafka ACLs" table says each process needs (topic names before the prefix).
WORKER_TOPICS = {**{t: (R, D) for t in TELEMETRY_TOPICS},
                 FINDINGS: (R, W, D), STATE: (R, W, D),
                 ISOLATION: (W, D), ESCALATION: (W, D), DEADLETTER: (W, D)}
PAGER_TOPICS = {ISOLATION: (R, D), ESCALATION: (R, D), "alerts.deadletter": (W, D)}


def _allow(user: str, rtype: ResourceType, name: str, op: AclOperation,
           pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW)


def acls() -> list[AclBinding]:
    out = []
    for user, topics in (("worker", WORKER_TOPICS), ("pager", PAGER_TOPICS)):
        for t, ops in topics.items():
            out += [_allow(user, ResourceType.TOPIC, PREFIX + t, op) for op in ops]
    # The worker's consumer group and Faust's groups named after it.
    out.append(_allow("worker", ResourceType.GROUP, GROUP, R, ResourcePatternType.PREFIXED))
    # Faust's leader-assignor topic, which Faust creates itself.
    out += [_allow("worker", ResourceType.TOPIC, f"{GROUP}-__assignor-__leader", op)
            for op in (AclOperation.CREATE, R, W, D)]
    out.append(_allow("pager", ResourceType.GROUP, PAGER_GROUP, R))
    out += [_allow("reader", ResourceType.TOPIC, PREFIX + STATE, op) for op in (R, D)]
    return out


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with SecureBroker(tmp_path_factory.mktemp("secure-kafka"),
                      ["worker", "pager", "reader"]) as b:
        admin = AdminClient(b.client("admin"))
        settings = Settings.load(env={**TEST_SETTINGS, "FAULTLINE_TOPIC_PREFIX": PREFIX})
        plan = {**topic_plan(settings), PREFIX + "alerts.deadletter": (1, {})}
        for f in admin.create_topics([NewTopic(n, p, 1, config=c)
                                      for n, (p, c) in plan.items()]).values():
            f.result(30)
        for f in admin.create_acls(acls()).values():
            f.result(30)
        yield b


def _start(broker: SecureBroker, user: str, args: list[str], log: Path,
           **extra: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAULTLINE_")}
    env.update(TEST_SETTINGS, PYTHONUNBUFFERED="1", FAULTLINE_TOPIC_PREFIX=PREFIX,
               FAULTLINE_LOG_LEVEL="debug", **broker.env(user), **extra)
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "detector.cli", *args], cwd=ROOT,
                                env=env, stdout=out, stderr=subprocess.STDOUT)


def test_worker_and_pager_run_as_their_own_users_over_sasl_ssl(
        broker: SecureBroker, service_incident_log: Path, tmp_path: Path) -> None:
    with Receiver() as rx:
        worker = _start(broker, "worker", ["serve", "--workdir", str(tmp_path / "w"),
                                           "--group-id", GROUP], tmp_path / "worker.log",
                        FAULTLINE_LOG_DEBUG="aiokafka",
                        FAULTLINE_AUDIT_FILE=str(tmp_path / "serve-audit.jsonl"))
        pager = _start(broker, "pager", ["pager", "--group-id", PAGER_GROUP,
                                         "--workdir", str(tmp_path / "p"),
                                         "--webhook", rx.url], tmp_path / "pager.log",
                       FAULTLINE_PAGER_AUDIT_FILE=str(tmp_path / "pager-audit.jsonl"))
        procs = [worker, pager]
        try:
            feed = subprocess.run(
                [sys.executable, "-m", "detector.cli", "replay", str(service_incident_log),
                 "--to-kafka", broker.bootstrap], cwd=ROOT, capture_output=True, timeout=120,
                env={**{k: v for k, v in os.environ.items() if not k.startswith("FAULTLINE_")},
                     **broker.env("admin"), "FAULTLINE_TOPIC_PREFIX": PREFIX})
            assert feed.returncode == 0, feed.stdout + feed.stderr

            def logs() -> str:
                return "\n".join(f"--- {p}\n" + (tmp_path / p).read_text(errors="replace")[-3000:]
                                 for p in ("worker.log", "pager.log"))

            rx.wait_for("an alert through worker, alert topic and pager", lambda reqs: reqs, 120)
            assert all(p.poll() is None for p in procs), logs()
        finally:
            for p in procs:
                p.terminate()
            codes = [p.wait(60) for p in procs]
        assert codes == [0, 0], logs()
        delivered = len(rx.requests)
    # Both audit files hold a whole chain: every alert the worker emitted, every delivery.
    serve_audit, pager_audit = verify(tmp_path / "serve-audit.jsonl"), verify(
        tmp_path / "pager-audit.jsonl")
    assert serve_audit.ok and pager_audit.ok
    kinds = [orjson.loads(x)["kind"] for x in (tmp_path / "pager-audit.jsonl").read_bytes()
             .splitlines()]
    assert kinds == ["delivered"] * delivered
    assert serve_audit.entries >= 1 and {orjson.loads(x)["kind"] for x in (
        tmp_path / "serve-audit.jsonl").read_bytes().splitlines()} == {"alert"}
    worker_log = (tmp_path / "worker.log").read_text(errors="replace")
    pager_log = (tmp_path / "pager.log").read_text(errors="replace")
    # aiokafka's debug output, asked for by name, is there (its SASL exchange included)...
    assert "SaslAuthenticateRequest" in worker_log and REDACTED in worker_log
    # ... and no library logs below INFO unless asked for.
    assert not re.search(r" DEBUG (?!aiokafka|faultline|detector)", worker_log)
    assert not re.search(r" DEBUG (?!faultline|detector)", pager_log)
    for password in broker.users.values():
        assert password not in worker_log and password not in pager_log


def test_a_user_without_write_on_the_state_topic_is_refused(broker: SecureBroker) -> None:
    errors: list[KafkaError] = []
    p = Producer({**broker.client("reader"), "message.timeout.ms": 10000})
    p.produce(PREFIX + STATE, b"snapshot", b"key",
              on_delivery=lambda err, msg: errors.append(err) if err else None)
    p.flush(20)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # The worker's user may write it.
    ok = Producer(broker.client("worker"))
    ok.produce(PREFIX + STATE, b"x", b"k")
    assert ok.flush(20) == 0
    # And a wrong password is not let in at all.
    bad = AdminClient({**broker.client("worker"), "sasl.password": "wrong"})
    with pytest.raises(KafkaException):
        bad.list_topics(timeout=5)
