"""BrokerConnection: correlation, pipelining, ApiVersions fallback, broken and wrong-protocol peers.

A scripted fake broker (an asyncio server speaking frames through wire/framing.py)
plays the cases a real broker does not produce on demand: answers out of order,
an ApiVersions of an older Kafka, a connection that dies with requests in flight.
TLS cases run against the sandbox's TLS listener with throw-away certificates.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_response_schema

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.connect.tls_settings import TlsSettings
from kshare_cli.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    ExitCode,
    IncompatibleBroker,
    exit_code_for,
)
from kshare_cli.kafka.api_keys import API_VERSIONS, FIND_COORDINATOR
from kshare_cli.sandbox.framing import Request, decode_request, encode_response
from kshare_cli.wire.build import build
from kshare_cli.wire.client import KafkaClient
from kshare_cli.wire.connection import BrokerConnection, looks_like_tls, not_kafka_detail
from kshare_cli.wire.errors import ConnectionLost, NotKafka
from kshare_cli.wire.framing import read_frame
from kshare_cli.wire.framing import request_schema as request_type
from tests.support.sandbox_thread import SandboxThread
from tests.support.tls import SecureSandbox, TlsMaterial
from tests.support.waiting import PROMPTLY_S
from tests.wire.conftest import run

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def api_versions_answer(
    request: Request, ranges: dict[int, tuple[int, int]], code: int = 0
) -> bytes:
    version = 0 if code == 35 else request.api_version
    body = {
        "error_code": code,
        "api_keys": [
            {"api_key": key, "min_version": low, "max_version": high}
            for key, (low, high) in sorted(ranges.items())
        ],
        "throttle_time": 0,
    }
    return encode_response(build(load_response_schema(API_VERSIONS, version), body),
                           request.correlation_id)  # fmt: skip


def coordinator_answer(request: Request) -> bytes:
    key = request.payload.coordinator_keys[0]
    body = {
        "throttle_time": 0,
        "coordinators": [
            {
                "key": key,
                "node_id": 1,
                "host": "h",
                "port": 1,
                "error_code": 0,
                "error_message": None,
            }
        ],
    }
    schema = load_response_schema(FIND_COORDINATOR, request.api_version)
    return encode_response(build(schema, body), request.correlation_id)


RANGES = {API_VERSIONS: (0, 4), FIND_COORDINATOR: (0, 6)}


async def next_request(reader: asyncio.StreamReader) -> Request | None:
    frame = await read_frame(reader)
    return None if frame is None else decode_request(frame)


@asynccontextmanager
async def fake_broker(script: Script) -> AsyncIterator[tuple[str, int]]:
    """A one-script broker on a free port; every connection it accepted is closed at exit."""
    writers: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        try:
            await script(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield "127.0.0.1", int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await asyncio.sleep(0)


def find(connection: BrokerConnection, key: str) -> Awaitable[Any]:
    payload = build(request_type(FIND_COORDINATOR, 6), {"key_type": 0, "coordinator_keys": [key]})
    return connection.send(payload)


# -- correlation and pipelining -----------------------------------------------------


def test_answers_are_matched_by_correlation_id_not_by_arrival_order() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await next_request(reader)
        assert request is not None
        writer.write(api_versions_answer(request, RANGES))
        held = []
        for _ in range(5):
            request = await next_request(reader)
            assert request is not None
            held.append(request)
        for request in reversed(held):
            writer.write(coordinator_answer(request))
        await writer.drain()
        await reader.read()

    async def scenario() -> None:
        async with fake_broker(script) as (host, port):
            connection = await BrokerConnection.open(host, port)
            keys = [f"group-{i}" for i in range(5)]
            answers = await asyncio.gather(*(find(connection, key) for key in keys))
            assert [a.coordinators[0].key for a in answers] == keys
            assert connection.in_flight == 0
            await connection.close()

    run(scenario())


def test_an_older_broker_gets_the_apiversions_version_it_speaks() -> None:
    seen: list[int] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        old = {API_VERSIONS: (0, 2), FIND_COORDINATOR: (0, 3)}
        while (request := await next_request(reader)) is not None:
            seen.append(request.api_version)
            code = 35 if request.api_version > 2 else 0  # UNSUPPORTED_VERSION, answered in v0
            writer.write(api_versions_answer(request, old, code))

    async def scenario() -> None:
        async with fake_broker(script) as (host, port):
            connection = await BrokerConnection.open(host, port)
            assert seen == [4, 2]
            assert dict(connection.api_versions.ranges) == {18: (0, 2), 10: (0, 3)}
            assert connection.api_versions.choose(FIND_COORDINATOR) == 3
            await connection.close()

    run(scenario())


def test_a_dying_connection_fails_every_pending_request_and_later_ones() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await next_request(reader)
        assert request is not None
        writer.write(api_versions_answer(request, RANGES))
        for _ in range(3):
            await next_request(reader)
        writer.close()

    async def scenario() -> None:
        async with fake_broker(script) as (host, port):
            connection = await BrokerConnection.open(host, port)
            outcomes = await asyncio.gather(
                *(find(connection, f"g{i}") for i in range(3)), return_exceptions=True
            )
            assert all(isinstance(o, ConnectionLost) for o in outcomes), outcomes
            assert f"{host}:{port} closed the connection" in str(outcomes[0])
            assert connection.closed
            with pytest.raises(ConnectionLost):
                await find(connection, "later")
            await connection.close()

    run(scenario())


def test_the_late_answer_to_an_abandoned_request_is_dropped() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await next_request(reader)
        assert request is not None
        writer.write(api_versions_answer(request, RANGES))
        first = await next_request(reader)
        second = await next_request(reader)
        assert first is not None and second is not None
        writer.write(coordinator_answer(first))  # after the client gave up on it
        writer.write(coordinator_answer(second))
        await reader.read()

    async def scenario() -> None:
        async with fake_broker(script) as (host, port):
            connection = await BrokerConnection.open(host, port)
            abandoned = asyncio.ensure_future(find(connection, "abandoned"))
            await asyncio.sleep(0)
            abandoned.cancel()
            answer = await find(connection, "wanted")
            assert answer.coordinators[0].key == "wanted"
            assert not connection.closed
            await connection.close()

    run(scenario())


def test_an_undecodable_answer_fails_its_request_only() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await next_request(reader)
        assert request is not None
        writer.write(api_versions_answer(request, RANGES))
        broken = await next_request(reader)
        assert broken is not None
        body = struct.pack(">i", broken.correlation_id) + b"\x00\xff\xff"
        writer.write(struct.pack(">i", len(body)) + body)
        good = await next_request(reader)
        assert good is not None
        writer.write(coordinator_answer(good))
        await reader.read()

    async def scenario() -> None:
        async with fake_broker(script) as (host, port):
            connection = await BrokerConnection.open(host, port)
            with pytest.raises(IncompatibleBroker, match="cannot decode"):
                await find(connection, "broken")
            assert (await find(connection, "good")).coordinators[0].key == "good"
            await connection.close()

    run(scenario())


def _answering(first_bytes: bytes, *, then_wait: bool = True) -> Script:
    """A peer that reads the request, sends ``first_bytes`` and keeps the connection open."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(10)
        writer.write(first_bytes)
        await writer.drain()
        if then_wait:
            await reader.read()  # until the client hangs up

    return script


