"""TLS and SASL for sandbox listeners, with Kafka's server-side behaviour.

A listener is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, as in Kafka. On a SASL
listener a connection must authenticate before anything but ApiVersions,
SaslHandshake and SaslAuthenticate is served, and the exchange follows Kafka's
``SaslServerAuthenticator``: one ApiVersions, then SaslHandshake (v1: the tokens
travel in SaslAuthenticate requests; v0: as bare size-prefixed tokens), an
unknown mechanism answered with UNSUPPORTED_SASL_MECHANISM and the enabled
ones, a failed exchange answered with SASL_AUTHENTICATION_FAILED and then the
connection closed, any other request closing it outright. The error messages
are Kafka's, so clients can be tested on what they show an operator.

Mechanisms: PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802, server side from
``scramp``) and OAUTHBEARER (RFC 7628) that accepts what Kafka's default
unsecured validator accepts -- ``alg: none`` JWTs with a ``sub`` and an unexpired
``exp`` -- or, when configured, only a fixed set of tokens.
"""

from __future__ import annotations

import abc
import base64
import binascii
import datetime
import json
import logging
import math
import re
import ssl
import struct
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from scramp import (  # type: ignore[import-untyped, unused-ignore]
    ScramException,
    ScramMechanism,
)

from kshare_cli.kafka.api_keys import API_VERSIONS, SASL_AUTHENTICATE, SASL_HANDSHAKE
from kshare_cli.sandbox.framing import Request, decode_request, encode_response, peek_request_prefix
from kshare_cli.wire.build import build

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.x509 import Certificate, GeneralName

log = logging.getLogger("kshare.sandbox")

PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


#: Kafka's ``sasl.server.max.receive.size``: larger frames before authentication are refused.
SASL_MAX_RECEIVE_BYTES: Final = 524288

#: Kafka's minimum SCRAM iteration count (ScramMechanism.minIterations).
SCRAM_ITERATIONS: Final = 4096

ANONYMOUS: Final = "User:ANONYMOUS"


