"""The data plane's view of the settings: librdkafka's configuration names, for confluent-kafka.

The control plane reads :class:`ConnectionSettings` directly; confluent-kafka needs
the same settings said in librdkafka's vocabulary, plus an ``oauth_cb`` where
librdkafka cannot get an OAUTHBEARER token alone. This is the one place that
vocabulary is written, so a property never means one thing to the admin commands
and another to ``kshare consume`` (``ConnectionSettings.confluent_config()`` and
friends delegate here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kshare_cli.connect.sasl_settings import SaslSettings
    from kshare_cli.connect.settings import ConnectionSettings

__all__ = ["confluent_config", "librdkafka_config", "needs_oauth_cb"]


def librdkafka_config(settings: ConnectionSettings) -> dict[str, str]:
    """The settings in librdkafka's names, secrets revealed (see
    :meth:`ConnectionSettings.librdkafka_config`)."""
    config = {
        "bootstrap.servers": ",".join(settings.bootstrap_servers),
        "security.protocol": settings.security_protocol,
        "client.id": settings.client_id,
    }
    if (tls := settings.effective_tls()) is not None:
        tls.add_librdkafka_config(config)
    sasl = settings.sasl
    if sasl is not None:
        config["sasl.mechanism"] = sasl.mechanism
        if sasl.username is not None:
            config["sasl.username"] = sasl.username
        if sasl.password is not None:
            config["sasl.password"] = sasl.password.reveal()
        if _librdkafka_unsecured_jwt(sasl):
            assert sasl.unsecured_jwt is not None
            config["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
            config["sasl.oauthbearer.config"] = _librdkafka_oauthbearer_config(sasl)
    return config


def needs_oauth_cb(settings: ConnectionSettings) -> bool:
    """Whether confluent-kafka needs ``oauth_cb`` (OAUTHBEARER beyond librdkafka's own JWT)."""
    return (
        settings.sasl is not None
        and settings.sasl.mechanism == "OAUTHBEARER"
        and not _librdkafka_unsecured_jwt(settings.sasl)
    )


def confluent_config(settings: ConnectionSettings) -> dict[str, Any]:
    """:func:`librdkafka_config` plus ``oauth_cb`` when librdkafka cannot get a token alone
    (see :meth:`ConnectionSettings.confluent_config`)."""
    config: dict[str, Any] = dict(librdkafka_config(settings))
    if needs_oauth_cb(settings):
        assert settings.sasl is not None
        # Before any client exists: confluent-kafka waits 10 s for a token it refuses.
        settings.sasl.oauth_token()
        config["oauth_cb"] = settings.sasl.oauth_cb
    return config


def _librdkafka_unsecured_jwt(sasl: SaslSettings) -> bool:
    """Whether librdkafka's built-in unsecured JWT says exactly what ours would.

    librdkafka's ``sasl.oauthbearer.config`` holds a principal, a list-valued scope
    and extensions, separated by spaces; anything else (other claims, a string
    scope, a space in a value) goes through ``oauth_cb`` instead.
    """
    jwt = sasl.unsecured_jwt
    if sasl.mechanism != "OAUTHBEARER" or jwt is None or sasl.token or sasl.token_file:
        return False
    claims = dict(jwt.claims)
    if not set(claims) <= {jwt.principal_claim_name, jwt.scope_claim_name}:
        return False
    scope = claims.get(jwt.scope_claim_name)
    if scope is not None and not (
        isinstance(scope, tuple)
        and scope
        and all(part and " " not in part and "," not in part for part in scope)
    ):
        return False
    return (
        " " not in jwt.principal
        and 0 < jwt.lifetime_seconds <= 2**31 - 1
        and all(" " not in value for _, value in sasl.extensions)
    )


def _librdkafka_oauthbearer_config(sasl: SaslSettings) -> str:
    jwt = sasl.unsecured_jwt
    assert jwt is not None
    parts = [f"principal={jwt.principal}", f"lifeSeconds={jwt.lifetime_seconds}"]
    if jwt.principal_claim_name != "sub":
        parts.append(f"principalClaimName={jwt.principal_claim_name}")
    scope = dict(jwt.claims).get(jwt.scope_claim_name)
    if scope is not None:
        if jwt.scope_claim_name != "scope":
            parts.append(f"scopeClaimName={jwt.scope_claim_name}")
        assert isinstance(scope, tuple)  # _librdkafka_unsecured_jwt admits list scopes only
        parts.append(f"scope={','.join(scope)}")
    parts.extend(f"extension_{name}={value}" for name, value in sasl.extensions)
    return " ".join(parts)
