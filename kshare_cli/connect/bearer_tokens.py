"""OAUTHBEARER tokens: reading a JWT's claims, judging them as Kafka would, minting unsecured ones.

Kafka's validators refuse a token whose ``exp`` has passed, whose ``nbf`` has not
come or whose ``iat`` is in the future; kshare reads the same claims
(:func:`token_claims_problem`) to say which one and when, before connecting and
after a broker's ``invalid_token``. Unsecured tokens (test clusters) are minted
here as Kafka's login handler mints them (:class:`UnsecuredJwt`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ClaimValue", "UnsecuredJwt", "jwt_claims", "numeric_claim", "token_claims_problem"]

ClaimValue = str | float | tuple[str, ...]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwt_claims(token: str) -> dict[str, Any] | None:
    """The claims of a JWS compact token, unverified; None for an opaque token."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except (binascii.Error, ValueError):
        return None
    return claims if isinstance(claims, dict) else None


def numeric_claim(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def token_claims_problem(token: str, now: float | None = None) -> str | None:
    """Why a bearer token's own claims make any broker refuse it now; None when they do not.

    The one home of the time checks of Kafka's validators
    (``OAuthBearerValidationUtils``: ``exp`` not yet passed, ``iat`` not in the
    future, with no clock skew allowed by default; JWT validators also honour
    ``nbf``). kshare holds the token, so it says which claim and when, before a
    client is built (librdkafka refuses an expired token only after waiting 10 s
    for one) and after a broker answered ``invalid_token``. An opaque (non-JWT)
    token has no claims to read: None.
    """
    claims = jwt_claims(token)
    if claims is None:
        return None
    now = time.time() if now is None else now
    expires = numeric_claim(claims, "exp")
    if expires is not None and expires <= now:
        return f"the OAUTHBEARER token expired at {_utc(expires)} ({_span(now - expires)} ago)"
    not_before = numeric_claim(claims, "nbf")
    if not_before is not None and not_before > now:
        return (
            f"the OAUTHBEARER token is not valid before {_utc(not_before)} "
            f"(in {_span(not_before - now)})"
        )
    issued = numeric_claim(claims, "iat")
    if issued is not None and issued > now:
        return (
            f"the OAUTHBEARER token was issued in the future, at {_utc(issued)} "
            f"({_span(issued - now)} from now: check this machine's clock)"
        )
    return None


@dataclass(frozen=True, slots=True)
class UnsecuredJwt:
    """An unsigned JWT minted afresh for each connection, as Kafka's unsecured login does.

    ``OAuthBearerUnsecuredLoginCallbackHandler`` (``unsecuredLoginStringClaim_sub="alice"``)
    and librdkafka's ``enable.sasl.oauthbearer.unsecure.jwt`` both build
    ``base64url({"alg":"none"}).base64url(claims).`` with ``exp`` and ``iat``; only
    brokers configured for unsecured tokens (test clusters) accept it.
    """

    claims: tuple[tuple[str, ClaimValue], ...]
    principal_claim_name: str = "sub"
    scope_claim_name: str = "scope"
    lifetime_seconds: int = 3600

    @property
    def principal(self) -> str:
        value = dict(self.claims).get(self.principal_claim_name)
        return value if isinstance(value, str) else ""

    def mint(self, now: float | None = None) -> str:
        """A token whose ``iat`` is never after ``now``, as Kafka's validator sees it.

        Kafka's validator (clock skew 0 by default) refuses ``1000 * iat`` greater
        than its own ``currentTimeMillis()``, so the time is cut (floored) to the
        millisecond as Kafka's login handler does (``time.milliseconds() / 1000.0``):
        rounding could put ``iat`` up to half a millisecond in the future.
        """
        issued_ms = math.floor((time.time() if now is None else now) * 1000)
        payload: dict[str, Any] = {
            "exp": (issued_ms + self.lifetime_seconds * 1000) / 1000,
            "iat": issued_ms / 1000,
        }
        for name, value in self.claims:
            payload[name] = list(value) if isinstance(value, tuple) else value
        header = json.dumps({"alg": "none"}, separators=(",", ":")).encode()
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        return f"{_b64url(header)}.{_b64url(body)}."
