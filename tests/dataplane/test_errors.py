"""The one classification of librdkafka's errors, against the errors librdkafka really reports.

Each case provokes the error from a real client (a closed port, librdkafka's mock
cluster, a SASL client at a plaintext listener, a refusal injected into the
mock's Metadata answers), so a librdkafka upgrade that renumbers or rewords an
error fails here, not in an operator's terminal.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kshare_cli.dataplane.clients import new_admin, new_producer, new_reader
from kshare_cli.dataplane.errors import (
    MISSING_TOPIC,
    UNREACHABLE,
    ErrorKind,
    classify,
    configuration_refused,
    error_code,
    error_text,
    is_authentication_error,
    is_retriable,
    is_transient,
    plain_text,
    raise_for_client_error,
    raise_for_client_errors,
    refused_by_broker,
)
from kshare_cli.dataplane.logs import debug_logger, quiet_logger, with_debug_logger
from kshare_cli.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    ExitCode,
    NotAuthorized,
    UsageError,
)
from kshare_cli.kafka.api_keys import METADATA
from tests.support.rdkafka_mock import RdkafkaMockCluster


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _client_errors(config: dict[str, object], topic: str = "t") -> list[KafkaError]:
    """What error_cb reports while a reader asks for metadata on ``config``."""
    seen: list[KafkaError] = []
    reader = new_reader({**config, "error_cb": seen.append}, "test")
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(
            classify(error) is ErrorKind.ALL_BROKERS_DOWN for error in seen
        ):
            try:
                reader.list_topics(topic, timeout=0.5)
            except KafkaException:
                pass
            reader.poll(0)
    finally:
        reader.close()
    return seen


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("_PARTITION_EOF", ErrorKind.PARTITION_EOF),
        ("_AUTHENTICATION", ErrorKind.AUTHENTICATION),
        ("SASL_AUTHENTICATION_FAILED", ErrorKind.AUTHENTICATION),
        ("_SSL", ErrorKind.AUTHENTICATION),
        ("TOPIC_AUTHORIZATION_FAILED", ErrorKind.AUTHORIZATION),
        ("CLUSTER_AUTHORIZATION_FAILED", ErrorKind.AUTHORIZATION),
        ("GROUP_AUTHORIZATION_FAILED", ErrorKind.GROUP_AUTHORIZATION),
        ("_UNKNOWN_TOPIC", ErrorKind.UNKNOWN_TOPIC),
        ("UNKNOWN_TOPIC_OR_PART", ErrorKind.UNKNOWN_TOPIC_OR_PARTITION),
        ("_UNKNOWN_PARTITION", ErrorKind.UNKNOWN_PARTITION),
        ("TOPIC_EXCEPTION", ErrorKind.INVALID_TOPIC),
        ("_TRANSPORT", ErrorKind.UNREACHABLE),
        ("_RESOLVE", ErrorKind.UNREACHABLE),
        ("_ALL_BROKERS_DOWN", ErrorKind.ALL_BROKERS_DOWN),
        ("LEADER_NOT_AVAILABLE", ErrorKind.OTHER),
    ],
)
def test_the_codes_are_confluent_kafkas(name: str, kind: ErrorKind) -> None:
    """The table is written in numbers (no import of confluent_kafka); the names must agree."""
    assert classify(KafkaError(getattr(KafkaError, name))) is kind


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("INVALID_RECORD_STATE", True),  # an acknowledgement after the lock expired
        ("NOT_LEADER_FOR_PARTITION", True),
        ("SHARE_SESSION_NOT_FOUND", True),
        ("_TRANSPORT", False),  # the connection went after the request left
        ("_TIMED_OUT", False),
        ("_MSG_TIMED_OUT", False),
        ("_DESTROY", False),
        ("REQUEST_TIMED_OUT", False),  # commit_sync's word for a broker that never answered
        ("NETWORK_EXCEPTION", False),
        ("UNKNOWN", False),  # the broker's UNKNOWN_SERVER_ERROR: no telling what it did
    ],
)
def test_only_a_brokers_refusal_says_a_request_was_not_applied(name: str, refused: bool) -> None:
    error = KafkaError(getattr(KafkaError, name))
    assert refused_by_broker(error) is refused
    assert refused_by_broker(KafkaException(error)) is refused
    assert error_code(KafkaException(error)) == getattr(KafkaError, name)


@pytest.mark.parametrize(
    ("name", "retriable"),
    [
        ("NOT_LEADER_FOR_PARTITION", True),  # a watermark read of a moved partition
        ("LEADER_NOT_AVAILABLE", True),
        ("UNKNOWN_TOPIC_OR_PART", True),  # a topic a broker has not learnt of yet
        ("FENCED_LEADER_EPOCH", True),
        ("REQUEST_TIMED_OUT", True),
        ("_TRANSPORT", True),
        ("_TIMED_OUT", True),
        ("_UNKNOWN_PARTITION", True),
        ("_ALL_BROKERS_DOWN", True),
        ("TOPIC_AUTHORIZATION_FAILED", False),
        ("INVALID_RECORD_STATE", False),
        ("_SSL", False),
        ("_INVALID_ARG", False),
    ],
)
def test_retriable_is_kafkas_retriable_and_librdkafkas_transient(
    name: str, retriable: bool
) -> None:
    assert is_retriable(KafkaError(getattr(KafkaError, name))) is retriable


def test_a_fatal_error_is_never_retriable() -> None:
    assert not is_retriable(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, fatal=True))


def test_an_error_that_is_no_kafka_error_leaves_the_outcome_unknown() -> None:
    assert error_code(RuntimeError("lost")) is None
    assert not refused_by_broker(RuntimeError("lost"))
    assert not refused_by_broker(None)


def test_a_refused_connection_is_unreachable_then_a_connection_failure() -> None:
    port = _closed_port()
    bootstrap = f"127.0.0.1:{port}"
    seen = _client_errors({"bootstrap.servers": bootstrap})
    kinds = {classify(error) for error in seen}
    assert kinds == {ErrorKind.UNREACHABLE, ErrorKind.ALL_BROKERS_DOWN}
    assert kinds <= UNREACHABLE
    assert all(is_transient(error) for error in seen)
    refused = next(error for error in seen if classify(error) is ErrorKind.UNREACHABLE)
    assert refused.str().startswith(f"{bootstrap}/bootstrap: ")
    assert plain_text(refused.str()) == f"Connect to ipv4#{bootstrap} failed: Connection refused"
    with pytest.raises(ConnectionFailed) as raised:
        raise_for_client_errors(seen, bootstrap)
    assert str(raised.value) == (
        f"cannot connect to {bootstrap}: Connect to ipv4#{bootstrap} failed: Connection refused"
    )
    # One refused connection alone is not final: librdkafka tries again.
    raise_for_client_errors([refused], bootstrap)
    # "All brokers are down" alone is, when it is the only error there is to go by.
    down = next(error for error in seen if classify(error) is ErrorKind.ALL_BROKERS_DOWN)
    with pytest.raises(ConnectionFailed, match="all brokers are down"):
        raise_for_client_error(down, bootstrap)


def test_sasl_refused_is_authentication(rdkafka_mock: RdkafkaMockCluster) -> None:
    """The mock speaks no SASL: librdkafka's own refusal, final at once."""
    bootstrap = rdkafka_mock.bootstrap_servers
    seen = _client_errors(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "secret",
        }
    )
    refusals = [error for error in seen if is_authentication_error(error)]
    assert refusals
    assert not is_transient(refusals[0])
    with pytest.raises(AuthenticationFailed) as raised:
        raise_for_client_errors(seen, bootstrap)
    assert str(raised.value) == f"{bootstrap}: {plain_text(refusals[0].str())}"
    assert "SASL" in str(raised.value) and "(after" not in str(raised.value)
    # The control plane's diagnosis wins over librdkafka's words.
    better = AuthenticationFailed("the control plane's words")
    with pytest.raises(AuthenticationFailed, match="control plane"):
        raise_for_client_errors(seen, bootstrap, lambda _text: better)


