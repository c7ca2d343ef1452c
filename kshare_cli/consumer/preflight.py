"""What ``kshare consume`` checks before it joins a share group.

librdkafka's share consumer says nothing about a topic that does not exist: it
joins the group (creating it) and waits forever. Kafka's console share consumer
does the same. So before subscribing, one metadata request through a
confluent-kafka AdminClient on the same configuration settles the questions an
operator needs answered with an exit code: can the cluster be reached (3), do
the credentials work (3), does every topic exist (5), may we read it (1).

The same client reads the delivery limit for ``--interactive``: the group's
``share.delivery.count.limit`` (a group config from Kafka 4.3) or else the
broker's ``group.share.delivery.count.limit``. A cluster that answers neither
(librdkafka's mock has no DescribeConfigs) gets Kafka's default, 5, and the
prompt says the limit was assumed.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from kshare_cli.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    KshareError,
    NotFound,
    Refused,
    TimedOut,
    UsageError,
)

if TYPE_CHECKING:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

    # Public as confluent_kafka.admin.ClusterMetadata, re-exported without __all__.
    from confluent_kafka.admin._metadata import ClusterMetadata

    from kshare_cli.wire.diagnose import Diagnose

#: librdkafka's error text to the control plane's diagnosis (``Diagnose``, time bound set).
Explain = Callable[[str], "KshareError | None"]

__all__ = [
    "DEFAULT_DELIVERY_LIMIT",
    "DeliveryLimit",
    "MetadataClient",
    "Preflight",
    "check_cluster",
    "is_authentication_error",
    "raise_for_client_error",
    "raise_for_client_errors",
    "topic_partitions",
]

#: Kafka's ``group.share.delivery.count.limit`` default (4.1 to 4.3).
DEFAULT_DELIVERY_LIMIT: Final = 5
_GROUP_LIMIT: Final = "share.delivery.count.limit"
_BROKER_LIMIT: Final = "group.share.delivery.count.limit"
# One metadata request is retried in slices this long, so an unreachable or refusing
# cluster is reported as soon as librdkafka knows, not when the whole budget is spent.
_SLICE_S: Final = 0.25

#: Properties of the consumer that an AdminClient refuses or must not inherit.
_CONSUMER_ONLY: Final = frozenset(
    {
        "group.id",
        "share.acknowledgement.mode",
        "max.poll.records",
        "max.poll.interval.ms",
        "fetch.wait.max.ms",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "group.protocol",
        "auto.offset.reset",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "check.crcs",
        "isolation.level",
        "client.rack",
    }
)


@dataclass(frozen=True, slots=True)
class DeliveryLimit:
    """How many deliveries a record gets before the broker archives it, and whence we know."""

    limit: int
    source: str
    assumed: bool = False


@dataclass(frozen=True, slots=True)
class Preflight:
    """What the checks found: the topics' partition counts, the delivery limit if asked."""

    partitions: Mapping[str, int]
    delivery_limit: DeliveryLimit | None = None


class _Errors:
    """librdkafka's client-level errors (``error_cb``), the last one kept for messages."""

    def __init__(self) -> None:
        self.seen: list[KafkaError] = []

    def __call__(self, error: KafkaError) -> None:
        self.seen.append(error)


def admin_config(consumer_config: Mapping[str, object]) -> dict[str, object]:
    """The consumer's configuration minus what only consumers take: same cluster, TLS, SASL."""
    config = {key: value for key, value in consumer_config.items() if key not in _CONSUMER_ONLY}
    config["allow.auto.create.topics"] = "false"  # a metadata request must not create a topic
    return config


def check_cluster(
    consumer_config: Mapping[str, object],
    topics: Sequence[str],
    *,
    group_id: str,
    timeout_s: float,
    delivery_limit: bool = False,
    diagnose: Diagnose | None = None,
) -> Preflight:
    """Fail before joining when the cluster or a topic is not there; see the module docstring.

    Raises ConnectionFailed (or AuthenticationFailed) for a cluster that cannot be
    reached or refuses us, TimedOut when it does not answer within ``timeout_s``,
    NotFound for a missing topic, Refused when we may not read one.
    """
    from confluent_kafka.admin import AdminClient

    errors = _Errors()
    config = admin_config(consumer_config)
    config["error_cb"] = errors
    config.setdefault("logger", quiet_logger())
    bootstrap = str(consumer_config.get("bootstrap.servers", ""))
    try:
        admin = AdminClient(config)  # type: ignore[arg-type]  # values checked by librdkafka
    except Exception as error:  # noqa: BLE001 -- librdkafka refuses a property: say which
        raise UsageError(f"client configuration: {_describe(error)}") from None
    deadline = time.monotonic() + timeout_s
    partitions: dict[str, int] = {}
    for topic in topics:
        partitions[topic] = len(
            topic_partitions(
                admin,
                topic,
                errors.seen,
                deadline=deadline,
                bootstrap=bootstrap,
                timeout_s=timeout_s,
                diagnose=diagnose,
            )
        )
    limit = _delivery_limit(admin, group_id, deadline) if delivery_limit else None
    return Preflight(partitions, limit)


