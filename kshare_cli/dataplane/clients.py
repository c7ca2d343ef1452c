"""The data plane's librdkafka clients, built one way.

Every client gets the quiet logger unless its caller passed another, and a
configuration librdkafka refuses becomes one kshare error
(:func:`~kshare_cli.dataplane.errors.configuration_refused`) instead of a
traceback. The reader is the plain consumer that the state tailer, peek, the
Spark source and the dead-letter writer use to read partitions by ``assign()``:
it carries a throwaway ``group.id`` only because librdkafka refuses a consumer
without one; it never joins, never commits, so no such group appears on the
cluster.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from kshare_cli.dataplane.errors import configuration_refused
from kshare_cli.dataplane.logs import quiet_logger

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Producer, ShareConsumer
    from confluent_kafka.admin import AdminClient

__all__ = ["new_admin", "new_producer", "new_reader", "new_share_consumer", "reader_group_id"]

T = TypeVar("T")


def reader_group_id(purpose: str) -> str:
    """The throwaway group id of a reader: ``kshare-PURPOSE-<random hex>``."""
    return f"kshare-{purpose}-{uuid.uuid4().hex}"


def new_reader(config: Mapping[str, Any], purpose: str, **overrides: Any) -> Consumer:
    """A consumer for ``assign()``: no membership, no commits, a throwaway group id.

    ``config`` is a librdkafka configuration (``ConnectionSettings.confluent_config()``
    or the Spark source's strings); ``overrides`` win over it (``enable.partition.eof``,
    ``auto.offset.reset``, ``error_cb``...). ``purpose`` names the group id
    (``kshare-peek-...``). Raises UsageError for a property librdkafka refuses.
    """
    from confluent_kafka import Consumer

    settings: dict[str, Any] = dict(config)
    settings.update(
        {
            "group.id": reader_group_id(purpose),
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )
    settings.update(overrides)
    return _create(Consumer, settings, "client")


def new_producer(config: Mapping[str, Any]) -> Producer:
    """A producer on ``config``; raises UsageError for a property librdkafka refuses."""
    from confluent_kafka import Producer

    return _create(Producer, dict(config), "producer")


def new_share_consumer(config: Mapping[str, Any]) -> ShareConsumer:
    """A share consumer on ``config``; raises UsageError for a property librdkafka refuses,
    AuthenticationFailed when the OAUTHBEARER token callback gave no token."""
    from confluent_kafka import ShareConsumer

    return _create(ShareConsumer, dict(config), "consumer")


def new_admin(config: Mapping[str, Any]) -> AdminClient:
    """librdkafka's admin client, for metadata and configs over the consumer's settings."""
    from confluent_kafka.admin import AdminClient

    return _create(AdminClient, dict(config), "client")


def _create(kind: Callable[[dict[str, Any]], T], settings: dict[str, Any], what: str) -> T:
    from confluent_kafka import KafkaException

    settings.setdefault("logger", quiet_logger())
    try:
        return kind(settings)
    except SystemError as error:
        if isinstance(error.__cause__, KafkaException):
            raise configuration_refused(error, what) from None
        raise
    except (KafkaException, TypeError, ValueError) as error:
        raise configuration_refused(error, what) from None