async def _not_kafka(script: Script, handshake_timeout_s: float = 30.0) -> str:
    """Open a connection to ``script``'s peer; the NotKafka it fails with, as one line.

    The handshake bound is 30 s unless a test names its own: "promptly" is then far
    from any timeout."""
    async with fake_broker(script) as (host, port):
        started = time.monotonic()
        with pytest.raises(NotKafka) as raised:
            await asyncio.wait_for(
                BrokerConnection.open(host, port, handshake_timeout_s=handshake_timeout_s), 60
            )
        message = _one_line_within(raised.value, started)
        assert message.startswith(f"{host}:{port} does not answer as a Kafka broker: ")
        assert exit_code_for(raised.value) is ExitCode.CONNECTION
        return message


def test_a_peer_that_is_not_kafka_is_reported_not_misread() -> None:
    """HTTP/1.1 read as a size is 1.2 GB: the client says what it is instead of waiting for it."""
    message = run(_not_kafka(_answering(b"HTTP/1.1 400 Bad Request\r\nServer: nginx\r\n\r\n")))
    assert message.endswith('it answered with HTTP ("HTTP/1.1 400 Bad Request"): an HTTP server')


def test_a_handshake_answer_over_a_megabyte_is_not_waited_for() -> None:
    """No ApiVersions answer comes near 1 MiB: a 2 MiB prefix is proof enough, not a wait."""
    message = run(_not_kafka(_answering(struct.pack(">i", 2 * 1024 * 1024) + b"\0" * 16)))
    assert message.endswith(
        "its answer starts 00 20 00 00 00 00 00 00, which no Kafka response does"
    )


