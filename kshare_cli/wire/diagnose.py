"""Why a librdkafka client could not connect, said in the control plane's words.

librdkafka words a TLS or SASL failure as OpenSSL or its own state machine sees
it: a hostname mismatch blames the CA ("verify that ssl.ca.location is correctly
configured"), a refused client certificate is "ssl/tls alert bad certificate",
a SASL listener reached without SASL is a disconnect and then "all brokers are
down". The control plane already knows how to tell these apart (``connection``
names the hostname mismatch, a required client certificate, a TLS or SASL
listener reached with the wrong ``security.protocol``; ``sasl`` names a
rejected or expired token). So when the data plane (``consume``, ``produce``)
meets such a failure, it asks this module to open one control-plane connection
to the broker that failed, with the same settings, and reports its error: one
diagnosis of each failure, whichever plane met it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
from collections.abc import Callable
from typing import Final

from kshare_cli.connect.bootstrap import parse_bootstrap
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.errors import AuthenticationFailed, ConnectionFailed, KshareError, UsageError

#: What one check may take: a Kafka broker answers a handshake in milliseconds, and
#: the failure it explains has already happened.
CHECK_TIMEOUT_S: Final = 5.0

#: librdkafka names the broker first: ``sasl_ssl://127.0.0.1:9093/bootstrap: ...``.
_BROKER: Final = re.compile(r"^(?:[a-z_]+://)?(?P<address>\[[^\]]+\]:\d+|[^\s/:]+:\d+)/\S*: ")

#: ``diagnose(librdkafka's error text, seconds the caller can spare)``.
Diagnose = Callable[[str, float], KshareError | None]


def connection_check(settings: ConnectionSettings) -> Diagnose:
    """A function of librdkafka's error text: the control plane's error for that broker, or None.

    None when the control plane connects without trouble (librdkafka's own words
    then stand), when it does not finish in the time given (at most
    ``CHECK_TIMEOUT_S``), or when the check cannot run here (an event loop already
    running on this thread). The first answer is kept: librdkafka repeats its
    errors dozens of times a second, and one check is enough.
    """
    found: list[KshareError | None] = []
    lock = threading.Lock()

    def diagnose(librdkafka_error: str, timeout_s: float) -> KshareError | None:
        with lock:
            if not found:
                address = _broker_of(librdkafka_error, settings)
                found.append(_check(settings, address, min(timeout_s, CHECK_TIMEOUT_S)))
            return found[0]

    return diagnose


def _broker_of(text: str, settings: ConnectionSettings) -> str:
    match = _BROKER.match(text)
    if match is not None:
        try:
            return parse_bootstrap(match.group("address"))[0]
        except UsageError:
            pass  # not an address after all: ask the first bootstrap server
    return settings.bootstrap_servers[0]


def _check(settings: ConnectionSettings, address: str, timeout_s: float) -> KshareError | None:
    from kshare_cli.wire.client import KafkaClient

    if timeout_s <= 0:
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return None  # inside a running loop asyncio.run cannot nest; librdkafka's words stand

    one_broker = dataclasses.replace(settings, bootstrap_servers=(address,))

    async def connect_and_ask() -> None:
        client = await KafkaClient.connect(one_broker, timeout_s=timeout_s)
        try:
            # The first request after ApiVersions: where a SASL listener hangs up.
            await client.metadata([], refresh=True)
        finally:
            await client.close()

    try:
        asyncio.run(connect_and_ask())
    except AuthenticationFailed as error:  # TLS or SASL refused, a SASL listener: final
        return error
    except ConnectionFailed as error:  # not Kafka, refused: the diagnosis
        if not one_broker.security_protocol.endswith("SSL") and _answers_tls(address, timeout_s):
            # A TLS listener reached in plaintext: as final as a SASL listener reached
            # without SASL, since every attempt meets the same close (librdkafka's
            # only word for it is "all brokers are down", after 57 reconnects a second).
            return AuthenticationFailed(str(error))
        return error
    except KshareError:
        return None  # timed out, or nothing to add to what librdkafka said
    return None


def _answers_tls(address: str, timeout_s: float) -> bool:
    """Whether ``address`` speaks TLS: the control plane's proof of a TLS listener."""
    from kshare_cli.wire.connection import answers_tls

    host, _, port = address.rpartition(":")
    return asyncio.run(answers_tls(host.strip("[]"), int(port), min(timeout_s, 1.0)))