class MetadataClient(Protocol):
    """What :func:`topic_partitions` needs: an AdminClient and a Producer both qualify."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata: ...

    def poll(self, timeout: float = -1) -> int: ...


def topic_partitions(
    client: MetadataClient,
    topic: str,
    seen: Sequence[KafkaError],
    *,
    deadline: float,
    bootstrap: str,
    timeout_s: float,
    access: str = "read",
    diagnose: Diagnose | None = None,
) -> tuple[int, ...]:
    """The partition ids of ``topic``, asked in short slices until ``deadline``.

    The one home of "can the cluster be reached, and is the topic there" for the
    librdkafka commands (``consume``, ``produce``): between slices the client's
    ``error_cb`` (which appends to ``seen``) is served and read, so a refused
    connection or credentials end the wait as soon as librdkafka reports them, and
    only a cluster that never answers waits out ``timeout_s``. ``access`` names what
    the command wants of the topic in the "not authorized" message; ``diagnose``
    (see :func:`raise_for_client_errors`) words a TLS or SASL failure.
    """
    from confluent_kafka import KafkaError, KafkaException

    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimedOut(f"no metadata from {bootstrap} within {timeout_s:g} s (--timeout)")
        try:
            metadata = client.list_topics(topic, timeout=min(_SLICE_S, remaining))
        except KafkaException:
            client.poll(0)  # serves error_cb: why the metadata did not come
            raise_for_client_errors(seen, bootstrap, _until(diagnose, deadline))
            continue
        described = metadata.topics.get(topic)
        if described is None:
            raise NotFound(f"topic {topic!r} does not exist")
        error = described.error
        if error is None:
            return tuple(sorted(described.partitions))
        code = error.code()
        if code in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
            raise NotFound(f"topic {topic!r} does not exist")
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise Refused(f"not authorized to {access} topic {topic!r}")
        if code == KafkaError.TOPIC_EXCEPTION:
            raise UsageError(f"{topic!r} is not a valid topic name")
        # LEADER_NOT_AVAILABLE right after a topic was created: ask again.
        time.sleep(min(_SLICE_S, max(0.0, deadline - time.monotonic())))


def _until(diagnose: Diagnose | None, deadline: float) -> Explain | None:
    """``diagnose`` bounded by what is left until ``deadline``."""
    if diagnose is None:
        return None
    return lambda text: diagnose(text, deadline - time.monotonic())


def is_authentication_error(error: KafkaError) -> bool:
    """TLS or SASL refused us: final, unlike a broker that is down."""
    from confluent_kafka import KafkaError

    return error.code() in (
        KafkaError._AUTHENTICATION,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError._SSL,
    )


def raise_for_client_error(
    error: KafkaError, bootstrap: str, diagnose: Explain | None = None
) -> None:
    """Turn one librdkafka client error into kshare's error, if it is one worth stopping for.

    One error carries no history, so a lone "all brokers are down" is reported as
    such; :func:`raise_for_client_errors` over everything seen can say why.
    """
    from confluent_kafka import KafkaError

    raise_for_client_errors([error], bootstrap, diagnose)
    if error.code() == KafkaError._ALL_BROKERS_DOWN:
        raise ConnectionFailed(f"cannot connect to {bootstrap}: all brokers are down")


def raise_for_client_errors(
    seen: Sequence[KafkaError], bootstrap: str, diagnose: Explain | None = None
) -> None:
    """Raise kshare's error for the client errors librdkafka reported so far, if one is final.

    Refused credentials or certificates (3), authorization refused (1), a fatal
    error (3), and "all brokers are down" after connections were refused or names
    did not resolve (3, with the cause and the broker). "All brokers are down"
    with no such cause is a broker that accepted the connection and never
    answered (librdkafka gives up after ``api.version.request.timeout.ms``): not
    a refusal, so the caller keeps waiting and reports a timeout (4) at its deadline.

    ``diagnose`` (``wire.diagnose.connection_check``) gives the control plane's
    words for a TLS or SASL failure, and for brokers that hung up on us after
    connecting: librdkafka's own words blame the CA for a hostname mismatch, and
    a SASL listener reached without SASL is only "all brokers are down" (its
    disconnects after ApiVersions reach no ``error_cb``). For that last case only
    a TLS or SASL diagnosis counts; anything else keeps the wait going.
    """
    from confluent_kafka import KafkaError

    for error in seen:
        if is_authentication_error(error):
            diagnosed = diagnose(error.str()) if diagnose is not None else None
            raise diagnosed or AuthenticationFailed(f"{bootstrap}: {_strip(error.str())}")
    for error in seen:
        if error.code() in (
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.GROUP_AUTHORIZATION_FAILED,
        ):
            raise Refused(f"{bootstrap}: {_strip(error.str())}")
    for error in seen:
        if error.fatal():
            raise ConnectionFailed(f"{bootstrap}: {_strip(error.str())}")
    if any(error.code() == KafkaError._ALL_BROKERS_DOWN for error in seen):
        causes = [
            error for error in seen if error.code() in (KafkaError._TRANSPORT, KafkaError._RESOLVE)
        ]
        hung_up = [error for error in causes if _REFUSED not in error.str()]
        if diagnose is not None and (hung_up or not causes):
            diagnosed = diagnose((hung_up or seen)[-1].str())
            if isinstance(diagnosed, AuthenticationFailed) or (hung_up and diagnosed):
                raise diagnosed
        if causes:
            raise ConnectionFailed(f"cannot connect to {bootstrap}: {_strip(causes[-1].str())}")


_BROKER_PREFIX: Final = re.compile(r"^\S+/\S+: ")
#: librdkafka's words for a refused connection: nothing the control plane can add.
_REFUSED: Final = "Connection refused"


def _strip(text: str) -> str:
    """librdkafka's message without its ``host:port/bootstrap:`` head and ``(after ...)`` tail."""
    head, _, tail = text.rpartition(" (after ")
    text = head if head and tail.endswith(")") else text
    return _BROKER_PREFIX.sub("", text, count=1)


