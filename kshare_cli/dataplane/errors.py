"""One reading of librdkafka's errors, and the one mapping of client errors onto kshare's.

librdkafka reports trouble three ways: a ``KafkaError`` on a message (a
partition's end, a missing topic), through ``error_cb`` (a refused connection,
refused credentials, "all brokers are down") and as a ``KafkaException`` from a
call. Every data-plane reader asks the same questions of them -- is this the
end of a partition, a missing topic, a refusal, credentials, a broker that will
come back -- so :func:`classify` answers them once, by error code, and each
caller decides what the answer means for it (the state tailer words its own
"in-flight windows cannot be shown", the Spark source keeps reading through
what is transient). :func:`raise_for_client_errors` is the one mapping of
client errors onto kshare's errors and exit codes, for the commands.
:func:`is_retriable` says which failed requests are worth sending again (the
data plane's reads of offsets, ``dataplane.offsets``, ask again through them);
:func:`refused_by_broker` tells a request the broker answered with a refusal
(not applied) from one whose answer never came (applied or not: nobody knows).

The codes are librdkafka's (stable numbers, checked against confluent_kafka by
the tests), so that importing this module does not import confluent_kafka.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from kshare_cli.errors import (
    AUTHORIZATION_ERROR_CODES,
    AuthenticationFailed,
    ConnectionFailed,
    KshareError,
    NotAuthorized,
    UsageError,
)

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

__all__ = [
    "MISSING_TOPIC",
    "UNREACHABLE",
    "ErrorKind",
    "Explain",
    "classify",
    "configuration_refused",
    "error_text",
    "is_authentication_error",
    "is_authorization_error",
    "not_authorized",
    "is_retriable",
    "is_transient",
    "plain_text",
    "error_code",
    "raise_for_client_error",
    "raise_for_client_errors",
    "refused_by_broker",
]

#: librdkafka's error text to the control plane's diagnosis (``wire.diagnose``, time bound set).
Explain = Callable[[str], "KshareError | None"]


class ErrorKind(enum.Enum):
    """What a librdkafka error means to a reader, whatever client reported it."""

    PARTITION_EOF = "partition-eof"  # the end of a partition (enable.partition.eof)
    AUTHENTICATION = "authentication"  # TLS or SASL refused us: final
    AUTHORIZATION = "authorization"  # no right on a topic or the cluster: final
    GROUP_AUTHORIZATION = "group-authorization"  # no right on the group (a reader's is a dummy)
    UNKNOWN_TOPIC = "unknown-topic"  # the cluster has no such topic
    UNKNOWN_TOPIC_OR_PARTITION = "unknown-topic-or-partition"  # the broker cannot tell which
    UNKNOWN_PARTITION = "unknown-partition"  # the topic exists, the partition does not
    INVALID_TOPIC = "invalid-topic"  # not a legal topic name
    UNREACHABLE = "unreachable"  # a connection failed or a name did not resolve
    ALL_BROKERS_DOWN = "all-brokers-down"  # no broker connected (librdkafka keeps trying)
    OTHER = "other"


#: The one code :func:`configuration_refused` tells apart (a token callback's failure).
_SASL_AUTHENTICATION_FAILED: Final = 58

_KINDS: Final[dict[int, ErrorKind]] = {
    -191: ErrorKind.PARTITION_EOF,  # _PARTITION_EOF
    -169: ErrorKind.AUTHENTICATION,  # _AUTHENTICATION
    _SASL_AUTHENTICATION_FAILED: ErrorKind.AUTHENTICATION,
    -181: ErrorKind.AUTHENTICATION,  # _SSL
    29: ErrorKind.AUTHORIZATION,  # TOPIC_AUTHORIZATION_FAILED
    31: ErrorKind.AUTHORIZATION,  # CLUSTER_AUTHORIZATION_FAILED
    30: ErrorKind.GROUP_AUTHORIZATION,  # GROUP_AUTHORIZATION_FAILED
    -188: ErrorKind.UNKNOWN_TOPIC,  # _UNKNOWN_TOPIC
    3: ErrorKind.UNKNOWN_TOPIC_OR_PARTITION,  # UNKNOWN_TOPIC_OR_PART
    -190: ErrorKind.UNKNOWN_PARTITION,  # _UNKNOWN_PARTITION
    17: ErrorKind.INVALID_TOPIC,  # TOPIC_EXCEPTION
    -195: ErrorKind.UNREACHABLE,  # _TRANSPORT
    -193: ErrorKind.UNREACHABLE,  # _RESOLVE
    -187: ErrorKind.ALL_BROKERS_DOWN,  # _ALL_BROKERS_DOWN
}

#: The kinds that say a topic is not there (a metadata answer or a consumed message).
MISSING_TOPIC: Final = frozenset({ErrorKind.UNKNOWN_TOPIC, ErrorKind.UNKNOWN_TOPIC_OR_PARTITION})
#: The kinds that say the cluster could not be reached (so far: librdkafka keeps trying).
UNREACHABLE: Final = frozenset({ErrorKind.UNREACHABLE, ErrorKind.ALL_BROKERS_DOWN})

#: librdkafka's own errors that a moment may cure: a connection lost or not made yet
#: (it reconnects), a request that timed out, a topic or partition its metadata does not
#: know yet (a topic just created), a leader or coordinator being looked up.
_LOCAL_RETRIABLE: Final = frozenset(
    {
        -195,  # _TRANSPORT
        -193,  # _RESOLVE
        -187,  # _ALL_BROKERS_DOWN
        -185,  # _TIMED_OUT
        -188,  # _UNKNOWN_TOPIC
        -190,  # _UNKNOWN_PARTITION
        -182,  # _NODE_UPDATE
        -180,  # _WAIT_COORD
    }
)

#: Broker error codes that are no refusal: the request may have been applied all the same
#: (REQUEST_TIMED_OUT, NETWORK_EXCEPTION; the broker's UNKNOWN_SERVER_ERROR is -1, local).
_UNANSWERED_BROKER_CODES: Final = frozenset({7, 13})

_BROKER_PREFIX: Final = re.compile(r"^\S+/\S+: ")
#: librdkafka's words for a refused connection: nothing the control plane can add.
_REFUSED: Final = "Connection refused"


def classify(error: KafkaError) -> ErrorKind:
    """What ``error`` means to a reader; see :class:`ErrorKind`."""
    return _KINDS.get(error.code(), ErrorKind.OTHER)


def is_authentication_error(error: KafkaError) -> bool:
    """TLS or SASL refused us: final, unlike a broker that is down."""
    return classify(error) is ErrorKind.AUTHENTICATION


def is_transient(error: KafkaError) -> bool:
    """Whether librdkafka recovers from ``error`` by itself (it reconnects and retries).

    A reader keeps going through these, bounded by its own timeout, which turns a
    problem that does not go away into an error; anything else ends the read.
    """
    if error.fatal():
        return False
    return error.retriable() or classify(error) in UNREACHABLE


def error_code(error: object) -> int | None:
    """The code of a KafkaError, or of the KafkaError a KafkaException carries; else None."""
    code = getattr(error, "code", None)
    if callable(code):
        return int(code())
    args = getattr(error, "args", ())
    code = getattr(args[0], "code", None) if args else None
    return int(code()) if callable(code) else None


def refused_by_broker(error: object) -> bool:
    """Whether ``error`` is a broker's answer refusing a request, so the request was not applied.

    Only a broker's own error code (INVALID_RECORD_STATE for an acknowledgement
    after the acquisition lock expired, NOT_LEADER_OR_FOLLOWER...) says so.
    librdkafka's local errors -- a connection lost after the request left
    (``_TRANSPORT``: a broker that applied an acknowledgement and died before
    answering gives exactly this), a timeout (``_TIMED_OUT``, and the
    REQUEST_TIMED_OUT that ``commit_sync`` reports for a broker that never
    answered) -- leave it unknown whether the broker applied what was sent, and
    so does anything that is not a KafkaError.
    """
    code = error_code(error)
    return code is not None and code > 0 and code not in _UNANSWERED_BROKER_CODES


def is_retriable(error: KafkaError) -> bool:
    """Whether a request that failed with ``error`` is worth sending again, within a deadline.

    A broker's code counts as Kafka classes it (``RetriableException`` and its
    subclasses: NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION
    for a topic a broker has not learnt of yet, REQUEST_TIMED_OUT...), the table kio
    carries and the control plane's ``wire.errors.is_retriable`` reads too: librdkafka
    marks few of them ``retriable()`` (NOT_LEADER_OR_FOLLOWER from a watermark read
    is not), yet it refreshes its metadata on them, so the next request is answered.
    librdkafka's own errors count when it says so or when they are in
    :data:`_LOCAL_RETRIABLE`. A fatal error never does. Whoever asks again bounds it
    by a deadline: a topic that does not exist also answers UNKNOWN_TOPIC_OR_PARTITION.
    """
    if error.fatal():
        return False
    code = error.code()
    if code >= 0:
        from kio.schema.errors import ErrorCode  # only once an error needs the answer

        try:
            return bool(ErrorCode(code).retriable)
        except ValueError:  # newer than kio: nothing says it would pass
            return False
    return error.retriable() or code in _LOCAL_RETRIABLE


def plain_text(text: str) -> str:
    """librdkafka's message without its ``host:port/id:`` head and ``(after ...)`` tail."""
    head, _, tail = text.rpartition(" (after ")
    text = head if head and tail.endswith(")") else text
    return _BROKER_PREFIX.sub("", text, count=1)


