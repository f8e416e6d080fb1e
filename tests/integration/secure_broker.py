"""A real Kafka broker that clients reach only over SASL_SSL, with ACLs enforced.

Certificates are made on the spot with ``openssl`` (a throwaway CA and a
broker certificate for 127.0.0.1, put in a PKCS12 keystore); users are SASL
PLAIN users of the broker's JAAS configuration.  ``StandardAuthorizer`` with
``allow.everyone.if.no.acl.found=false``: a user can do only what an ACL
grants.  The broker's own PLAINTEXT listener (inter-broker traffic, the
readiness check) and its controller listener are the super user ``ANONYMOUS``;
clients are never given them.
"""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path
from typing import Any

from conftest import _load_broker_module

_broker = _load_broker_module()

STORE_PASSWORD = "faultline-test-store"


def make_certificates(d: Path) -> tuple[Path, Path]:
    """A CA (``ca.pem``) and the broker's PKCS12 keystore signed by it."""
    d.mkdir(parents=True, exist_ok=True)

    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=faultline-test-ca")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key", "-out", "broker.csr",
        "-subj", "/CN=127.0.0.1")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ssl("x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "broker.pem", "-days", "2", "-extfile", "san.ext")
    ssl("pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key", "-certfile", "ca.pem",
        "-out", "broker.p12", "-passout", f"pass:{STORE_PASSWORD}", "-name", "broker")
    return d / "ca.pem", d / "broker.p12"


class SecureBroker(_broker.KafkaBroker):  # type: ignore[misc, name-defined]
    """``bootstrap`` is the SASL_SSL listener; ``users`` name -> password (``admin`` is super)."""

    def __init__(self, data_dir: Path, users: list[str]) -> None:
        super().__init__(data_dir)
        self.users = {u: f"{u}-{secrets.token_hex(12)}" for u in ["admin", *users]}
        self.ca: Path | None = None

    def _launch(self, java: str, libs: Path) -> None:
        d = self.data_dir
        assert d is not None
        self.ca, keystore = make_certificates(d / "tls")
        sasl_port, internal_port, controller_port = _broker._free_ports(3)
        jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="admin" password="{self.users["admin"]}" '
                + " ".join(f'user_{u}="{p}"' for u, p in self.users.items()) + ";")
        props = d / "server.properties"
        props.write_text(f"""\
process.roles=broker,controller
node.id={_broker.NODE_ID}
controller.quorum.voters={_broker.NODE_ID}@127.0.0.1:{controller_port}
listeners=SASL_SSL://127.0.0.1:{sasl_port},INTERNAL://127.0.0.1:{internal_port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=SASL_SSL://127.0.0.1:{sasl_port},INTERNAL://127.0.0.1:{internal_port}
listener.security.protocol.map=SASL_SSL:SASL_SSL,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=INTERNAL
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_ssl.plain.sasl.jaas.config={jaas}
ssl.keystore.type=PKCS12
ssl.keystore.location={keystore}
ssl.keystore.password={STORE_PASSWORD}
ssl.key.password={STORE_PASSWORD}
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:admin;User:ANONYMOUS
log.dirs={d / "kafka-logs"}
auto.create.topics.enable=false
""" + _broker.SINGLE_NODE_PROPERTIES)
        (d / "log4j2.xml").write_text(_broker._LOG4J2.format(
            log=_broker._xml_attr(str(d / "broker.log"))))
        jvm = [java, f"-Xmx{self.heap}", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={d / 'log4j2.xml'}", f"-Dkafka.logs.dir={d}",
               "-cp", str(libs / "*")]
        fmt = subprocess.run(
            [*jvm, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "kafka.tools.StorageTool",
             "format", "-t", _broker._cluster_id(), "-c", str(props)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, cwd=d)
        if fmt.returncode != 0:
            raise _broker.BrokerError(f"format failed:\n{fmt.stdout}{fmt.stderr}")
        with open(d / "broker.out", "wb") as out:
            self._proc = subprocess.Popen(
                [*jvm, "-XX:+UseG1GC", "kafka.Kafka", str(props)], stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, cwd=d, start_new_session=True)
        self._wait_ready(f"127.0.0.1:{internal_port}")
        self._bootstrap = f"127.0.0.1:{sasl_port}"

    def client(self, user: str) -> dict[str, Any]:
        """confluent-kafka settings of ``user`` over SASL_SSL."""
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN", "sasl.username": user,
                "sasl.password": self.users[user], "ssl.ca.location": str(self.ca)}

    def env(self, user: str) -> dict[str, str]:
        """faultline's settings of ``user`` over SASL_SSL, as environment variables."""
        return {"FAULTLINE_BOOTSTRAP_SERVERS": self.bootstrap,
                "FAULTLINE_SECURITY_PROTOCOL": "SASL_SSL", "FAULTLINE_SASL_MECHANISM": "PLAIN",
                "FAULTLINE_SASL_USERNAME": user, "FAULTLINE_SASL_PASSWORD": self.users[user],
                "FAULTLINE_SSL_CAFILE": str(self.ca)}
