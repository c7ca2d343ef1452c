"""What is secret, and how a secret is kept out of sight: in objects, and in printed properties.

A password or token travels as :class:`Secret`, whose ``repr`` and ``str`` are
``***``: a settings object can be logged, put in an exception or shown by
``--debug`` without leaking it. Only :meth:`Secret.reveal` gives the text, and only
the code that hands it to a socket or to librdkafka calls it. Properties printed by
``kshare profile show`` and ``--debug`` go through :func:`redact_property`, which
decides by a property's (or JAAS option's) name. :func:`secrets_of` finds every
secret a settings object holds, for the stderr writer to hide wherever the text
of one turns up (a broker's error message, a traceback).
"""

from __future__ import annotations

import difflib
import re
import secrets
from collections.abc import Iterable

__all__ = ["REDACTED", "Secret", "is_secret_name", "redact_property", "secrets_of"]

REDACTED = "***"


class Secret:
    """A string that never shows itself: ``repr`` and ``str`` are ``***``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret text, for the one place that must send it."""
        return self._value

    def __repr__(self) -> str:
        return REDACTED

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and secrets.compare_digest(
            self._value.encode("utf-8", "surrogatepass"),
            other._value.encode("utf-8", "surrogatepass"),
        )

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __bool__(self) -> bool:
        return bool(self._value)


_SECRET_WORDS = ("password", "secret", "token", "credential")
_SECRET_KEYS = frozenset({"ssl.keystore.key", "ssl.key.pem", "sasl.oauthbearer.config"})
_NOT_SECRET = re.compile(r"(\.file|\.location|\.type|\.url|\.method|\.name)$", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Whether a property or JAAS option name probably holds a secret (err towards hiding).

    A property name no client defines counts as the name it is a typo of: the value of
    ``ssl.key.pasword`` is a password all the same.
    """
    lowered = name.lower()
    if name in _SECRET_KEYS:
        return True
    if _NOT_SECRET.search(lowered):
        return False
    if any(word in lowered for word in _SECRET_WORDS):
        return True
    return _misspelt_secret_name(name)


def _misspelt_secret_name(name: str) -> bool:
    """Whether ``name`` is no client's property but close to one that holds a secret."""
    if "." not in name:
        return False
    from kshare_cli.connect.client_keys import JAVA_CLIENT_KEYS, LIBRDKAFKA_KEYS, is_client_key

    if is_client_key(name):
        return False
    secret_keys = sorted(
        key
        for key in {*JAVA_CLIENT_KEYS, *LIBRDKAFKA_KEYS, *_SECRET_KEYS, "kshare.oauthbearer.token"}
        if key in _SECRET_KEYS
        or (not _NOT_SECRET.search(key) and any(word in key for word in _SECRET_WORDS))
    )
    return bool(difflib.get_close_matches(name, secret_keys, n=1, cutoff=0.75))


def redact_property(key: str, value: str) -> str:
    """A property's value as ``kshare profile show`` and ``--debug`` may print it."""
    if key == "sasl.jaas.config":
        # Imported here: jaas.py imports this module for is_secret_name.
        from kshare_cli.connect.jaas import redact_jaas

        return redact_jaas(value)
    return REDACTED if is_secret_name(key) else value


def secrets_of(settings: object) -> tuple[str, ...]:
    """Every secret value reachable from a settings object (through slotted fields, a few
    levels deep), for the stderr writer to replace wherever it appears."""
    found: list[str] = []

    def walk(value: object, depth: int) -> None:
        if depth > 4 or value is None:
            return
        if isinstance(value, Secret):
            revealed = value.reveal()
            if revealed:
                found.append(revealed)
            return
        slots: Iterable[str] = getattr(type(value), "__slots__", ())
        for name in slots:
            walk(getattr(value, name, None), depth + 1)

    walk(settings, 0)
    return tuple(found)