def error_text(error: object) -> str:
    """librdkafka's own words from a KafkaError or a KafkaException; else ``str(error)``."""
    describe = getattr(error, "str", None)
    if callable(describe):
        return str(describe())
    args = getattr(error, "args", ())
    first = args[0] if args else None
    describe = getattr(first, "str", None)
    return str(describe()) if callable(describe) else str(error)


def configuration_refused(error: BaseException, what: str) -> KshareError:
    """kshare's error for a client librdkafka would not create.

    librdkafka checks every property before it creates the handle, so nothing
    connected: a usage error (exit 2) naming the property, ``what`` saying whose
    configuration it was. The exception: an OAUTHBEARER token callback that gave
    no token (the settings read it a moment before: a file being replaced),
    which is the credentials' fault (exit 3).
    """
    if isinstance(error, SystemError) and error.__cause__ is not None:
        # confluent-kafka 2.16 wraps a failed oauth_cb's "OAuth token not set" so.
        error = error.__cause__
    args = getattr(error, "args", ())
    code = getattr(args[0], "code", None) if args else None
    if callable(code) and code() == _SASL_AUTHENTICATION_FAILED:
        return AuthenticationFailed(f"OAUTHBEARER: {error_text(error)}")
    return UsageError(f"{what} configuration: {error_text(error)}")


