"""Client properties merged from their sources, and librdkafka's ``sasl.oauthbearer.config``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kshare_cli.connect.property_mapping import PropertySources, parse_oauthbearer_config
from kshare_cli.errors import UsageError


def test_librdkafka_oauthbearer_config() -> None:
    settings, extensions = parse_oauthbearer_config(
        "principal=alice  scope=a,b lifeSeconds=60 extension_traceId=x1 principalClaimName=who"
    )
    assert settings == {
        "principal": "alice",
        "scope": "a,b",
        "lifeSeconds": "60",
        "principalClaimName": "who",
    }
    assert extensions == {"traceId": "x1"}
    with pytest.raises(UsageError, match="unrecognized item 'colour'"):
        parse_oauthbearer_config("principal=alice colour=blue")
    with pytest.raises(UsageError, match="empty 'principal='"):
        parse_oauthbearer_config("principal=")


def test_a_later_source_replaces_the_earlier_sources_other_ways_of_saying_it() -> None:
    sources = PropertySources()
    sources.add(
        {
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "pw",
            "ssl.ca.location": "/ca.pem",
            "client.id": "file",
        },
        "file",
    )
    sources.add({"sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": "x"}, "profile")
    sources.add({"ssl.truststore.location": "/t.p12", "sasl.password": "pw2"}, "--property")
    assert sources.properties == {
        "client.id": "file",
        "sasl.mechanism": "SCRAM-SHA-256",
        "ssl.truststore.location": "/t.p12",
        "sasl.password": "pw2",
    }
    assert sources.origins == {
        "client.id": "file",
        "sasl.mechanism": "profile",
        "ssl.truststore.location": "--property",
        "sasl.password": "--property",
    }


def test_one_source_may_say_a_setting_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "empty.properties"
    path.write_text("# nothing\n")
    sources = PropertySources()
    sources.add_file(path)
    sources.add({"sasl.mechanism": "PLAIN", "sasl.mechanisms": "PLAIN"}, "file")
    assert set(sources.properties) == {"sasl.mechanism", "sasl.mechanisms"}
    assert sources.notes == [f"--command-config {path} has no properties"]
