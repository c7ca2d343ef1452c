"""The demo's librdkafka clients: the preview notice is dropped, real errors are not."""

from __future__ import annotations

import logging
import socket

from confluent_kafka import ShareConsumer

from kshare_cli.sandbox.demo import librdkafka_logger
from tests.support.waiting import wait_for


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.levelno, record.getMessage()))


def test_share_consumer_preview_notice_is_dropped_and_connection_errors_kept() -> None:
    logger = librdkafka_logger()
    kept = _Kept()
    logger.addHandler(kept)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = closed.getsockname()[1]
        consumer = ShareConsumer(
            {"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "g", "logger": logger}
        )
        try:
            consumer.subscribe(["t"])

            def refused() -> bool:
                consumer.poll(0.1)
                return any("Connection refused" in line for _, line in kept.lines)

            wait_for(refused, timeout=30, interval=0, what="librdkafka's connection error")
        finally:
            consumer.close()
            logger.removeHandler(kept)
    assert not [line for _, line in kept.lines if "preview" in line.lower()]
    assert any(level >= logging.ERROR for level, _ in kept.lines)