def test_a_refused_topic_is_authorization(rdkafka_mock: RdkafkaMockCluster) -> None:
    rdkafka_mock.create_topic("guarded", 1)
    rdkafka_mock.push_request_errors(METADATA, [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 8)
    reader = new_reader({"bootstrap.servers": rdkafka_mock.bootstrap_servers}, "test")
    try:
        with pytest.raises(KafkaException) as raised:
            reader.list_topics("guarded", timeout=5)
    finally:
        reader.close()
    error = raised.value.args[0]
    assert classify(error) is ErrorKind.AUTHORIZATION
    assert not is_transient(error)
    with pytest.raises(NotAuthorized, match="^not authorized: cluster:9092: ") as refused:
        raise_for_client_errors([error], "cluster:9092")
    assert refused.value.exit_code == ExitCode.NOT_AUTHORIZED == 6  # as on the admin plane


def test_a_missing_topic_and_a_partitions_end(rdkafka_mock: RdkafkaMockCluster) -> None:
    rdkafka_mock.create_topic("present", 1)
    reader = new_reader(
        {"bootstrap.servers": rdkafka_mock.bootstrap_servers, "allow.auto.create.topics": False},
        "test",
        **{"enable.partition.eof": True},
    )
    try:
        metadata = reader.list_topics("absent", timeout=5)
        missing = metadata.topics["absent"].error
        assert missing is not None and classify(missing) in MISSING_TOPIC
        reader.assign([TopicPartition("present", 0, 0)])
        ends: list[ErrorKind] = []
        deadline = time.monotonic() + 5
        while not ends and time.monotonic() < deadline:
            ends = [
                classify(problem)
                for message in reader.consume(10, 0.2)
                if (problem := message.error()) is not None
            ]
    finally:
        reader.close()
    assert ends == [ErrorKind.PARTITION_EOF]


@pytest.mark.parametrize(
    ("factory", "label"),
    [
        (lambda config: new_reader(config, "test"), "client"),
        (new_producer, "producer"),
        (new_admin, "client"),
    ],
)
def test_a_refused_property_is_a_usage_error(
    factory: Callable[[dict[str, object]], object], label: str
) -> None:
    with pytest.raises(UsageError) as raised:
        factory({"bootstrap.servers": "localhost:9092", "no.such.property": "1"})
    assert str(raised.value) == (
        f'{label} configuration: No such configuration property: "no.such.property"'
    )


def test_error_text_is_librdkafkas_words() -> None:
    error = KafkaError(KafkaError._TRANSPORT, "broker:9092/1: Disconnected (after 3ms in state UP)")
    assert error_text(error) == "broker:9092/1: Disconnected (after 3ms in state UP)"
    assert error_text(KafkaException(error)) == error_text(error)
    assert error_text(ValueError("bad")) == "bad"
    assert plain_text(error.str()) == "Disconnected"
    refused = configuration_refused(KafkaException(error), "consumer")
    assert isinstance(refused, UsageError)
    oauth = configuration_refused(
        KafkaException(KafkaError(KafkaError.SASL_AUTHENTICATION_FAILED, "OAuth token not set")),
        "consumer",
    )
    assert isinstance(oauth, AuthenticationFailed)
    assert str(oauth) == "OAUTHBEARER: OAuth token not set"


def test_one_quiet_logger_and_one_debug_logger() -> None:
    quiet = quiet_logger()
    assert quiet is quiet_logger()
    assert not quiet.propagate
    assert all(isinstance(handler, logging.NullHandler) for handler in quiet.handlers)
    debug = debug_logger()
    assert debug is debug_logger() and len(debug.handlers) == 1
    formatter = debug.handlers[0].formatter
    assert formatter is not None
    record = logging.LogRecord("x", logging.DEBUG, __file__, 1, "BROKER up", None, None)
    assert formatter.format(record) == "librdkafka: BROKER up"


def test_a_debug_run_logs_to_the_debug_logger_in_a_copy_of_the_config() -> None:
    config = {"bootstrap.servers": "b:9092", "logger": quiet_logger()}
    quiet = with_debug_logger(config, debug=False)
    assert quiet == config and quiet is not config
    debugged = with_debug_logger(config, debug=True)
    assert debugged == {"bootstrap.servers": "b:9092", "logger": debug_logger()}
    assert config["logger"] is quiet_logger()
