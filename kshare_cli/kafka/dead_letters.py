"""A share group's dead-letter record as Kafka 4.4 writes it, and its decoding.

Kafka 4.4's share groups (KIP-1191, ``ShareGroupDLQRecordHelper``) write one
record to the group's DLQ topic for each record that turned ARCHIVING: six
UTF-8 headers in order (``DlqHeader``), numbers in decimal, key and value only
with ``errors.deadletterqueue.copy.record.enable``, CreateTime the write time.
Whoever reads a DLQ topic (``kshare describe --state``, the dashboard,
``health``, the exporter, and the audit's writer, which must not write a
record twice) decodes it here, so a header's name or a reason's text is
written down once. No kio, no confluent_kafka: a pure function of the headers.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DeadLetter",
    "DeadLetterReason",
    "DlqCause",
    "DlqHeader",
    "decode_dead_letter",
    "reason_of",
]


class DlqHeader(enum.StrEnum):
    """The names of Kafka's DLQ headers (``ShareGroupDLQRecordHelper.HEADER_DLQ_ERRORS_*``),
    in the order Kafka adds them."""

    TOPIC = "__dlq.errors.topic"
    PARTITION = "__dlq.errors.partition"
    OFFSET = "__dlq.errors.offset"
    GROUP = "__dlq.errors.group"
    DELIVERY_COUNT = "__dlq.errors.delivery.count"
    MESSAGE = "__dlq.errors.message"


class DlqCause(enum.StrEnum):
    """Kafka's texts for ``__dlq.errors.message``: the messages of
    ``ShareGroupDLQManager.CLIENT_REJECT`` and ``DELIVERY_COUNT_EXCEEDED``."""

    CLIENT_REJECT = "Offset rejected by client."
    DELIVERY_COUNT_EXCEEDED = "Offset delivery count exceeded the threshold."


class DeadLetterReason(enum.StrEnum):
    """Why the broker dead-lettered a record, in kshare's words (a metric's ``reason`` label).

    ``other`` is a message Kafka 4.4 does not write (a newer broker's cause, or a
    record someone else wrote with the headers): counted, never guessed at.
    """

    REJECTED = "rejected"
    DELIVERY_LIMIT = "delivery_limit"
    OTHER = "other"


_REASONS: Final = {
    DlqCause.CLIENT_REJECT.value: DeadLetterReason.REJECTED,
    DlqCause.DELIVERY_COUNT_EXCEEDED.value: DeadLetterReason.DELIVERY_LIMIT,
}


def reason_of(message: str | None) -> DeadLetterReason:
    """The reason a ``__dlq.errors.message`` text names."""
    return _REASONS.get(message or "", DeadLetterReason.OTHER)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """What a DLQ record's headers say of its source record; None where a header is missing
    or not a number."""

    group_id: str
    topic: str | None
    partition: int | None
    offset: int | None
    delivery_count: int | None
    message: str | None

    @property
    def reason(self) -> DeadLetterReason:
        return reason_of(self.message)


Headers = Mapping[str, str | bytes | None] | Iterable[tuple[str, str | bytes | None]] | None


def _text(value: str | bytes | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", errors="replace")


def _number(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def decode_dead_letter(headers: Headers) -> DeadLetter | None:
    """The dead letter a record's headers describe; None for a record without
    ``__dlq.errors.group`` (not a share group's dead letter).

    The last header of each name counts, as Kafka's ``Headers.lastHeader``.
    """
    if headers is None:
        return None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    last: dict[str, str | None] = {}
    for name, value in pairs:
        if name.startswith("__dlq.errors."):
            last[name] = _text(value)
    group = last.get(DlqHeader.GROUP)
    if group is None:
        return None
    return DeadLetter(
        group_id=group,
        topic=last.get(DlqHeader.TOPIC),
        partition=_number(last.get(DlqHeader.PARTITION)),
        offset=_number(last.get(DlqHeader.OFFSET)),
        delivery_count=_number(last.get(DlqHeader.DELIVERY_COUNT)),
        message=last.get(DlqHeader.MESSAGE),
    )
