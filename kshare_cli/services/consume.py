"""``kshare consume``'s one call: check the cluster, read the delivery limit, run, report.

The command parses its options and renders the result; everything between is
here, so that ``cli/`` never reaches into the consumer layer or the wire: the
preflight and the run are the consumer layer's (``consumer.share_consume``),
the delivery limit that ``--interactive`` shows is one lookup
over the control plane (``services.delivery_limits.stated_delivery_count_limit``), and
the words for a TLS or SASL failure are the control plane's (``wire.diagnose``).

The types the command needs are re-exported here (``__all__``): this module is
the command's API; the definitions keep their one home in the consumer layer.

Imported only once the command runs (never for ``--help``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import BinaryIO, Final

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.consumer.deserializers import make_deserializer
from kshare_cli.consumer.record_formatters import Formatter, make_formatter
from kshare_cli.consumer.records import ConsumedRecord
from kshare_cli.consumer.share_consume import (
    AckMode,
    ConsumeOptions,
    ConsumeResult,
    Decide,
    DeliveryLimit,
)
from kshare_cli.consumer.share_consume import consume as run_consumer
from kshare_cli.dataplane.logs import with_debug_logger
from kshare_cli.errors import KshareError

__all__ = [
    "AckMode",
    "ConsumeOptions",
    "ConsumeResult",
    "ConsumedRecord",
    "Decide",
    "DeliveryLimit",
    "Formatter",
    "consume",
    "delivery_limit",
    "make_deserializer",
    "make_formatter",
]

#: The longest the delivery-limit lookup may take: it only labels the prompt.
LIMIT_LOOKUP_MAX_S: Final = 5.0
#: The shortest, however little of ``--timeout`` is left.
LIMIT_LOOKUP_MIN_S: Final = 0.5


def consume(
    settings: ConnectionSettings,
    config: Mapping[str, object],
    options: ConsumeOptions,
    formatter: Formatter,
    sink: BinaryIO,
    *,
    debug: bool = False,
    stop: threading.Event | None = None,
    decide: Decide | None = None,
    on_warning: Callable[[str], None] | None = None,
    on_rejected: Callable[[str], None] | None = None,
    on_joining: Callable[[bool], None] | None = None,
) -> ConsumeResult:
    """Check the cluster and the topics, join, consume until a stop; see ``consume.share_consume``.

    ``config`` is the librdkafka configuration of ``settings`` plus the caller's
    consumer properties; ``debug`` shows librdkafka's log lines on stderr. With
    ``options.interactive`` the delivery limit is read once, after the check and
    before joining (:func:`delivery_limit`).
    """
    from kshare_cli.wire.diagnose import connection_check

    effective = with_debug_logger(config, debug)
    return run_consumer(
        effective,
        options,
        formatter,
        sink,
        stop=stop,
        decide=decide,
        on_warning=on_warning,
        on_rejected=on_rejected,
        on_joining=on_joining,
        diagnose=connection_check(settings),
        delivery_limit=(
            (lambda: delivery_limit(settings, options.group_id, options.timeout_s))
            if options.interactive
            else None
        ),
    )


def delivery_limit(settings: ConnectionSettings, group_id: str, timeout_s: float) -> DeliveryLimit:
    """The group's delivery limit as the cluster states it, or Kafka's default, marked assumed.

    The admin layer's lookup (the group's ``share.delivery.count.limit``, else the
    broker's ``group.share.delivery.count.limit``), bounded by ``timeout_s`` but at
    most :data:`LIMIT_LOOKUP_MAX_S`: the limit only labels the prompt, so a cluster
    that will not say (librdkafka's mock has no DescribeConfigs, an operator
    without DESCRIBE_CONFIGS) costs the exact figure, never the run.
    """
    import asyncio

    from kshare_cli.admin.inflight import DEFAULT_DELIVERY_COUNT_LIMIT
    from kshare_cli.services.delivery_limits import stated_delivery_count_limit
    from kshare_cli.services.session import Session

    session = Session(settings, max(LIMIT_LOOKUP_MIN_S, min(LIMIT_LOOKUP_MAX_S, timeout_s)))

    async def work() -> DeliveryLimit | None:
        async with session.admin() as admin:
            stated = await stated_delivery_count_limit(admin, group_id)
        return None if stated is None else DeliveryLimit(stated.limit, stated.source)

    problem = "no answer"
    try:
        found = asyncio.run(session.bounded(work(), "reading the delivery limit"))
    except KshareError as error:
        found, problem = None, str(error)
    if found is not None:
        return found
    return DeliveryLimit(
        DEFAULT_DELIVERY_COUNT_LIMIT,
        f"Kafka's default; the cluster did not say ({problem})",
        assumed=True,
    )
