"""Bootstrap server lists: what is accepted, how it is normalised, and what each mistake says."""

from __future__ import annotations

import pytest

from kshare_cli.connect.bootstrap import parse_bootstrap, split_host_port
from kshare_cli.errors import UsageError


@pytest.mark.parametrize(
    ("value", "servers"),
    [
        ("kafka:9092", ("kafka:9092",)),
        (" a:1 , b.example.com:65535,", ("a:1", "b.example.com:65535")),
        ("10.0.0.1:9092", ("10.0.0.1:9092",)),
        ("[::1]:9092,[fe80::1%eth0]:9093", ("[::1]:9092", "[fe80::1%eth0]:9093")),
        ("kafka_broker-1:9092", ("kafka_broker-1:9092",)),
    ],
)
def test_bootstrap_servers(value: str, servers: tuple[str, ...]) -> None:
    assert parse_bootstrap(value) == servers


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("kafka", "bootstrap server 'kafka': expected host:port"),
        ("kafka:0", "the port must be 1-65535"),
        ("kafka:65536", "the port must be 1-65535"),
        ("kafka:http", "the port must be 1-65535"),
        ("::1:9092", "write IPv6 addresses as [address]:port"),
        ("[::1]9092", "write IPv6 addresses as [address]:port"),
        ("[kafka]:9092", "'kafka' is not an IPv6 address"),
        ("PLAINTEXT://kafka:9092", "write host:port, without 'PLAINTEXT://'"),
        ("ka fka:9092", "is not a host name"),
        (" , ", "empty bootstrap server list"),
    ],
)
def test_bad_bootstrap_servers(value: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_bootstrap(value)


def test_split_host_port() -> None:
    assert split_host_port("[::1]:9092") == ("::1", 9092)
    assert split_host_port("kafka:19092") == ("kafka", 19092)