def test_a_handshake_answer_to_a_request_never_sent_is_not_kafka() -> None:
    frame = struct.pack(">ii", 4, 12345)  # a well-sized frame, correlation id 12345
    message = run(_not_kafka(_answering(frame)))
    assert "00 00 00 04 00 00 30 39" in message


def test_a_tls_alert_to_a_plaintext_client_gets_the_tls_hint() -> None:
    """What a Java (Kafka) TLS listener sends to a plaintext client: a fatal alert record."""
    message = run(_not_kafka(_answering(b"\x15\x03\x03\x00\x02\x02\x50", then_wait=False)))
    assert message.endswith(
        "it answered with TLS: a TLS listener; set security.protocol=SSL or SASL_SSL"
    )


def test_silence_past_the_handshake_bound_is_not_kafka() -> None:
    message = run(_not_kafka(_answering(b""), handshake_timeout_s=0.3))
    assert message.endswith(
        "no answer to ApiVersions within 0.3 s (not a Kafka listener, or a hung broker)"
    )


def test_the_callers_shorter_deadline_still_wins_over_the_handshake_bound() -> None:
    """min(bound, deadline): a deadline that ends first is the caller's timeout, not NotKafka."""

    async def scenario() -> None:
        async with fake_broker(_answering(b"")) as (host, port):
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(BrokerConnection.open(host, port), 0.3)

    run(scenario())


@pytest.mark.parametrize(
    ("first", "detail"),
    [
        (
            b"\x15\x03\x03\x00\x02\x02\x28",
            "it answered with TLS: a TLS listener; set security.protocol=SSL or SASL_SSL",
        ),
        (
            b"\x16\x03\x01\x00\x7a\x02",
            "it answered with TLS: a TLS listener; set security.protocol=SSL or SASL_SSL",
        ),
        (
            b"HTTP/1.0 302 Found\r\nLocation: /ui\r\n",
            'it answered with HTTP ("HTTP/1.0 302 Found"): an HTTP server',
        ),
        (b"SSH-2.0-dropbear\r\n", 'it sent an SSH banner ("SSH-2.0-dropbear"): an SSH server'),
        (b"HTTP", "its answer starts 48 54 54 50, which no Kafka response does"),
        (b"\x15\x03\x09\x00", "its answer starts 15 03 09 00, which no Kafka response does"),
        (b"\x17\x03\x03\x00", "its answer starts 17 03 03 00, which no Kafka response does"),
        (
            b"-ERR unknown command\r\n",
            "its answer starts 2d 45 52 52 20 75 6e 6b, which no Kafka response does",
        ),
    ],
    ids=[
        "tls-alert",
        "tls-handshake",
        "http",
        "ssh",
        "bare-http",
        "tls-bad-version",
        "tls-app-data",
        "redis",
    ],
)
def test_what_a_non_kafka_answer_was_is_said_only_when_certain(first: bytes, detail: str) -> None:
    assert not_kafka_detail(first) == detail
    assert looks_like_tls(first) == ("TLS" in detail)


# -- TLS ------------------------------------------------------------------------------


def _one_line_within(error: BaseException, started: float) -> str:
    assert time.monotonic() - started < PROMPTLY_S
    message = str(error)
    assert "\n" not in message
    return message