def _describe(error: BaseException) -> str:
    args = getattr(error, "args", ())
    first = args[0] if args else None
    text = getattr(first, "str", None)
    if callable(text):
        return str(text())
    return str(error)


def _delivery_limit(admin: AdminClient, group_id: str, deadline: float) -> DeliveryLimit:
    """The group's delivery limit (4.3 group config, else the broker's), or Kafka's default."""
    from confluent_kafka import KafkaException

    # Re-exported without __all__, so strict mypy does not see it; the public path is this.
    from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

    timeout = max(0.5, min(5.0, deadline - time.monotonic()))
    problem = "no answer"
    try:
        metadata = admin.list_topics(timeout=timeout)
        broker = str(min(metadata.brokers)) if metadata.brokers else "0"
        resources = [
            ConfigResource(ConfigResource.Type.GROUP, group_id),
            ConfigResource(ConfigResource.Type.BROKER, broker),
        ]
        futures = admin.describe_configs(resources, request_timeout=timeout)
        answers: dict[str, str] = {}
        for resource, future in futures.items():
            try:
                entries = future.result(timeout)
            except KafkaException as error:
                problem = _describe(error)
                continue
            name = _GROUP_LIMIT if resource.restype == ConfigResource.Type.GROUP else _BROKER_LIMIT
            entry = entries.get(name)
            if entry is not None and entry.value is not None:
                answers[name] = entry.value
        for name, source in (
            (_GROUP_LIMIT, f"group config {_GROUP_LIMIT}"),
            (_BROKER_LIMIT, f"broker config {_BROKER_LIMIT}"),
        ):
            value = answers.get(name)
            if value is not None and value.strip().isdigit():
                return DeliveryLimit(int(value), source)
    except KafkaException as error:
        problem = _describe(error)
    except TimeoutError:
        problem = f"no answer within {timeout:g} s"
    return DeliveryLimit(
        DEFAULT_DELIVERY_LIMIT,
        f"Kafka's default; the cluster did not say ({problem})",
        assumed=True,
    )


def quiet_logger() -> logging.Logger:
    """librdkafka's log lines would break "one stderr line per error"; --debug passes its own."""
    logger = logging.getLogger("kshare_cli.librdkafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
    return logger
