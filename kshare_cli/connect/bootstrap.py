"""Bootstrap server lists: ``host:port[,host:port...]`` checked and normalised, IPv6 included.

Every source of bootstrap servers (the flag, the environment, a profile, a
properties file) is read by these two functions, so a mistake is named the same
way wherever it was made.
"""

from __future__ import annotations

import re

from kshare_cli.errors import UsageError

__all__ = ["parse_bootstrap", "split_host_port"]

_HOST = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?")


def split_host_port(address: str) -> tuple[str, int]:
    """``host:port`` or ``[ipv6]:port`` to (host, port); UsageError saying what is wrong."""
    import ipaddress

    text = address.strip()
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise UsageError(f"bootstrap server {address!r}: write host:port, without '{scheme}://'")
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1 : close + 2] != ":":
            raise UsageError(
                f"bootstrap server {address!r}: write IPv6 addresses as [address]:port"
            )
        host, port_text = text[1:close], text[close + 2 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise UsageError(
                f"bootstrap server {address!r}: {host!r} is not an IPv6 address"
            ) from None
    else:
        host, separator, port_text = text.rpartition(":")
        if not separator or not host:
            raise UsageError(f"bootstrap server {address!r}: expected host:port")
        if ":" in host:
            raise UsageError(
                f"bootstrap server {address!r}: write IPv6 addresses as [address]:port"
            )
        if not _HOST.fullmatch(host):
            raise UsageError(f"bootstrap server {address!r}: {host!r} is not a host name")
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise UsageError(f"bootstrap server {address!r}: the port must be 1-65535")
    return host, int(port_text)


def parse_bootstrap(value: str) -> tuple[str, ...]:
    """A comma-separated ``host:port`` list, each validated, normalised (IPv6 in brackets)."""
    servers = []
    for part in value.split(","):
        if not part.strip():
            continue
        host, port = split_host_port(part)
        servers.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    if not servers:
        raise UsageError("empty bootstrap server list: expected host:port[,host:port...]")
    return tuple(servers)