def server_ssl_context(
    cert_file: Path | str,
    key_file: Path | str,
    *,
    key_password: str | None = None,
    ca_file: Path | str | None = None,
    require_client_cert: bool = False,
) -> ssl.SSLContext:
    """A server context: Kafka's ``ssl.client.auth`` is ``required`` with a CA, else ``none``.

    With ``ca_file`` but without ``require_client_cert`` a client certificate is
    requested and checked if sent (``ssl.client.auth=requested``).
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_file), str(key_file), password=key_password)
    if require_client_cert and ca_file is None:
        raise ValueError("require_client_cert needs ca_file to verify client certificates against")
    if ca_file is not None:
        context.load_verify_locations(cafile=str(ca_file))
        context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    return context


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """How one listener secures its connections (Kafka's ``listener.security.protocol.map``).

    ``users`` are the SASL credentials (PLAIN and SCRAM; SCRAM credentials are
    derived once here, as ``kafka-configs --alter --add-config SCRAM-SHA-256=...``
    would store them). ``oauth_tokens`` None accepts any valid unsecured JWT;
    a collection accepts exactly those tokens.
    """

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    require_client_cert: bool = False
    users: Mapping[str, str] = field(default_factory=dict, hash=False, repr=False)
    mechanisms: tuple[str, ...] = MECHANISMS
    oauth_tokens: frozenset[str] | None = None
    _scram: Mapping[tuple[str, str], tuple[bytes, bytes, bytes, int]] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"unknown security protocol {self.protocol!r}; one of {PROTOCOLS}")
        if self.tls and self.ssl_context is None:
            raise ValueError(f"{self.protocol} listener needs an ssl_context")
        if not self.tls and self.ssl_context is not None:
            raise ValueError(f"{self.protocol} listener takes no ssl_context")
        if self.require_client_cert and (
            self.ssl_context is None or self.ssl_context.verify_mode != ssl.CERT_REQUIRED
        ):
            raise ValueError(
                "require_client_cert needs an ssl_context with verify_mode CERT_REQUIRED "
                "(server_ssl_context(..., ca_file=..., require_client_cert=True))"
            )
        mechanisms = tuple(self.mechanisms)
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown:
            raise ValueError(f"unsupported SASL mechanisms {unknown}; choose from {MECHANISMS}")
        if self.sasl and not mechanisms:
            raise ValueError(f"{self.protocol} listener needs at least one SASL mechanism")
        object.__setattr__(self, "mechanisms", mechanisms)
        object.__setattr__(self, "users", MappingProxyType(dict(self.users)))
        if self.oauth_tokens is not None:
            object.__setattr__(self, "oauth_tokens", frozenset(self.oauth_tokens))
        scram: dict[tuple[str, str], tuple[bytes, bytes, bytes, int]] = {}
        if self.sasl:
            for mechanism in (m for m in mechanisms if m.startswith("SCRAM-")):
                scram_mechanism = ScramMechanism(mechanism)
                for user, password in self.users.items():
                    salt, stored, server, iterations = scram_mechanism.make_auth_info(
                        password, iteration_count=SCRAM_ITERATIONS
                    )
                    scram[(mechanism, user)] = (salt, stored, server, iterations)
        object.__setattr__(self, "_scram", MappingProxyType(scram))

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def scram_credential(self, mechanism: str, user: str) -> tuple[bytes, bytes, bytes, int] | None:
        return self._scram.get((mechanism, user))

    def new_gate(self) -> SaslGate | None:
        """The per-connection authentication state machine, None when the listener has no SASL."""
        return SaslGate(self) if self.sasl else None


PLAINTEXT: Final = ListenerSecurity()


def certificate_principal(der: bytes | None) -> str:
    """Kafka's default SSL principal: ``User:`` and the peer certificate's subject (RFC 2253)."""
    if not der:
        return ANONYMOUS
    from cryptography import x509

    subject = x509.load_der_x509_certificate(der).subject
    return f"User:{subject.rfc4514_string()}"


# -- mechanisms ------------------------------------------------------------------


class SaslFailure(Exception):
    """The exchange failed; ``message`` is what Kafka would send the client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidCredentials(Exception):
    """Kafka's ``SaslException``: the client gets a generic message, not the reason."""


class MechanismServer(abc.ABC):
    """One server side of a SASL exchange: evaluate a client token, return a challenge.

    Kafka's ``SaslServer`` contract; each mechanism (PLAIN, SCRAM, OAUTHBEARER) fills it in.
    """

    name: str = ""
    principal: str | None = None

    @property
    def complete(self) -> bool:
        return self.principal is not None

    @abc.abstractmethod
    def evaluate(self, token: bytes) -> bytes:
        """The challenge for ``token``; sets ``principal`` once the exchange is complete."""


class PlainServer(MechanismServer):
    """RFC 4616 ``[authzid] NUL authcid NUL passwd``, with PlainSaslServer's messages."""

    name = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users

    def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", errors="replace").split("\0")
        if len(parts) != 3:
            raise SaslFailure(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}"
            )
        authzid, username, password = parts
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        if self._users.get(username) != password:
            raise SaslFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.principal = username
        return b""


def _scram_unescape(name: str) -> str:
    """RFC 5802 saslname: ``=2C`` is a comma, ``=3D`` an equals sign."""
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServerMechanism(MechanismServer):
    """SCRAM-SHA-256/512: client-first -> server-first, client-final -> server-final."""

    def __init__(
        self,
        mechanism: str,
        credential: Callable[[str, str], tuple[bytes, bytes, bytes, int] | None],
    ) -> None:
        self.name = mechanism
        self._credential = credential
        self._server: Any = ScramMechanism(mechanism).make_server(self._auth_info)
        self._user: str | None = None
        self._step = 0

    def _auth_info(self, username: str) -> tuple[bytes, bytes, bytes, int]:
        user = _scram_unescape(username)
        found = self._credential(self.name, user)
        if found is None:
            raise InvalidCredentials("Authentication failed: Invalid user credentials")
        self._user = user
        return found

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidCredentials("client message is not UTF-8") from None
        try:
            if self._step == 0:
                if text.startswith(("y,", "p=")) or not text.startswith("n,"):
                    raise InvalidCredentials("channel binding is not supported")
                authzid = text.split(",", 2)[1]
                self._server.set_client_first(text)
                if authzid.startswith("a=") and _scram_unescape(authzid[2:]) != self._user:
                    raise SaslFailure(
                        "Authentication failed: Client requested an authorization id that is "
                        "different from username"
                    )
                self._step = 1
                return str(self._server.get_server_first()).encode()
            if self._step == 1:
                self._server.set_client_final(text)
                final = str(self._server.get_server_final()).encode()
                self._step = 2
                self.principal = self._user
                return final
        except ScramException as error:
            raise InvalidCredentials(str(error)) from None
        raise InvalidCredentials("unexpected SCRAM message after the exchange completed")


