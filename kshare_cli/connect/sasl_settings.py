"""SASL settings: the mechanism, its credentials, and the bearer token for each connection.

Both planes take their credentials from :class:`SaslSettings`: the wire client's
SASL exchange asks :meth:`SaslSettings.oauth_token`, confluent-kafka calls
:meth:`SaslSettings.oauth_cb`, so a token file is re-read (or a token minted) the
same way for the admin commands and for ``kshare consume``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from kshare_cli.connect.bearer_tokens import (
    UnsecuredJwt,
    jwt_claims,
    numeric_claim,
    token_claims_problem,
)
from kshare_cli.connect.secret import Secret
from kshare_cli.errors import AuthenticationFailed, UsageError

__all__ = ["SASL_MECHANISMS", "SaslSettings"]

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
# A static token's lifetime is unknown when it is not a JWT: librdkafka then asks
# again (re-reading a token file) after 80% of this.
_OPAQUE_TOKEN_LIFETIME_S = 300.0
# What librdkafka is told of a token that has already expired: long enough to send it, so
# that the broker's refusal, not a callback failure, ends the connection.
_REFUSED_TOKEN_LIFETIME_S = 5.0


@dataclass(frozen=True, slots=True)
class SaslSettings:
    """SASL mechanism and credentials; the password and any static token are :class:`Secret`."""

    mechanism: str  # "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512" | "OAUTHBEARER"
    username: str | None = None
    password: Secret | None = None
    token: Secret | None = None  # OAUTHBEARER static token
    token_file: Path | None = None  # OAUTHBEARER token, re-read for every connection
    unsecured_jwt: UnsecuredJwt | None = None  # OAUTHBEARER unsecured token, minted per connection
    extensions: tuple[tuple[str, str], ...] = ()  # OAUTHBEARER SASL extensions (RFC 7628)
    # The token oauth_cb last handed to librdkafka, kept for a refresh that cannot read a new one.
    _handed_out: list[str] = field(default_factory=list, compare=False, repr=False, hash=False)

    def oauth_token(self, *, check_claims: bool = True) -> str:
        """The bearer token for the next connection (re-reading ``token_file``, or minting).

        Raises UsageError naming the file when it cannot be read or is empty, and
        (unless ``check_claims`` is false) AuthenticationFailed when the token's
        own claims say no broker will take it now (:func:`token_claims_problem`).
        """
        token = self._read_token()
        problem = token_claims_problem(token) if check_claims else None
        if problem is not None:
            raise AuthenticationFailed(f"{problem}; {self._fresh_token_hint()}")
        return token

    def _fresh_token_hint(self) -> str:
        """Where the token came from, so the fix names the setting that made it."""
        if self.token_file is not None:
            return f"put a fresh token in kshare.oauthbearer.token.file {self.token_file}"
        if self.token is None and self.unsecured_jwt is not None:
            # Minted a moment ago (OAuthBearerLoginModule's unsecuredLogin* options, or
            # librdkafka's sasl.oauthbearer.config): its options rule it out, not its age.
            lifetime = self.unsecured_jwt.lifetime_seconds
            if lifetime <= 0:
                return (
                    f"the token is minted from sasl.jaas.config with "
                    f"unsecuredLoginLifetimeSeconds={lifetime}: set it to a positive number "
                    "of seconds (Kafka's default is 3600)"
                )
            return (
                "the token is minted from sasl.jaas.config's unsecuredLogin* options: fix the "
                "claim there (or this machine's clock)"
            )
        return "set kshare.oauthbearer.token to a fresh token"

    def _read_token(self) -> str:
        if self.token is not None:
            return self.token.reveal()
        if self.token_file is not None:
            try:
                text = self.token_file.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as error:
                reason = getattr(error, "strerror", None) or "not UTF-8 text"
                raise UsageError(
                    f"cannot read kshare.oauthbearer.token.file {self.token_file}: {reason}"
                ) from None
            if not text:
                raise UsageError(f"kshare.oauthbearer.token.file {self.token_file} is empty")
            return text
        if self.unsecured_jwt is not None:
            return self.unsecured_jwt.mint()
        raise UsageError(f"SASL/{self.mechanism} has no bearer token configured")

    def oauth_cb(self, config: str = "") -> tuple[str, float, str, dict[str, str]]:
        """confluent-kafka's ``oauth_cb``: ``(token, expiry epoch seconds, principal, extensions)``.

        librdkafka has no setting for a static token; it calls this before the
        token expires (at 80% of its lifetime), which re-reads a token file. A
        JWT's own ``exp`` is used when present; an opaque token is re-read every
        few minutes. ``config`` is librdkafka's ``sasl.oauthbearer.config``, unused.

        Whatever this raises, confluent-kafka turns into a 10 s wait and "OAuth
        token not set" (a SystemError when a ShareConsumer is being built), so an
        expired token is checked before any client is built
        (:meth:`ConnectionSettings.confluent_config`) and here it is handed over
        as it is: librdkafka refuses an ``exp`` already past, so a token that
        expired since is given a moment's lifetime, the broker answers
        ``invalid_token``, and kshare names the claim (:func:`token_claims_problem`).
        """
        try:
            token = self.oauth_token(check_claims=False)
        except UsageError:
            if not self._handed_out:
                raise  # the first token, read moments ago by confluent_config: a race
            # A token file being rewritten (or gone): keep the session on the token it has.
            token = self._handed_out[-1]
        self._handed_out[:] = [token]
        claims = jwt_claims(token) or {}
        expiry = numeric_claim(claims, "exp")
        if expiry is None:
            expiry = time.time() + _OPAQUE_TOKEN_LIFETIME_S
        expiry = max(expiry, time.time() + _REFUSED_TOKEN_LIFETIME_S)
        principal_claim = (
            self.unsecured_jwt.principal_claim_name if self.unsecured_jwt is not None else "sub"
        )
        principal = claims.get(principal_claim)
        if not isinstance(principal, str) or not principal:
            principal = self.username or "kshare"
        return token, float(expiry), principal, dict(self.extensions)
