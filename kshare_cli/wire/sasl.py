"""SASL authentication of a new connection: SaslHandshake v1, then SaslAuthenticate rounds.

Kafka frames SASL tokens in SaslAuthenticate requests (KIP-152), so one loop
serves every mechanism; a mechanism only turns the broker's challenge into the
next token. SCRAM is scramp's (RFC 5802/7677, verified server signature
included): a home-grown SCRAM is a classic source of subtle security bugs.

Secrets are revealed only into the bytes of a token and never into a message:
errors carry the mechanism, the user name and the broker's own error text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, Protocol

from kshare_cli.connect.bearer_tokens import token_claims_problem
from kshare_cli.connect.sasl_settings import SaslSettings
from kshare_cli.errors import AuthenticationFailed, ConnectionFailed, UsageError
from kshare_cli.kafka.api_keys import SASL_AUTHENTICATE, SASL_HANDSHAKE
from kshare_cli.wire.build import build
from kshare_cli.wire.cluster import BrokerApiVersions
from kshare_cli.wire.errors import (
    ILLEGAL_SASL_STATE,
    UNSUPPORTED_SASL_MECHANISM,
    error_name,
)
from kshare_cli.wire.framing import request_schema

MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

#: RFC 7628's separator; a client answers an OAUTHBEARER error challenge with it alone.
_KVSEP: Final = b"\x01"


class SaslTransport(Protocol):
    """The part of a connection that authentication needs (kept abstract to avoid a cycle)."""

    @property
    def address(self) -> str: ...

    @property
    def api_versions(self) -> BrokerApiVersions: ...

    async def send(self, payload: Any) -> Any: ...


class Mechanism(Protocol):
    """One SASL mechanism's client side: the first token, then an answer per challenge."""

    name: str

    def first(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None:
        """The next token, or None when the exchange is complete."""
        ...


class Plain:
    """RFC 4616: ``authzid NUL authcid NUL passwd`` in one message (authzid empty, as Kafka's)."""

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._token = b"\0" + username.encode() + b"\0" + password.encode()

    def first(self) -> bytes:
        return self._token

    def respond(self, challenge: bytes) -> bytes | None:
        return None


class Scram:
    """SCRAM-SHA-256/512 through scramp: client-first, client-final, then check the server."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        # scramp (with importlib.metadata and asn1crypto under it) costs some 20-30 ms of
        # CPU that only a SCRAM login needs: imported here, not by every command.
        from scramp import ScramClient  # type: ignore[import-untyped]

        self.name = mechanism
        self._client = ScramClient([mechanism], username, password)
        self._step = 0

    def first(self) -> bytes:
        return str(self._client.get_client_first()).encode()

    def respond(self, challenge: bytes) -> bytes | None:
        from scramp import ScramException

        self._step += 1
        try:
            if self._step == 1:
                self._client.set_server_first(challenge.decode())
                return str(self._client.get_client_final()).encode()
            self._client.set_server_final(challenge.decode())
        except (ScramException, UnicodeDecodeError) as error:
            raise AuthenticationFailed(f"SASL {self.name}: {_one_line(str(error))}") from None
        return None


class OAuthBearer:
    """RFC 7628 client initial response: a bearer token and any SASL extensions.

    The layout is Kafka's ``OAuthBearerClientInitialResponse``: GS2 header
    ``n,,``, then ``auth=Bearer <token>`` and each ``key=value`` extension, each
    ended by %x01, and a final %x01. On a rejected token Kafka answers with a JSON
    error challenge and waits for a lone %x01 before failing the exchange.
    """

    name = "OAUTHBEARER"

    def __init__(self, token: str, extensions: Sequence[tuple[str, str]] = ()) -> None:
        self._token = token
        self._extensions = tuple(extensions)
        self.server_error: str | None = None

    def first(self) -> bytes:
        pairs = [f"auth=Bearer {self._token}"]
        pairs.extend(f"{key}={value}" for key, value in self._extensions)
        return b"n,," + _KVSEP + b"".join(p.encode() + _KVSEP for p in pairs) + _KVSEP

    def respond(self, challenge: bytes) -> bytes | None:
        if not challenge:
            return None
        self.server_error = _oauth_error(challenge)
        # The broker says only "invalid_token"; the token's own claims may say why.
        problem = token_claims_problem(self._token)
        if problem is not None:
            self.server_error += f": {problem}"
        return _KVSEP


def _oauth_error(challenge: bytes) -> str:
    try:
        detail = json.loads(challenge)
    except ValueError:
        return "the broker rejected the token"
    if isinstance(detail, dict) and detail.get("status"):
        return f"the broker rejected the token (status {detail['status']})"
    return "the broker rejected the token"


def mechanism_for(settings: SaslSettings) -> Mechanism:
    """The mechanism object for the settings; missing credentials are a usage error."""
    name = settings.mechanism.upper()
    if name == "OAUTHBEARER":
        return OAuthBearer(settings.oauth_token(), settings.extensions)
    if name not in MECHANISMS:
        raise UsageError(
            f"SASL mechanism {settings.mechanism} is not supported by kshare "
            f"(supported: {', '.join(MECHANISMS)})"
        )
    if settings.username is None or settings.password is None:
        raise UsageError(f"SASL {name} needs a username and a password")
    if name == "PLAIN":
        return Plain(settings.username, settings.password.reveal())
    return Scram(name, settings.username, settings.password.reveal())


async def authenticate(transport: SaslTransport, settings: SaslSettings) -> None:
    """Authenticate a connection that has negotiated ApiVersions; raise on any refusal."""
    mechanism = mechanism_for(settings)
    versions = transport.api_versions
    handshake_version = versions.choose(SASL_HANDSHAKE, min_version=1)
    authenticate_version = versions.choose(SASL_AUTHENTICATE)
    handshake = await transport.send(
        build(
            request_schema(SASL_HANDSHAKE, handshake_version),
            {"mechanism": mechanism.name},
        )
    )
    code = int(handshake.error_code)
    if code == UNSUPPORTED_SASL_MECHANISM:
        enabled = ", ".join(handshake.mechanisms) or "none"
        raise AuthenticationFailed(
            f"SASL mechanism {mechanism.name} is not enabled on {transport.address} "
            f"(enabled: {enabled})"
        )
    if code == ILLEGAL_SASL_STATE:
        raise ConnectionFailed(
            f"{transport.address} is not a SASL listener (SaslHandshake: ILLEGAL_SASL_STATE); "
            "check security.protocol"
        )
    if code != 0:
        raise AuthenticationFailed(
            f"SASL handshake with {transport.address} failed: {error_name(code)}"
        )
    who = (
        f" as {settings.username!r}"
        if settings.username and mechanism.name != "OAUTHBEARER"
        else ""
    )
    token: bytes | None = mechanism.first()
    while token is not None:
        response = await transport.send(
            build(
                request_schema(SASL_AUTHENTICATE, authenticate_version),
                {"auth_bytes": token},
            )
        )
        code = int(response.error_code)
        if code != 0:
            # After an OAUTHBEARER error challenge Kafka repeats its JSON as the
            # message; the challenge, already read, says it in words.
            detail = (
                getattr(mechanism, "server_error", None)
                or response.error_message
                or error_name(code)
            )
            raise AuthenticationFailed(
                f"SASL {mechanism.name} authentication{who} failed at {transport.address}: "
                f"{_one_line(detail)}"
            )
        token = mechanism.respond(bytes(response.auth_bytes))
    server_error = getattr(mechanism, "server_error", None)
    if server_error is not None:
        # The broker accepted the %x01 after an error challenge; Kafka never does, but a
        # token it called invalid must not count as a login.
        raise AuthenticationFailed(
            f"SASL OAUTHBEARER failed at {transport.address}: {server_error}"
        )


def _one_line(text: str) -> str:
    return " ".join(text.split())