def test_tls_to_a_plaintext_listener_fails_clearly_and_quickly() -> None:
    async def scenario(bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        started = time.monotonic()
        with pytest.raises(ConnectionFailed) as raised:
            await asyncio.wait_for(
                BrokerConnection.open(
                    host,
                    int(port),
                    ssl_context=ssl.create_default_context(),
                    handshake_timeout_s=30,
                ),
                60,
            )
        message = _one_line_within(raised.value, started)
        assert message.startswith(f"TLS handshake with {bootstrap} failed")
        assert "PLAINTEXT listener" in message or "TLS listener" in message

    with SandboxThread() as plaintext:
        run(scenario(plaintext.bootstrap))


def test_plaintext_to_a_tls_listener_fails_clearly_and_quickly(
    secure_sandbox: SecureSandbox,
) -> None:
    sandbox = secure_sandbox("SSL")
    host, port = sandbox.bootstrap.rsplit(":", 1)

    async def scenario() -> None:
        started = time.monotonic()
        with pytest.raises(ConnectionFailed) as raised:
            await asyncio.wait_for(
                BrokerConnection.open(host, int(port), handshake_timeout_s=30), 60
            )
        message = _one_line_within(raised.value, started)
        assert sandbox.bootstrap in message
        assert "TLS listener" in message
        assert "SSL" in message

    run(scenario())


def test_tls_with_a_trusted_certificate_negotiates(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial
) -> None:
    sandbox = secure_sandbox("SSL")
    host, port = sandbox.bootstrap.rsplit(":", 1)

    async def scenario() -> None:
        connection = await BrokerConnection.open(
            host, int(port), ssl_context=tls_material.client_context()
        )
        assert connection.api_versions.supports(FIND_COORDINATOR, 4)
        await connection.close()

    run(scenario())


def test_an_untrusted_server_certificate_is_an_authentication_failure(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial
) -> None:
    sandbox = secure_sandbox("SSL")
    host, port = sandbox.bootstrap.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(tls_material.untrusted_ca_pem))

    async def scenario() -> None:
        started = time.monotonic()
        with pytest.raises(AuthenticationFailed) as raised:
            await BrokerConnection.open(
                host, int(port), ssl_context=context, handshake_timeout_s=30
            )
        message = _one_line_within(raised.value, started)
        assert message.startswith("TLS: certificate verify failed: ")
        assert sandbox.bootstrap in message

    run(scenario())


def test_a_missing_client_certificate_is_an_authentication_failure(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial
) -> None:
    sandbox = secure_sandbox("SSL", require_client_cert=True)
    host, port = sandbox.bootstrap.rsplit(":", 1)

    async def scenario() -> None:
        with pytest.raises(AuthenticationFailed) as raised:
            await asyncio.wait_for(
                BrokerConnection.open(host, int(port), ssl_context=tls_material.client_context()),
                10,
            )
        assert "certificate" in str(raised.value)
        with_cert = tls_material.client_context(with_client_cert=True)
        connection = await BrokerConnection.open(host, int(port), ssl_context=with_cert)
        await connection.close()

    run(scenario())


def test_the_client_reports_a_certificate_failure_and_connects_with_the_right_ca(
    secure_sandbox: SecureSandbox, tls_material: TlsMaterial
) -> None:
    sandbox = secure_sandbox("SSL")

    def settings(ca: Path) -> ConnectionSettings:
        return ConnectionSettings(
            bootstrap_servers=(sandbox.bootstrap,),
            security_protocol="SSL",
            tls=TlsSettings(ca_file=ca),
        )

    async def scenario() -> None:
        with pytest.raises(AuthenticationFailed) as raised:
            await KafkaClient.connect(settings(tls_material.untrusted_ca_pem), timeout_s=10)
        assert str(raised.value) == (
            "TLS: certificate verify failed: unable to get local issuer certificate "
            f"(broker {sandbox.bootstrap})"
        )
        async with await KafkaClient.connect(settings(tls_material.ca_pem), timeout_s=10) as client:
            assert (await client.metadata([])).brokers

    run(scenario())
