"""Kafka's topic-name rule (``Topic.validate``), at its edges."""

from __future__ import annotations

import pytest

from kshare_cli.errors import UsageError
from kshare_cli.topic_names import check_topic_name, topic_name_problem


@pytest.mark.parametrize(
    "name", ["a", "t" * 249, "orders.v2_eu-west", "__share_group_state", "...", ".a"]
)
def test_names_kafka_accepts(name: str) -> None:
    assert topic_name_problem(name) is None
    assert check_topic_name(name) == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "a topic name cannot be empty"),
        (".", "'.' is not a topic name (Kafka reserves '.' and '..')"),
        ("a b", "'a b' is not a topic name: it has ' '"),
        ("ü", "'ü' is not a topic name: it has 'ü'"),
        ("a:b/c", "'a:b/c' is not a topic name: it has '/:'"),
        ("x" * 250, "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'… (250 characters) is not"),
    ],
)
def test_names_kafka_refuses_say_why_and_name_the_option(name: str, reason: str) -> None:
    problem = topic_name_problem(name)
    assert problem is not None and problem.startswith(reason)
    with pytest.raises(UsageError) as raised:
        check_topic_name(name, "--dlq-topic")
    assert str(raised.value) == f"--dlq-topic: {problem}"
