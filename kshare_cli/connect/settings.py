"""One connection-settings object for both planes: our asyncio client and confluent-kafka.

An operator configures TLS and SASL once, in the ``--command-config`` file they
already pass to ``kafka-share-groups.sh`` (Java names) or to librdkafka tools
(librdkafka names); both vocabularies map onto the same :class:`ConnectionSettings`
(``property_mapping.py``). The control plane asks it for an :class:`ssl.SSLContext`
and SASL credentials; the data plane asks it for a librdkafka configuration
(``librdkafka_config.py``). Neither plane sees the other's vocabulary, so a property
can never mean one thing to the admin commands and another to ``kshare consume``.

The parts live beside it: ``tls_settings.py`` (trust and identity files),
``sasl_settings.py`` and ``bearer_tokens.py`` (credentials and OAUTHBEARER tokens),
``secret.py`` (values that never print themselves), ``bootstrap.py`` (server lists),
``resolve.py`` (which flag, variable or profile wins).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any

from kshare_cli.connect import librdkafka_config as librdkafka
from kshare_cli.connect.sasl_settings import SaslSettings
from kshare_cli.connect.secret import REDACTED
from kshare_cli.connect.tls_settings import TlsSettings

__all__ = [
    "DEFAULT_CLIENT_ID",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "SECURITY_PROTOCOLS",
    "ConnectionSettings",
]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_CLIENT_ID = "kshare"
DEFAULT_REQUEST_TIMEOUT_MS = 30_000


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """Everything needed to reach a cluster, for either plane. Safe to print."""

    bootstrap_servers: tuple[str, ...]
    security_protocol: str = "PLAINTEXT"  # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    tls: TlsSettings | None = None  # set when the protocol is SSL or SASL_SSL
    sasl: SaslSettings | None = None  # set when the protocol is SASL_*
    client_id: str = DEFAULT_CLIENT_ID
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    # One line per problem kshare ignored (unknown properties, ...); the command prints them.
    warnings: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def effective_tls(self) -> TlsSettings | None:
        """``tls``, or Kafka's defaults (system CAs, hostname checks) for SSL without it."""
        if self.tls is not None:
            return self.tls
        return TlsSettings() if self.security_protocol in ("SSL", "SASL_SSL") else None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The control plane's TLS context; None for PLAINTEXT and SASL_PLAINTEXT."""
        tls = self.effective_tls()
        return tls.ssl_context() if tls is not None else None

    def librdkafka_config(self) -> dict[str, str]:
        """The same settings in librdkafka's names, secrets revealed, for confluent-kafka.

        OAUTHBEARER with a static token or token file cannot be said in strings:
        librdkafka needs a token callback. Use :meth:`confluent_config`, which adds
        ``oauth_cb`` (:meth:`SaslSettings.oauth_cb`) when it is needed. An unsecured
        JWT with only a principal and a scope maps onto librdkafka's own
        ``enable.sasl.oauthbearer.unsecure.jwt``. Raises UsageError on the same file
        problems as :meth:`ssl_context` (a PKCS12 truststore is converted to
        ``ssl.ca.pem`` here).
        """
        return librdkafka.librdkafka_config(self)

    def needs_oauth_cb(self) -> bool:
        """Whether confluent-kafka needs ``oauth_cb`` (OAUTHBEARER beyond librdkafka's own JWT)."""
        return librdkafka.needs_oauth_cb(self)

    def confluent_config(self) -> dict[str, Any]:
        """:meth:`librdkafka_config` plus ``oauth_cb`` when librdkafka cannot get a token alone.

        Raises AuthenticationFailed when that token has expired (or is not valid
        yet), and UsageError when its file cannot be read: before a client is built.
        """
        return librdkafka.confluent_config(self)

    def redacted(self) -> dict[str, str]:
        """The settings for ``--debug`` and ``kshare profile show``: secrets as ``***``."""
        shown = {
            "bootstrap.servers": ",".join(self.bootstrap_servers),
            "security.protocol": self.security_protocol,
            "client.id": self.client_id,
            "request.timeout.ms": str(self.request_timeout_ms),
        }
        if self.sasl is not None:
            sasl = self.sasl
            shown["sasl.mechanism"] = sasl.mechanism
            if sasl.username is not None:
                shown["sasl.username"] = sasl.username
            if sasl.password is not None:
                shown["sasl.password"] = REDACTED
            if sasl.token is not None:
                shown["kshare.oauthbearer.token"] = REDACTED
            if sasl.token_file is not None:
                shown["kshare.oauthbearer.token.file"] = str(sasl.token_file)
            if sasl.unsecured_jwt is not None:
                shown["oauthbearer.unsecured.principal"] = sasl.unsecured_jwt.principal
            if sasl.extensions:
                shown["oauthbearer.extensions"] = ",".join(name for name, _ in sasl.extensions)
        if (tls := self.effective_tls()) is not None:
            tls.add_redacted(shown)
        return shown
