"""Client properties to settings: Kafka's and librdkafka's names mapped onto one ConnectionSettings.

An operator's ``--command-config`` may use Java names (``ssl.truststore.location``,
``sasl.jaas.config``) or librdkafka's (``ssl.ca.location``, ``sasl.username``); both
vocabularies map here onto the same :class:`ConnectionSettings`, with Kafka's rules
(which login module logs in with which mechanism, which settings are alternatives
of one another) and one warning for each name no client defines. Sources (files, a
profile, ``--property``) are merged by :class:`PropertySources`, so a profile means
the same thing when it is saved as when it is used.

Error messages never quote a value: a property's value may be a password.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kshare_cli.connect.bearer_tokens import ClaimValue, UnsecuredJwt
from kshare_cli.connect.client_keys import is_client_key
from kshare_cli.connect.jaas import JaasEntry, JaasSyntaxError, parse_jaas
from kshare_cli.connect.java_properties import load_properties
from kshare_cli.connect.sasl_settings import SASL_MECHANISMS, SaslSettings
from kshare_cli.connect.secret import Secret
from kshare_cli.connect.settings import (
    DEFAULT_CLIENT_ID,
    DEFAULT_REQUEST_TIMEOUT_MS,
    SECURITY_PROTOCOLS,
    ConnectionSettings,
)
from kshare_cli.connect.tls_settings import TlsSettings
from kshare_cli.errors import UsageError

__all__ = ["PropertySources", "parse_oauthbearer_config", "settings_from_properties"]

# --- librdkafka's sasl.oauthbearer.config ----------------------------------------------------

_OAUTHBEARER_CONFIG_KEYS = (
    "principalClaimName",
    "principal",
    "scopeClaimName",
    "scope",
    "lifeSeconds",
)


def parse_oauthbearer_config(value: str) -> tuple[dict[str, str], dict[str, str]]:
    """librdkafka's unsecured-JWT settings: ``principal=alice scope=a,b extension_x=y``.

    Returns (settings, SASL extensions). Values end at a space, as in librdkafka.
    """
    settings: dict[str, str] = {}
    extensions: dict[str, str] = {}
    for item in value.split(" "):
        if not item:
            continue
        name, separator, item_value = item.partition("=")
        if name.startswith("extension_") and separator:
            extension = name.removeprefix("extension_")
            if not extension:
                raise UsageError("sasl.oauthbearer.config: empty 'extension_' key")
            extensions[extension] = item_value
        elif name in _OAUTHBEARER_CONFIG_KEYS and separator:
            if not item_value:
                raise UsageError(f"sasl.oauthbearer.config: empty '{name}='")
            settings[name] = item_value
        else:
            shown = name if name.replace("_", "").isalnum() and separator else "?"
            raise UsageError(f"sasl.oauthbearer.config: unrecognized item '{shown}'")
    return settings, extensions


# --- properties -> settings --------------------------------------------------------------------

_KNOWN_KEYS = frozenset(
    {
        "bootstrap.servers",
        "security.protocol",
        "client.id",
        "request.timeout.ms",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.jaas.config",
        "sasl.username",
        "sasl.password",
        "sasl.oauthbearer.config",
        "enable.sasl.oauthbearer.unsecure.jwt",
        "kshare.oauthbearer.token",
        "kshare.oauthbearer.token.file",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
        "ssl.truststore.certificates",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "enable.ssl.certificate.verification",
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.certificate.pem",
        "ssl.key.location",
        "ssl.key.pem",
    }
)
# One setting said in more than one way (two spellings, or Java's and librdkafka's
# vocabularies): when a later source says it one way, the earlier sources' other ways are
# dropped, so a profile's --property overriding its file's librdkafka spelling replaces it
# instead of leaving it behind to be reported as "not used".
_ALTERNATIVES: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("sasl.mechanism",), ("sasl.mechanisms",)),
    (
        ("sasl.jaas.config",),
        (
            "sasl.username",
            "sasl.password",
            "sasl.oauthbearer.config",
            "enable.sasl.oauthbearer.unsecure.jwt",
        ),
    ),
    (("kshare.oauthbearer.token",), ("kshare.oauthbearer.token.file",)),
    (
        ("ssl.truststore.location", "ssl.truststore.password"),
        ("ssl.truststore.certificates",),
        ("ssl.ca.location",),
        ("ssl.ca.pem",),
    ),
    (
        ("ssl.keystore.location", "ssl.keystore.password"),
        ("ssl.keystore.key", "ssl.keystore.certificate.chain"),
        ("ssl.certificate.location", "ssl.key.location"),
        ("ssl.certificate.pem", "ssl.key.pem"),
    ),
)
_SETTING_NAME = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+")


class PropertySources:
    """Client properties gathered from files, a profile and flags, later sources winning.

    The one place sources are merged (commands and ``kshare profile add`` alike), so a
    profile means the same thing when it is saved as when it is used. ``origins``
    names each key's source for error messages; ``notes`` are warnings about the
    sources themselves (an empty file).
    """

    def __init__(self) -> None:
        self.properties: dict[str, str] = {}
        self.origins: dict[str, str] = {}
        self.notes: list[str] = []

    def add(self, values: Mapping[str, str], origin: str) -> None:
        for ways in _ALTERNATIVES:
            said = [way for way in ways if any(key in values for key in way)]
            for way in ways:
                if said and way not in said:
                    for key in way:
                        self.properties.pop(key, None)
                        self.origins.pop(key, None)
        for key, value in values.items():
            self.properties[key] = value
            self.origins[key] = origin

    def add_file(self, path: Path, *, label: str = "--command-config") -> None:
        values = load_properties(path, label=label)
        if not values:
            self.notes.append(f"{label} {path} has no properties")
        self.add(values, str(path))


def _unknown_key_warning(key: str, origin: str | None) -> str:
    """One line for a name no client defines, with the nearest name kshare reads.

    The name is repeated only when it looks like a setting's name: a lone word on a
    line of its own could be a password pasted without its key.
    """
    where = f"{origin}: " if origin else ""
    if not _SETTING_NAME.fullmatch(key):
        return f"{where}ignored a line that is not a client setting (its text is not shown)"
    close = difflib.get_close_matches(key, sorted(_KNOWN_KEYS), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{where}unknown property {key}{hint}; ignored"


#: The mechanisms a Java client logs in with under each login module. A login module
#: registers the SASL client of its own mechanisms (ScramLoginModule and
#: OAuthBearerLoginModule do so when loaded; PLAIN's client is the JDK's own), so a
#: Java client with PlainLoginModule and SCRAM or OAUTHBEARER finds no SASL client:
#: ``SaslClientAuthenticator.createSaslClient`` fails.
_LOGIN_MODULE_MECHANISMS = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
    "OAuthBearerLoginModule": ("OAUTHBEARER",),
}
#: The login module each mechanism needs, for the fix the refusal names.
_MECHANISM_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}
_UNSECURED_PREFIX = "unsecuredLogin"
_JAVA_TRIM = "".join(map(chr, range(0x21)))  # String.trim(): every char <= U+0020
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7e \t\r\n]*")


class _Reader:
    """Typed access to the merged properties, with errors that say where a key came from."""

    def __init__(self, properties: Mapping[str, str], origins: Mapping[str, str]) -> None:
        self.properties = properties
        self.origins = origins
        self.used: set[str] = set()

    def where(self, key: str) -> str:
        origin = self.origins.get(key)
        return f"{key} (from {origin})" if origin else key

    def error(self, key: str, problem: str) -> UsageError:
        return UsageError(f"{self.where(key)}: {problem}")

    def get(self, key: str) -> str | None:
        """The value trimmed as Kafka's ``ConfigDef`` trims every value, passwords included."""
        self.used.add(key)
        value = self.properties.get(key)
        return None if value is None else value.strip(_JAVA_TRIM)

    def has(self, key: str) -> bool:
        return key in self.properties

    def secret(self, key: str) -> Secret | None:
        value = self.get(key)
        return None if value is None else Secret(value)

    def path(self, key: str) -> Path | None:
        value = self.get(key)
        if value is None:
            return None
        if not value.strip():
            raise self.error(key, "empty path")
        return Path(value.strip()).expanduser()

    def flag(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise self.error(key, "expected true or false")

    def first(self, *keys: str) -> str | None:
        """The value of the first key present (Java and librdkafka spellings of one setting)."""
        for key in keys:
            value = self.get(key)
            if value is not None:
                return value
        return None

    def only_one(self, groups: Mapping[str, tuple[str, ...]]) -> str | None:
        """Which of several mutually exclusive ways to say one thing was used, if any."""
        present = [name for name, keys in groups.items() if any(self.has(k) for k in keys)]
        if len(present) > 1:
            listed = " and ".join(", ".join(groups[name]) for name in present)
            raise UsageError(f"set only one of {listed}")
        return present[0] if present else None


def _protocol(reader: _Reader) -> str:
    value = reader.get("security.protocol")
    if value is None:
        return "PLAINTEXT"
    protocol = value.strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise reader.error(
            "security.protocol", f"{value!r} is not one of {', '.join(SECURITY_PROTOCOLS)}"
        )
    return protocol


def _store_type(reader: _Reader, key: str) -> str:
    value = reader.get(key)
    kind = (value or "JKS").strip().upper()  # Kafka's default; a PKCS12 file loads as JKS too
    if kind not in ("JKS", "PKCS12", "PEM"):
        raise reader.error(key, f"{value!r} is not supported (use PKCS12 or PEM)")
    return kind


def _tls_settings(reader: _Reader) -> TlsSettings:
    truststore_type = _store_type(reader, "ssl.truststore.type")
    keystore_type = _store_type(reader, "ssl.keystore.type")
    trust = _trust(reader, truststore_type)
    key_password, keystore_password, identity = _identity(reader, keystore_type)
    return TlsSettings(
        ca_file=trust.ca_file,
        ca_pem=trust.ca_pem,
        truststore_file=trust.truststore_file,
        truststore_password=trust.truststore_password,
        key_password=key_password,
        keystore_password=keystore_password if "keystore_file" in identity else None,
        check_hostname=_check_hostname(reader),
        verify_certificates=reader.flag("enable.ssl.certificate.verification", True),
        **identity,
    )


@dataclass(frozen=True, slots=True)
class _Trust:
    """Where the CA certificates come from: at most one of the three, and the
    truststore's password only with a truststore."""

    ca_file: Path | None = None
    ca_pem: str | None = None
    truststore_file: Path | None = None
    truststore_password: Secret | None = None


def _trust(reader: _Reader, truststore_type: str) -> _Trust:
    """The trust settings, in Kafka's names (``ssl.truststore.*``) or librdkafka's
    (``ssl.ca.*``), one way only."""
    trust = reader.only_one(
        {
            "truststore": ("ssl.truststore.location",),
            "inline": ("ssl.truststore.certificates",),
            "ca_location": ("ssl.ca.location",),
            "ca_pem": ("ssl.ca.pem",),
        }
    )
    truststore_password = reader.secret("ssl.truststore.password")
    if trust == "truststore":
        if truststore_type == "PEM":
            return _Trust(ca_file=reader.path("ssl.truststore.location"))
        return _Trust(
            truststore_file=reader.path("ssl.truststore.location"),
            truststore_password=truststore_password,
        )
    if trust == "inline":
        if truststore_type != "PEM":
            raise reader.error(
                "ssl.truststore.certificates", "needs ssl.truststore.type=PEM (Kafka's rule)"
            )
        return _Trust(ca_pem=reader.get("ssl.truststore.certificates"))
    if trust == "ca_location":
        location = reader.get("ssl.ca.location") or ""
        if location.strip() != "probe":  # librdkafka: probe the system's CA paths
            return _Trust(ca_file=reader.path("ssl.ca.location"))
        return _Trust()
    if trust == "ca_pem":
        return _Trust(ca_pem=reader.get("ssl.ca.pem"))
    if truststore_password is not None:
        raise reader.error("ssl.truststore.password", "is set, but ssl.truststore.location is not")
    return _Trust()


def _identity(
    reader: _Reader, keystore_type: str
) -> tuple[Secret | None, Secret | None, dict[str, Any]]:
    """The key password, the keystore password, and the client certificate's
    ``TlsSettings`` fields: a keystore, an inline PEM pair, or files, one way only."""
    identity = reader.only_one(
        {
            "keystore": ("ssl.keystore.location",),
            "inline": ("ssl.keystore.key", "ssl.keystore.certificate.chain"),
            "files": ("ssl.certificate.location", "ssl.key.location"),
            "pem": ("ssl.certificate.pem", "ssl.key.pem"),
        }
    )
    key_password = reader.secret("ssl.key.password")
    keystore_password = reader.secret("ssl.keystore.password")
    settings: dict[str, Any] = {}
    if identity == "keystore":
        settings["keystore_file"] = reader.path("ssl.keystore.location")
        if keystore_type == "PEM" and keystore_password is not None:
            raise reader.error(
                "ssl.keystore.password",
                "cannot be used with ssl.keystore.type=PEM; set ssl.key.password instead",
            )
    elif identity == "inline":
        settings["cert_pem"], settings["key_pem"] = _pem_pair(
            reader, "ssl.keystore.certificate.chain", "ssl.keystore.key", "chain"
        )
        if keystore_type != "PEM":
            raise reader.error("ssl.keystore.key", "needs ssl.keystore.type=PEM (Kafka's rule)")
    elif identity == "files":
        settings["cert_file"] = reader.path("ssl.certificate.location")
        settings["key_file"] = reader.path("ssl.key.location")
        if settings["cert_file"] is None:
            raise UsageError("ssl.key.location is set, but ssl.certificate.location is not")
    elif identity == "pem":
        settings["cert_pem"], settings["key_pem"] = _pem_pair(
            reader, "ssl.certificate.pem", "ssl.key.pem", "certificate"
        )
    elif keystore_password is not None:
        raise reader.error("ssl.keystore.password", "is set, but ssl.keystore.location is not")
    return key_password, keystore_password, settings


def _pem_pair(reader: _Reader, chain_key: str, key_key: str, chain_word: str) -> tuple[str, Secret]:
    """An inline certificate (chain) and its private key, which go together."""
    chain = reader.get(chain_key)
    key = reader.secret(key_key)
    if chain is None or key is None:
        missing = key_key if key is None else chain_key
        raise UsageError(f"{missing} is missing: the key and its {chain_word} go together")
    return chain, key


def _check_hostname(reader: _Reader) -> bool:
    """``ssl.endpoint.identification.algorithm``: https (Kafka's default) or off."""
    algorithm = reader.get("ssl.endpoint.identification.algorithm")
    if algorithm is None or algorithm.strip().lower() == "https":
        return True
    if algorithm.strip().lower() in ("", "none"):
        return False
    raise reader.error(
        "ssl.endpoint.identification.algorithm",
        f"{algorithm!r} is not supported (https, or empty/none to turn it off)",
    )


def _jaas(reader: _Reader) -> JaasEntry | None:
    value = reader.get("sasl.jaas.config")
    if value is None:
        return None
    try:
        return parse_jaas(value)
    except JaasSyntaxError as error:
        raise reader.error("sasl.jaas.config", str(error)) from None


def _unsecured_from_jaas(reader: _Reader, entry: JaasEntry) -> UnsecuredJwt | None:
    """``unsecuredLogin*`` options, read as ``OAuthBearerUnsecuredLoginCallbackHandler`` does."""
    options = entry.options
    claims: list[tuple[str, ClaimValue]] = []
    for key, value in options.items():
        for prefix in ("StringClaim_", "NumberClaim_", "ListClaim_"):
            full = _UNSECURED_PREFIX + prefix
            if not key.startswith(full) or len(key) == len(full):
                continue
            name = key.removeprefix(full)
            if name in ("iat", "exp"):
                raise reader.error("sasl.jaas.config", f"cannot explicitly set the '{name}' claim")
            if prefix == "StringClaim_":
                claims.append((name, value))
            elif prefix == "NumberClaim_":
                try:
                    number = float(value)
                except ValueError:
                    number = math.nan
                if not math.isfinite(number):
                    raise reader.error("sasl.jaas.config", f"{key} is not a number")
                claims.append((name, number))
            else:
                claims.append((name, _java_list_claim(value)))
    if not claims:
        return None
    principal_name = (options.get(_UNSECURED_PREFIX + "PrincipalClaimName") or "").strip() or "sub"
    scope_name = (options.get(_UNSECURED_PREFIX + "ScopeClaimName") or "").strip() or "scope"
    lifetime_text = options.get(_UNSECURED_PREFIX + "LifetimeSeconds", "3600")
    try:
        lifetime = int(lifetime_text)
    except ValueError:
        raise reader.error(
            "sasl.jaas.config", "unsecuredLoginLifetimeSeconds is not an integer"
        ) from None
    jwt = UnsecuredJwt(tuple(claims), principal_name, scope_name, lifetime)
    if not jwt.principal.strip():
        raise reader.error(
            "sasl.jaas.config",
            f"the unsecured token has no '{principal_name}' claim "
            f'(set unsecuredLoginStringClaim_{principal_name}="...")',
        )
    return jwt


def _java_list_claim(value: str) -> tuple[str, ...]:
    """``unsecuredLoginListClaim_x=",a,b"``: the first character is the delimiter."""
    if len(value) <= 1:
        return ()
    delimiter, text = value[0], value[1:]
    elements = text.split(delimiter)
    # Java's String.split drops trailing empty strings but the handler adds one "" back.
    while elements and elements[-1] == "":
        elements.pop()
    if text.startswith(delimiter) or text.endswith(delimiter) or delimiter * 2 in text:
        elements.append("")
    return tuple(elements) if elements else ("",)


def _unsecured_from_librdkafka(reader: _Reader) -> tuple[UnsecuredJwt | None, dict[str, str]]:
    value = reader.get("sasl.oauthbearer.config")
    if value is None:
        return None, {}
    try:
        options, extensions = parse_oauthbearer_config(value)
    except UsageError as error:
        raise UsageError(f"{reader.where('sasl.oauthbearer.config')}: {error}") from None
    principal = options.get("principal")
    if principal is None:
        return None, extensions
    claims: list[tuple[str, ClaimValue]] = [(options.get("principalClaimName", "sub"), principal)]
    if "scope" in options:
        claims.append((options.get("scopeClaimName", "scope"), tuple(options["scope"].split(","))))
    lifetime_text = options.get("lifeSeconds", "3600")
    if not _is_number(lifetime_text) or int(lifetime_text) <= 0:
        raise reader.error("sasl.oauthbearer.config", "lifeSeconds must be a positive integer")
    jwt = UnsecuredJwt(
        tuple(claims),
        options.get("principalClaimName", "sub"),
        options.get("scopeClaimName", "scope"),
        int(lifetime_text),
    )
    return jwt, extensions


def _check_extensions(reader: _Reader, extensions: Mapping[str, str]) -> None:
    for name, value in extensions.items():
        if name == "auth" or not _EXTENSION_KEY.fullmatch(name):
            raise reader.error(
                "sasl.jaas.config", f"invalid SASL extension name {name!r} (letters, not 'auth')"
            )
        if not _EXTENSION_VALUE.fullmatch(value):
            raise reader.error("sasl.jaas.config", f"SASL extension {name!r} has an invalid value")


def _sasl_settings(reader: _Reader, warnings: list[str]) -> SaslSettings:
    mechanism_value = reader.first("sasl.mechanism", "sasl.mechanisms")
    mechanism_key = "sasl.mechanism" if reader.has("sasl.mechanism") else "sasl.mechanisms"
    mechanism = (mechanism_value or "GSSAPI").strip().upper()
    if mechanism == "GSSAPI":
        where = reader.where(mechanism_key) if mechanism_value else "sasl.mechanism"
        default = "" if mechanism_value else " (Kafka's default when it is not set)"
        raise UsageError(
            f"{where}: GSSAPI (Kerberos){default} is not supported; "
            f"set sasl.mechanism to one of {', '.join(SASL_MECHANISMS)}"
        )
    if mechanism not in SASL_MECHANISMS:
        raise reader.error(
            mechanism_key,
            f"{mechanism_value!r} is not supported; use one of {', '.join(SASL_MECHANISMS)}",
        )
    entry = _jaas(reader)
    if entry is not None:
        allowed = _LOGIN_MODULE_MECHANISMS.get(entry.module_name)
        if allowed is None:
            raise reader.error(
                "sasl.jaas.config",
                f"login module {entry.login_module} is not supported "
                "(PlainLoginModule, ScramLoginModule or OAuthBearerLoginModule)",
            )
        if mechanism not in allowed:
            # Java's words (SaslAuthenticationException), and both ways out.
            raise reader.error(
                "sasl.jaas.config",
                f"{entry.module_name} does not log in with sasl.mechanism={mechanism}; "
                f'Java clients refuse it ("Failed to create SaslClient with mechanism '
                f'{mechanism}"): use {_MECHANISM_LOGIN_MODULES[mechanism]}, or set '
                f"sasl.mechanism={allowed[0]}",
            )
    if mechanism == "OAUTHBEARER":
        return _oauthbearer_settings(reader, entry, warnings)

    if entry is not None:
        if entry.options.get("tokenauth", "false").lower() == "true":
            raise reader.error(
                "sasl.jaas.config", "delegation tokens (tokenauth) are not supported"
            )
        username = entry.options.get("username")
        jaas_password = entry.options.get("password")
        password = None if jaas_password is None else Secret(jaas_password)
        if username is None or password is None:
            missing = "username" if username is None else "password"
            raise reader.error("sasl.jaas.config", f"{entry.module_name} has no {missing} option")
        return SaslSettings(mechanism=mechanism, username=username, password=password)
    username = reader.get("sasl.username")
    password = reader.secret("sasl.password")
    if username is None or password is None:
        raise UsageError(
            f"SASL/{mechanism} needs a username and password: set sasl.jaas.config "
            '(org.apache.kafka.common.security.plain.PlainLoginModule required username="..." '
            'password="...";) or sasl.username and sasl.password'
        )
    return SaslSettings(mechanism=mechanism, username=username, password=password)


def _oauthbearer_settings(
    reader: _Reader, entry: JaasEntry | None, warnings: list[str]
) -> SaslSettings:
    token = reader.secret("kshare.oauthbearer.token")
    token_file = reader.path("kshare.oauthbearer.token.file")
    if token is not None and token_file is not None:
        raise UsageError("set only one of kshare.oauthbearer.token, kshare.oauthbearer.token.file")
    if token is not None and not token.reveal().strip():
        raise reader.error("kshare.oauthbearer.token", "empty token")
    jwt: UnsecuredJwt | None = None
    extensions: dict[str, str] = {}
    if entry is not None:
        jwt = _unsecured_from_jaas(reader, entry)
        extensions = {
            key.removeprefix(_UNSECURED_PREFIX + "Extension_"): value
            for key, value in entry.options.items()
            if key.startswith(_UNSECURED_PREFIX + "Extension_")
        }
    else:
        jwt, extensions = _unsecured_from_librdkafka(reader)
        reader.get("enable.sasl.oauthbearer.unsecure.jwt")
    _check_extensions(reader, extensions)
    if token is None and token_file is None and jwt is None:
        raise UsageError(
            "SASL/OAUTHBEARER needs a token: set kshare.oauthbearer.token.file (a file that "
            "something else keeps fresh) or kshare.oauthbearer.token; for a test cluster with "
            "unsecured tokens, sasl.jaas.config=...OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="<principal>"; (kshare does not fetch tokens from '
            "sasl.oauthbearer.token.endpoint.url)"
        )
    if jwt is not None and (token is not None or token_file is not None):
        warnings.append("unsecured JWT options ignored: a kshare.oauthbearer token is set")
        jwt = None
    return SaslSettings(
        mechanism="OAUTHBEARER",
        token=token,
        token_file=token_file,
        unsecured_jwt=jwt,
        extensions=tuple(extensions.items()),
    )


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _is_sasl_key(key: str) -> bool:
    return "sasl." in key or key.startswith("kshare.oauthbearer")


def settings_from_properties(
    properties: Mapping[str, str],
    *,
    bootstrap_servers: tuple[str, ...],
    origins: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
    quiet_origins: Collection[str] = (),
) -> ConnectionSettings:
    """Map Java or librdkafka client properties onto :class:`ConnectionSettings`.

    ``origins`` names where each key came from (a file, a profile, ``--property``),
    so an error can say which file to fix. Keys kshare does not read become
    ``warnings``, not refusals: a file written for Kafka's tools may carry consumer
    or producer settings that mean nothing to kshare (listed together), while a
    name no Kafka client defines is most likely a typo (one warning each, with the
    nearest name kshare reads). ``notes`` come first; keys whose origin is in
    ``quiet_origins`` (a saved profile, warned about when it was saved) get none.
    """
    origins = origins or {}
    reader = _Reader(properties, origins)
    warnings: list[str] = list(notes)
    loud = sorted(key for key in properties if origins.get(key) not in quiet_origins)
    unknown = [
        _unknown_key_warning(key, origins.get(key))
        for key in loud
        if key not in _KNOWN_KEYS and not is_client_key(key)
    ]
    try:
        protocol = _protocol(reader)
        tls = _tls_settings(reader) if protocol in ("SSL", "SASL_SSL") else None
        sasl = _sasl_settings(reader, warnings) if protocol.startswith("SASL_") else None
    except UsageError as error:
        # A misspelt key is the likeliest cause of a setting found missing
        # (sasl.jaas.confg: "needs a username and password"): say so in the one line.
        typos = [warning for warning in unknown if "(did you mean " in warning]
        if not typos:
            raise
        raise UsageError(f"{error}; {'; '.join(typos)}") from None
    client_id = reader.get("client.id")
    timeout_text = reader.get("request.timeout.ms")
    timeout = DEFAULT_REQUEST_TIMEOUT_MS
    if timeout_text is not None:
        if not _is_number(timeout_text) or int(timeout_text) <= 0:
            raise reader.error("request.timeout.ms", "expected a positive number of milliseconds")
        timeout = int(timeout_text)
    reader.get("bootstrap.servers")

    unused = [key for key in loud if key in _KNOWN_KEYS and key not in reader.used]
    off_plane = [
        key
        for key in unused
        if (tls is None and "ssl." in key) or (sasl is None and _is_sasl_key(key))
    ]
    if off_plane:
        warnings.append(f"ignored as security.protocol is {protocol}: {', '.join(off_plane)}")
    if rest := [key for key in unused if key not in off_plane]:
        warnings.append(f"ignored as not used with these settings: {', '.join(rest)}")
    foreign = [key for key in loud if key not in _KNOWN_KEYS and is_client_key(key)]
    if foreign:
        warnings.append(f"ignored properties kshare does not use: {', '.join(foreign)}")
    warnings.extend(unknown)
    return ConnectionSettings(
        bootstrap_servers=bootstrap_servers,
        security_protocol=protocol,
        tls=tls,
        sasl=sasl,
        client_id=client_id.strip() if client_id and client_id.strip() else DEFAULT_CLIENT_ID,
        request_timeout_ms=timeout,
        warnings=tuple(warnings),
    )
