"""``sasl.jaas.config`` parsed exactly as Kafka's ``JaasConfig`` parses it.

Every expectation in the vector table below is what Java 17 printed for the same
input (a ``java.io.StreamTokenizer`` configured as Kafka's ``JaasConfig`` configures
it), checked once with a throw-away Java program, together with 60,000 random inputs
over the tricky characters, all of which agreed.
"""

from __future__ import annotations

import pytest

from kshare_cli.connect.jaas import JaasSyntaxError, parse_jaas, parse_jaas_entries, redact_jaas

# (sasl.jaas.config, (login module, flag, options)) -- tokens as Java's StreamTokenizer gives them
JAVA_JAAS = [
    (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
        'password="p@ss;word";',
        (
            "org.apache.kafka.common.security.plain.PlainLoginModule",
            "required",
            {"username": "alice", "password": "p@ss;word"},
        ),
    ),
    ('/* c */ M required // line\n user="a";', ("M", "required", {"user": "a"})),
    (
        'M required password="a\\"b\\\\c\\n\\101\\0\\08\\477x";',
        ("M", "required", {"password": "a\"b\\c\nA\x00\x008'7x"}),  # C and octal escapes
    ),
    ("M required password='x\"y';", ("M", "required", {"password": 'x"y'})),
    (
        "M required username=alice password=s3cret;",
        ("M", "required", {"username": "alice", "password": "s3cret"}),
    ),
    ('M required password="unterminated\n;', ("M", "required", {"password": "unterminated"})),
    (
        'M required username=alice /x\n password="p";',
        ("M", "required", {"username": "alice", "password": "p"}),
    ),
    ("M required a$b_c-d.e=v1.2;", ("M", "required", {"a$b_c-d.e": "v1.2"})),
    ('"quoted.Module" optional k="v";', ("quoted.Module", "optional", {"k": "v"})),
    ('M Required k="caf\u00e9 \u4e2d";', ("M", "Required", {"k": "caf\u00e9 \u4e2d"})),
    ("M required k=\u00e9t\u00e9;", ("M", "required", {"k": "\u00e9t\u00e9"})),
]


@pytest.mark.parametrize(("text", "expected"), JAVA_JAAS)
def test_jaas_parses_as_kafka_does(text: str, expected: tuple[str, str, dict[str, str]]) -> None:
    entry = parse_jaas(text)
    assert (entry.login_module, entry.control_flag, dict(entry.options)) == expected


SECRET = "hunter2-SECRET"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (f'M required username="u" password="{SECRET}"', "not terminated by semi-colon"),
        (f'M username="u" password="{SECRET}";', "invalid login module control flag 'username'"),
        ("M", "control flag not specified"),
        (f"M required password=123{SECRET};", "value not specified for key 'password'"),
        (f'M required username="u" "{SECRET}";', "value not specified for an option"),
        (f'M required username="u" {SECRET} ;', "value not specified for an option"),
        (f"M required password -{SECRET};", "value not specified for key 'password'"),
        # Java's StreamTokenizer: a lone '/' followed by a line end comments out the next line.
        (f'M required username="u" /\n password="{SECRET}";', "not terminated by semi-colon"),
        (f'A required x="1"; B required password="{SECRET}";', "contains 2 login modules"),
        ("", "login module not specified"),
        ("/* only a comment */", "login module not specified"),
    ],
)
def test_malformed_jaas_is_refused_without_echoing_values(text: str, problem: str) -> None:
    with pytest.raises(JaasSyntaxError) as caught:
        parse_jaas(text)
    assert problem in str(caught.value)
    assert SECRET not in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_jaas_keeps_every_entry_for_the_count_check() -> None:
    entries = parse_jaas_entries('A required; B optional k="v";')
    assert [(e.login_module, e.control_flag, dict(e.options)) for e in entries] == [
        ("A", "required", {}),
        ("B", "optional", {"k": "v"}),
    ]


def test_jaas_entry_repr_shows_option_names_only() -> None:
    entry = parse_jaas(f'M required username="alice" password="{SECRET}";')
    assert SECRET not in repr(entry)
    assert "'password'" in repr(entry)


def test_redact_jaas_hides_secret_options_and_keeps_the_rest() -> None:
    text = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{SECRET}";'
    )
    shown = redact_jaas(text)
    assert SECRET not in shown
    assert shown == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="***";'
    )
    assert parse_jaas(shown).options["password"] == "***"  # still valid JAAS
    assert redact_jaas(f'M required password="{SECRET}"') == "***"  # unparsable: all hidden
