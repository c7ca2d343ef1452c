"""Connection settings shared by the control plane and the data plane.

One :class:`ConnectionSettings` comes out of flags, environment, profiles and a
Java or librdkafka ``--command-config`` file (:func:`resolve_settings`); the wire
client asks it for an ``ssl.SSLContext`` and SASL credentials, confluent-kafka
for a librdkafka configuration.
"""

from kshare_cli.connect.bearer_tokens import UnsecuredJwt
from kshare_cli.connect.bootstrap import parse_bootstrap, split_host_port
from kshare_cli.connect.resolve import resolve_settings
from kshare_cli.connect.sasl_settings import SaslSettings
from kshare_cli.connect.secret import Secret
from kshare_cli.connect.settings import ConnectionSettings
from kshare_cli.connect.tls_settings import TlsSettings

__all__ = [
    "ConnectionSettings",
    "SaslSettings",
    "Secret",
    "TlsSettings",
    "UnsecuredJwt",
    "parse_bootstrap",
    "resolve_settings",
    "split_host_port",
]
