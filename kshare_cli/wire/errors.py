"""Kafka's error codes as plain data, which of them are asked again, and the transport errors.

A broker reports most failures per group or per partition inside a successful
response; kshare reports them the same way (partial failure as data), so the
client hands them up as ``KafkaError`` values rather than raising. Names are
Kafka's own upper-case names (``NOT_COORDINATOR``), the ones an operator finds
in broker logs and Kafka's documentation.

Which errors are worth asking again is decided here, once, for every level the
client meets them at (a broker's whole answer, a group, a partition): the ones
Kafka classes as retriable (``is_retriable``), with the two refinements below
(``COORDINATOR_MOVED``, ``retriable_for_topic``). The client asks again only
within the command's deadline, so a retriable error that does not pass is
reported as it was last answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kio.schema.errors import ErrorCode

from kshare_cli.errors import ConnectionFailed

#: The codes the connection and SASL code test, named as Kafka names them (kio's values).
ILLEGAL_SASL_STATE: Final = ErrorCode.illegal_sasl_state
UNSUPPORTED_SASL_MECHANISM: Final = ErrorCode.unsupported_sasl_mechanism
UNSUPPORTED_VERSION: Final = ErrorCode.unsupported_version

#: Retriable per-group errors after which the group's coordinator is found again before
#: the group is asked again (the others are asked of the same coordinator).
COORDINATOR_MOVED: Final = frozenset(
    {
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
        ErrorCode.not_coordinator,
    }
)


def error_name(code: int) -> str:
    """Kafka's name for an error code; codes newer than kio get a name that shows the number."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


def is_retriable(code: int) -> bool:
    """Whether Kafka classes the error as retriable: worth asking again, within the deadline.

    Kafka's rule is its exception classes: an error is retriable when its exception
    extends ``RetriableException`` (``clients/.../common/errors/``, through
    ``InvalidMetadataException`` and ``RefreshRetriableException`` too), and its admin
    client retries those. kio's ``ErrorCode.retriable`` carries that table (for
    Kafka 4.2: the same 32 codes; ``tests/wire/test_errors.py`` holds them to it). A
    code newer than kio is not retried: nothing says it would pass.
    """
    try:
        return bool(ErrorCode(code).retriable)
    except ValueError:
        return False


def retriable_for_topic(code: int) -> bool:
    """Whether a topic-level Metadata error is worth asking again (LEADER_NOT_AVAILABLE is).

    UNKNOWN_TOPIC_OR_PARTITION is retriable, yet for a whole topic it mostly means a
    topic that does not exist (a typo, a deleted topic), and asking again would cost
    every such answer a share of the deadline: Java's admin client fails it at once
    too (Kafka 4.2 ``PartitionLeaderStrategy.handleTopicError`` for ListOffsets).
    Per partition, and from a partition's leader, it stays retriable: a topic just
    created that a broker has not learnt of yet.
    """
    return code != ErrorCode.unknown_topic_or_partition and is_retriable(code)


@dataclass(frozen=True, slots=True)
class KafkaError:
    """An error a broker reported for one group, partition or resource."""

    code: int
    name: str
    message: str | None = None

    @classmethod
    def of(cls, code: int, message: str | None = None) -> KafkaError:
        return cls(int(code), error_name(int(code)), message or None)

    @property
    def retriable(self) -> bool:
        return is_retriable(self.code)

    def __str__(self) -> str:
        return f"{self.name}: {self.message}" if self.message else self.name


class ConnectionLost(ConnectionFailed):
    """An established connection broke; the request may be retried on a new one.

    The client catches it and reconnects within its deadline; it reaches an
    operator only as a ``ConnectionFailed`` if it ever escapes.
    """


class ConnectionReplaced(ConnectionLost):
    """The client closed a connection a held request was stuck on, for a fresh one.

    The requests queued behind the held one on that connection (a broker answers a
    connection's requests in order) got no answer through no fault of their own
    group: the broker is alive, and asking again on a new connection answers them.
    """


class NotKafka(ConnectionLost):
    """The peer accepted the connection but does not answer as a Kafka broker.

    Raised while a connection opens: the first bytes back are no Kafka response
    (an HTTP status line, an SSH banner, a TLS record to a plaintext client), or
    nothing at all came back to ApiVersions within the handshake bound. It is a
    ``ConnectionFailed`` (exit 3), not a timeout, and not an ``IncompatibleBroker``:
    the client goes on to the next bootstrap server, since another one may be Kafka.
    """


class NodeLeft(ConnectionFailed):
    """A request was meant for a broker that fresh metadata no longer lists.

    Not retried on that broker: the caller plans again from the new metadata (a
    partition's new leader, a group's new coordinator), as Java's admin client
    re-plans a call whose node went away.
    """

    def __init__(self, node_id: int, address: str, cause: str | None = None) -> None:
        self.node_id = node_id
        self.address = address
        gone = "no longer in the cluster metadata"
        said = f"{cause.removeprefix(f'{address}: ')} ({gone})" if cause else gone
        super().__init__(f"broker {node_id} ({address}): {said}")


class BrokerUnreachable(ConnectionFailed):
    """A broker still in fresh metadata that kept refusing (or not answering) connections.

    Kafka keeps a dead broker in its metadata until the controller fences it
    (about 9 s); asking it again until the deadline would turn one dead broker
    into a whole command's timeout. The fan-outs report it as the failure of
    what only it could answer, naming it by id and address.
    """

    def __init__(self, node_id: int, host: str, port: int, cause: str) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        # The connection's own message starts with the address; said once is enough.
        self.cause = cause.removeprefix(f"{address}: ")
        super().__init__(f"broker {node_id} ({address}): {self.cause}")