def not_authorized(error: object, bootstrap: str) -> NotAuthorized:
    """kshare's error (exit 6) for librdkafka's TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED."""
    return NotAuthorized(f"not authorized: {bootstrap}: {plain_text(error_text(error))}")


def is_authorization_error(error: object) -> bool:
    """The cluster's ACLs refused us a topic, a group or the cluster (a KafkaError or
    a KafkaException carrying one)."""
    return error_code(error) in AUTHORIZATION_ERROR_CODES


def raise_for_client_error(
    error: KafkaError, bootstrap: str, diagnose: Explain | None = None
) -> None:
    """Turn one librdkafka client error into kshare's error, if it is one worth stopping for.

    One error carries no history, so a lone "all brokers are down" is reported as
    such; :func:`raise_for_client_errors` over everything seen can say why.
    """
    raise_for_client_errors([error], bootstrap, diagnose)
    if classify(error) is ErrorKind.ALL_BROKERS_DOWN:
        raise ConnectionFailed(f"cannot connect to {bootstrap}: all brokers are down")


def raise_for_client_errors(
    seen: Sequence[KafkaError], bootstrap: str, diagnose: Explain | None = None
) -> None:
    """Raise kshare's error for the client errors librdkafka reported so far, if one is final.

    Refused credentials or certificates (3), authorization refused (6), a fatal
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
    kinds = [classify(error) for error in seen]
    for error, kind in zip(seen, kinds, strict=True):
        if kind is ErrorKind.AUTHENTICATION:
            diagnosed = diagnose(error.str()) if diagnose is not None else None
            raise diagnosed or AuthenticationFailed(f"{bootstrap}: {plain_text(error.str())}")
    for error, kind in zip(seen, kinds, strict=True):
        if kind in (ErrorKind.AUTHORIZATION, ErrorKind.GROUP_AUTHORIZATION):
            raise not_authorized(error, bootstrap)
    for error in seen:
        if error.fatal():
            raise ConnectionFailed(f"{bootstrap}: {plain_text(error.str())}")
    if ErrorKind.ALL_BROKERS_DOWN in kinds:
        causes = [
            error for error, kind in zip(seen, kinds, strict=True) if kind is ErrorKind.UNREACHABLE
        ]
        hung_up = [error for error in causes if _REFUSED not in error.str()]
        if diagnose is not None and (hung_up or not causes):
            diagnosed = diagnose((hung_up or seen)[-1].str())
            if isinstance(diagnosed, AuthenticationFailed) or (hung_up and diagnosed):
                raise diagnosed
        if causes:
            raise ConnectionFailed(f"cannot connect to {bootstrap}: {plain_text(causes[-1].str())}")