def _b64url_json(part: str) -> Any:
    padded = part + "=" * (-len(part) % 4)
    try:
        return json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (binascii.Error, ValueError, UnicodeError):
        return None


class InvalidToken(ValueError):
    """A bearer token Kafka's validator would refuse; the message says why (for the log)."""


def unsecured_jwt_principal(token: str, now_s: float | None = None) -> str:
    """The ``sub`` of an unsecured JWT that Kafka's default validator accepts; InvalidToken else."""
    if ".." in token:
        raise InvalidToken("Malformed compact serialization contains '..'")
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated parts")
    header, claims = _b64url_json(parts[0]), _b64url_json(parts[1])
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise InvalidToken("malformed JSON")
    if header.get("alg") != "none":
        raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise InvalidToken("Unsecured JWS must not contain a digital signature")
    # Kafka compares in milliseconds: its clock is currentTimeMillis() (a whole number), a
    # claim counts as 1000 * seconds, and the allowable clock skew defaults to 0.
    now_ms = math.floor((time.time() if now_s is None else now_s) * 1000)
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise InvalidToken("No expiration time in JWT")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub.strip():
        raise InvalidToken("No principal name in JWT claim: sub")
    iat = claims.get("iat")
    if isinstance(iat, int | float) and not isinstance(iat, bool) and 1000 * iat > now_ms:
        raise InvalidToken("The Issued At value is in the future")
    if now_ms >= 1000 * exp:
        raise InvalidToken("The indicated time is in the past")
    if isinstance(iat, int | float) and not isinstance(iat, bool) and exp <= iat:
        raise InvalidToken("The Expiration Time time must be after the Issued At time")
    return sub


_OAUTH_FIRST = re.compile(
    r"n,(?:a=(?P<authzid>[^,\x01]*))?,\x01(?P<kvpairs>(?:[A-Za-z]+=[\x21-\x7e \t\r\n]*\x01)*)\x01"
)


class OAuthBearerServer(MechanismServer):
    """RFC 7628: validate the bearer token; a bad one gets Kafka's JSON error challenge."""

    name = "OAUTHBEARER"

    def __init__(self, tokens: frozenset[str] | None) -> None:
        self._tokens = tokens
        self._error: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslFailure(self._error)
        self._error = None
        text = token.decode("utf-8", errors="replace")
        match = _OAUTH_FIRST.fullmatch(text)
        if match is None:
            raise InvalidCredentials(f"Invalid OAUTHBEARER client first message: {text!r}")
        pairs = dict(pair.split("=", 1) for pair in match.group("kvpairs").split("\x01") if pair)
        auth = pairs.get("auth", "")
        if not auth.startswith("Bearer "):
            raise InvalidCredentials("Invalid OAUTHBEARER client first message: no auth=Bearer")
        value = auth[len("Bearer ") :].strip()
        try:
            principal = self._validate(value)
        except InvalidToken as error:
            log.info("rejecting OAUTHBEARER token: %s", error)
            self._error = json.dumps({"status": "invalid_token"}, separators=(",", ":"))
            return self._error.encode()
        authzid = match.group("authzid") or ""
        if authzid and authzid != principal:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id "
                f"({authzid}) that is different from the token's principal name ({principal})"
            )
        self.principal = principal
        return b""

    def _validate(self, token: str) -> str:
        if self._tokens is None:
            return unsecured_jwt_principal(token)
        if token not in self._tokens:
            raise InvalidToken("not one of the configured tokens")
        parts = token.split(".")
        claims = _b64url_json(parts[1]) if len(parts) == 3 else None
        sub = claims.get("sub") if isinstance(claims, dict) else None
        return sub if isinstance(sub, str) and sub else "oauth-client"


