"""One error hierarchy and one table of exit codes for every kshare command.

Lower layers raise these; only the command edge turns them into an exit code
and one line on stderr. stdout carries data and nothing else, so a script can
always trust what it reads there.
"""

from __future__ import annotations

import enum
from typing import Final

#: Kafka's error codes for a right the principal lacks: TOPIC_, GROUP_ and
#: CLUSTER_AUTHORIZATION_FAILED (the same numbers on the wire and in librdkafka).
AUTHORIZATION_ERROR_CODES: Final = frozenset({29, 30, 31})


class ExitCode(enum.IntEnum):
    """Documented exit codes (README, man page); tests hold every command to them."""

    OK = 0
    PARTIAL = 1
    USAGE = 2
    CONNECTION = 3
    TIMEOUT = 4
    NOT_FOUND = 5
    NOT_AUTHORIZED = 6
    INTERRUPTED = 130


class KshareError(Exception):
    """Base of every error kshare reports to an operator."""

    exit_code: ExitCode = ExitCode.PARTIAL


class UsageError(KshareError):
    """Bad input from the command line or a file; nothing was changed."""

    exit_code = ExitCode.USAGE


class ConnectionFailed(KshareError):
    """The cluster could not be reached, or refused our credentials."""

    exit_code = ExitCode.CONNECTION


class TimedOut(KshareError):
    """The operation did not finish within --timeout."""

    exit_code = ExitCode.TIMEOUT


class NotFound(KshareError):
    """A group, topic or partition that does not exist."""

    exit_code = ExitCode.NOT_FOUND


class NotAuthorized(KshareError):
    """The cluster's authorizer refused the principal a right the command needs.

    Kafka's TOPIC_, GROUP_ and CLUSTER_AUTHORIZATION_FAILED, on either plane. A
    command that read something else despite it (other groups answered) is a
    partial answer (exit 1) instead; this is for when the refusal is the answer.
    """

    exit_code = ExitCode.NOT_AUTHORIZED


class Refused(KshareError):
    """The cluster (or our safety checks) refused a change, e.g. a non-empty group."""

    exit_code = ExitCode.PARTIAL


class AuthenticationFailed(ConnectionFailed):
    """The cluster refused our credentials or our certificate (SASL or TLS)."""


class IncompatibleBroker(ConnectionFailed):
    """The broker does not speak what the command needs (e.g. no share-group APIs)."""


def exit_code_for(error: BaseException) -> ExitCode:
    """The documented exit code for any error that reaches a command's edge."""
    if isinstance(error, KshareError):
        return error.exit_code
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.PARTIAL
