"""``kshare produce``'s one call: check the topic, produce the lines, count what was delivered.

The command parses its options and renders the result; the engine is the
consumer layer's (``consumer.produce``), the words for a TLS or SASL failure
the control plane's (``wire.diagnose``), so ``cli/`` reaches neither. The types
and parsers the command needs are re-exported here (``__all__``); their
definitions keep their one home in ``consumer.produce``.

Imported only once the command runs (never for ``--help``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.consumer.produce import (
    DeliveryFailure,
    MalformedLine,
    ProduceResult,
    parse_headers,
    parse_key_separator,
    produce_lines,
)
from kshare_cli.dataplane.logs import with_debug_logger

__all__ = [
    "DeliveryFailure",
    "MalformedLine",
    "ProduceResult",
    "parse_headers",
    "parse_key_separator",
    "produce",
]


def produce(
    settings: ConnectionSettings,
    config: Mapping[str, object],
    topic: str,
    source: Iterable[bytes],
    *,
    key_separator: bytes | None = None,
    headers: Sequence[tuple[str, bytes]] = (),
    rate: float | None = None,
    partition: int | None = None,
    timeout_s: float = 30.0,
    on_failure: Callable[[DeliveryFailure], None] | None = None,
    debug: bool = False,
) -> ProduceResult:
    """One record per line of ``source`` to ``topic``; see ``consumer.produce.produce_lines``.

    ``config`` is the librdkafka configuration of ``settings`` plus the caller's
    producer properties; ``debug`` shows librdkafka's log lines on stderr.
    """
    from kshare_cli.wire.diagnose import connection_check

    effective = with_debug_logger(config, debug)
    return produce_lines(
        effective,
        topic,
        source,
        key_separator=key_separator,
        headers=headers,
        rate=rate,
        partition=partition,
        timeout_s=timeout_s,
        on_failure=on_failure,
        diagnose=connection_check(settings),
    )
