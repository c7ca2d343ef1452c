"""What ``kshare consume`` checks before it joins a share group.

librdkafka's share consumer says nothing about a topic that does not exist: it
joins the group (creating it) and waits forever. Kafka's console share consumer
does the same. So before subscribing, one metadata request through a
confluent-kafka AdminClient on the same configuration settles the questions an
operator needs answered with an exit code: can the cluster be reached (3), do
the credentials work (3), does every topic exist (5), may we describe it (6).

The delivery limit that ``--interactive`` shows is not asked here: the
services read it (``services.delivery_limits.stated_delivery_count_limit``, the control
plane), and ``services.consume`` hands it to the run. librdkafka's errors are
read as the data plane reads them everywhere (:mod:`kshare_cli.dataplane.errors`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from kshare_cli.dataplane.clients import new_admin
from kshare_cli.dataplane.errors import (
    MISSING_TOPIC,
    ErrorKind,
    Explain,
    classify,
    raise_for_client_errors,
)
from kshare_cli.errors import NotAuthorized, NotFound, TimedOut, UsageError

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

    # Public as confluent_kafka.admin.ClusterMetadata, re-exported without __all__.
    from confluent_kafka.admin._metadata import ClusterMetadata

    from kshare_cli.wire.diagnose import Diagnose

__all__ = [
    "MetadataClient",
    "Preflight",
    "admin_config",
    "check_cluster",
    "topic_partitions",
]

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
class Preflight:
    """What the checks found: the topics' partition counts."""

    partitions: Mapping[str, int]


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
    timeout_s: float,
    diagnose: Diagnose | None = None,
) -> Preflight:
    """Fail before joining when the cluster or a topic is not there; see the module docstring.

    Raises ConnectionFailed (or AuthenticationFailed) for a cluster that cannot be
    reached or refuses us, TimedOut when it does not answer within ``timeout_s``,
    NotFound for a missing topic, NotAuthorized when we may not describe one; UsageError
    for a property librdkafka refuses.
    """
    errors = _Errors()
    config = admin_config(consumer_config)
    config["error_cb"] = errors
    bootstrap = str(consumer_config.get("bootstrap.servers", ""))
    admin = new_admin(config)
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
    return Preflight(partitions)


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
    from confluent_kafka import KafkaException

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
        kind = classify(error)
        if kind in MISSING_TOPIC:
            raise NotFound(f"topic {topic!r} does not exist")
        if kind is ErrorKind.AUTHORIZATION:
            raise NotAuthorized(f"not authorized to {access} topic {topic!r}")
        if kind is ErrorKind.INVALID_TOPIC:
            raise UsageError(f"{topic!r} is not a valid topic name")
        # LEADER_NOT_AVAILABLE right after a topic was created: ask again.
        time.sleep(min(_SLICE_S, max(0.0, deadline - time.monotonic())))


def _until(diagnose: Diagnose | None, deadline: float) -> Explain | None:
    """``diagnose`` bounded by what is left until ``deadline``."""
    if diagnose is None:
        return None
    return lambda text: diagnose(text, deadline - time.monotonic())