# -- the connection-level state machine -------------------------------------------


@dataclass(frozen=True, slots=True)
class GateStep:
    """What the server does with one frame received before authentication completed.

    ``request``: serve it as usual (ApiVersions). ``reply``: bytes to write, size
    prefix included. ``close``: close the connection after writing ``reply``.
    """

    request: Request | None = None
    reply: bytes | None = None
    close: bool = False


_CLOSE: Final = GateStep(close=True)


def _api_name(api_key: int) -> str:
    """Kafka's ``ApiKeys`` name (``METADATA``), as its broker log says it."""
    from kio.schema.index import api_key_map

    name = api_key_map.get(api_key)
    return str(name).upper() if name is not None else f"API {api_key}"


class SaslGate:
    """Kafka's ``SaslServerAuthenticator`` states for one connection."""

    def __init__(self, security: ListenerSecurity) -> None:
        self._security = security
        self._state = "versions_or_handshake"
        self._legacy_tokens = False
        self._mechanism: MechanismServer | None = None
        self.principal: str | None = None

    @property
    def complete(self) -> bool:
        return self.principal is not None

    @property
    def max_frame_bytes(self) -> int:
        return SASL_MAX_RECEIVE_BYTES

    def receive(self, frame: bytes) -> GateStep:
        """Advance on one frame. Raises the framing errors of ``decode_request``."""
        if self._legacy_tokens:
            return self._legacy_token(frame)
        api_key, _, correlation_id = peek_request_prefix(frame)
        if self._state == "authenticate":
            if api_key != SASL_AUTHENTICATE:
                log.info("closing: request %d during SASL authentication", api_key)
                return _CLOSE
            return self._authenticate(decode_request(frame))
        if api_key == API_VERSIONS:
            if self._state != "versions_or_handshake":
                return _CLOSE
            request = decode_request(frame)  # an unknown version raises: answered, no state change
            self._state = "handshake"
            return GateStep(request=request)
        if api_key == SASL_HANDSHAKE:
            return self._handshake(decode_request(frame))
        # Kafka's InvalidRequestException here closes the connection without an answer,
        # after ApiVersions was answered or before: clients see only the close.
        log.info("Unexpected Kafka request of type %s during SASL handshake.", _api_name(api_key))
        return _CLOSE

    def _handshake(self, request: Request) -> GateStep:
        wanted = str(request.payload.mechanism)
        enabled = list(self._security.mechanisms)
        schema = load_response_schema(SASL_HANDSHAKE, request.api_version)
        if wanted not in enabled:
            body = build(
                schema, {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": enabled}
            )
            return GateStep(reply=encode_response(body, request.correlation_id), close=True)
        self._mechanism = self._new_mechanism(wanted)
        self._legacy_tokens = request.api_version == 0
        self._state = "authenticate"
        body = build(schema, {"error_code": ErrorCode.none, "mechanisms": enabled})
        return GateStep(reply=encode_response(body, request.correlation_id))

    def _new_mechanism(self, name: str) -> MechanismServer:
        security = self._security
        if name == "PLAIN":
            return PlainServer(security.users)
        if name == "OAUTHBEARER":
            return OAuthBearerServer(security.oauth_tokens)
        return ScramServerMechanism(name, security.scram_credential)

    def _evaluate(self, token: bytes) -> bytes:
        mechanism = self._mechanism
        assert mechanism is not None
        try:
            challenge = mechanism.evaluate(token)
        except InvalidCredentials as error:
            log.info("SASL %s authentication failed: %s", mechanism.name, error)
            raise SaslFailure(
                "Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {mechanism.name}"
            ) from None
        if mechanism.complete:
            self.principal = f"User:{mechanism.principal}"
            self._state = "complete"
        return challenge

    def _authenticate(self, request: Request) -> GateStep:
        schema = load_response_schema(SASL_AUTHENTICATE, request.api_version)
        try:
            challenge = self._evaluate(bytes(request.payload.auth_bytes))
        except SaslFailure as failure:
            body = build(
                schema,
                {
                    "error_code": ErrorCode.sasl_authentication_failed,
                    "error_message": failure.message,
                    "auth_bytes": b"",
                    "session_lifetime": 0,
                },
            )
            return GateStep(reply=encode_response(body, request.correlation_id), close=True)
        body = build(
            schema,
            {
                "error_code": ErrorCode.none,
                "error_message": None,
                "auth_bytes": challenge,
                "session_lifetime": 0,
            },
        )
        return GateStep(reply=encode_response(body, request.correlation_id))

    def _legacy_token(self, frame: bytes) -> GateStep:
        """After SaslHandshake v0 the tokens are bare; a failure closes without a word."""
        try:
            challenge = self._evaluate(frame)
        except SaslFailure as failure:
            log.info("SASL authentication failed: %s", failure.message)
            return _CLOSE
        if self.complete:
            self._legacy_tokens = False
        return GateStep(reply=struct.pack(">i", len(challenge)) + challenge)


@dataclass(frozen=True, slots=True)
class ServerCertificate:
    """PEM files of a listener: its certificate chain and key, and the CA clients should trust."""

    cert_file: Path
    key_file: Path
    ca_file: Path | None


def server_certificate(directory: Path, hosts: Collection[str]) -> ServerCertificate:
    """``server.pem``/``server.key`` from ``directory``, made (with a CA) when both are absent.

    The made CA (``ca.pem``; its key is not kept) signs one server certificate for
    ``hosts`` plus localhost and 127.0.0.1, valid for 30 days: enough for a demo,
    and nothing a client would trust by accident.
    """
    cert_file, key_file, ca_file = (
        directory / "server.pem",
        directory / "server.key",
        directory / "ca.pem",
    )
    if cert_file.exists() or key_file.exists():
        if not (cert_file.exists() and key_file.exists()):
            raise ValueError(f"{directory} needs both server.pem and server.key, or neither")
        return ServerCertificate(cert_file, key_file, ca_file if ca_file.exists() else None)
    # cryptography is imported only here: ``kshare sandbox`` without TLS never pays for it.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _sandbox_ca(ca_key)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = _signed_server_certificate(ca_key, ca_cert, server_key, hosts)
    directory.mkdir(parents=True, exist_ok=True)
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_file.chmod(0o600)
    return ServerCertificate(cert_file, key_file, ca_file)


def _validity() -> tuple[datetime.datetime, datetime.datetime]:
    """From five minutes ago (a client's clock a little behind) to 30 days from now."""
    now = datetime.datetime.now(datetime.UTC)
    return now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=30)


