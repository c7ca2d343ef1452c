"""Live demo traffic for ``kshare sandbox --demo``: a queue that is never quite empty.

A producer trickles orders into ``demo-orders`` and three share consumers of
``demo-group`` work on them: one accepts everything, one releases every fifth
record (so delivery counts climb), one rejects every seventh (so records get
archived). That gives the dashboard and ``kshare describe`` something real to
show: lag that moves, redeliveries, archived records, several members.
They use confluent-kafka like any outside client would, over the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Mapping
from typing import Final

from confluent_kafka import AcknowledgeType, KafkaException, Producer, ShareConsumer

from kshare_cli.sandbox.broker import Broker

TOPIC: Final = "demo-orders"
GROUP: Final = "demo-group"
PARTITIONS: Final = 3
RECORDS_PER_SECOND: Final = 20


class _NoPreviewNotice(logging.Filter):
    """Drops librdkafka's notice that the share consumer is a preview, and nothing else.

    Every ShareConsumer logs it once at start, so ``--demo`` opened with three
    warnings about the demo's own clients, which tell the person trying the
    sandbox nothing. confluent-kafka hands each line over as ``(facility,
    client name, text)``; any other warning or error still reaches the terminal.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        return not (
            isinstance(args, tuple)
            and len(args) == 3
            and args[0] == "SHARECONSUMER"
            and '"Preview"' in str(args[2])
        )


def librdkafka_logger() -> logging.Logger:
    """Where the demo's clients log: stderr, warnings and errors, without the preview notice."""
    logger = logging.getLogger("kshare.sandbox.demo.librdkafka")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("demo: librdkafka %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.addFilter(_NoPreviewNotice())
        logger.setLevel(logging.WARNING)
        logger.propagate = False
    return logger


def _producer_loop(bootstrap: str, stop: threading.Event, security: Mapping[str, str]) -> None:
    producer = Producer(
        {
            **security,
            "bootstrap.servers": bootstrap,
            "client.id": "demo-producer",
            "logger": librdkafka_logger(),
        }
    )
    sequence = 0
    while not stop.is_set():
        order = {"order": sequence, "amount": round(random.uniform(1, 500), 2)}
        producer.produce(TOPIC, key=f"customer-{sequence % 17}", value=json.dumps(order))
        producer.poll(0)
        sequence += 1
        stop.wait(1 / RECORDS_PER_SECOND)
    producer.flush(5)


def _consumer_loop(
    bootstrap: str, name: str, stop: threading.Event, security: Mapping[str, str]
) -> None:
    consumer = ShareConsumer(
        {
            **security,
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "client.id": name,
            "share.acknowledgement.mode": "explicit",
            "logger": librdkafka_logger(),
        }
    )
    consumer.subscribe([TOPIC])
    seen = 0
    try:
        while not stop.is_set():
            for message in consumer.poll(0.5):
                if message.error() is not None:
                    continue
                seen += 1
                action = AcknowledgeType.ACCEPT
                if name == "demo-releaser" and seen % 5 == 0:
                    action = AcknowledgeType.RELEASE
                elif name == "demo-rejecter" and seen % 7 == 0:
                    action = AcknowledgeType.REJECT
                consumer.acknowledge(message, action)
            with contextlib.suppress(KafkaException):
                consumer.commit_sync()
            # Work takes time: keep the queue from draining instantly.
            stop.wait(0.2)
    finally:
        consumer.close()


async def run_demo(
    broker: Broker,
    bootstrap: str,
    stop: asyncio.Event,
    client_config: Mapping[str, str] | None = None,
) -> None:
    """Create the demo topic and group config, then run the clients until ``stop``.

    ``client_config`` carries the librdkafka security properties of a TLS or SASL listener.
    """
    security = dict(client_config or {})
    if broker.topic(TOPIC) is None:
        broker.create_topic(TOPIC, PARTITIONS)
    from kshare_cli.sandbox.share import share_groups

    share_groups(broker).configs.incremental_alter(
        GROUP, [("share.auto.offset.reset", 0, "earliest")]
    )
    halt = threading.Event()
    threads = [
        threading.Thread(target=_producer_loop, args=(bootstrap, halt, security), daemon=True)
    ]
    for name in ("demo-accepter", "demo-releaser", "demo-rejecter"):
        threads.append(
            threading.Thread(
                target=_consumer_loop, args=(bootstrap, name, halt, security), daemon=True
            )
        )
    for thread in threads:
        thread.start()
    await stop.wait()
    halt.set()
    deadline = time.monotonic() + 10
    for thread in threads:
        await asyncio.to_thread(thread.join, max(0.0, deadline - time.monotonic()))