def _sandbox_ca(ca_key: EllipticCurvePrivateKey) -> Certificate:
    """A self-signed CA that may sign certificates and nothing else below it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kshare sandbox CA")])
    not_before, not_after = _validity()
    return (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip


def _server_names(hosts: Collection[str]) -> list[GeneralName]:
    """``hosts`` plus localhost and 127.0.0.1 as subject alternative names (wildcards out)."""
    import ipaddress

    from cryptography import x509

    names: list[GeneralName] = []
    for host in dict.fromkeys([*hosts, "localhost", "127.0.0.1"]):
        if host in ("", "0.0.0.0", "::"):
            continue
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _signed_server_certificate(
    ca_key: EllipticCurvePrivateKey,
    ca_cert: Certificate,
    server_key: EllipticCurvePrivateKey,
    hosts: Collection[str],
) -> Certificate:
    """The server's certificate for ``hosts``, signed by the sandbox CA, for TLS servers only."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    not_before, not_after = _validity()
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kshare sandbox")]))
        .issuer_name(ca_cert.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(_server_names(hosts)), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )


def parse_users(text: str) -> dict[str, str]:
    """``alice:secret,bob:pw`` -> {"alice": "secret", "bob": "pw"} (for ``kshare sandbox``)."""
    users: dict[str, str] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        user, sep, password = item.partition(":")
        if not sep or not user or not password:
            raise ValueError(f"expected USER:PASSWORD, got {item!r}")
        users[user] = password
    return users


def check_mechanisms(names: Collection[str]) -> tuple[str, ...]:
    """Upper-cased, validated mechanism names."""
    chosen = tuple(n.strip().upper() for n in names if n.strip())
    unknown = [m for m in chosen if m not in MECHANISMS]
    if unknown:
        raise ValueError(f"unsupported SASL mechanism(s) {', '.join(unknown)}")
    return chosen
