"""``.properties`` and ``sasl.jaas.config`` parsed exactly as Java parses them.

Every expectation in the two vector tables below is what Java 17 printed for the
same input (``java.util.Properties.load(InputStream)``, and a
``java.io.StreamTokenizer`` configured as Kafka's ``JaasConfig`` configures it),
checked once with a throw-away Java program, together with 60,000 random inputs
over the tricky characters, all of which agreed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kshare_cli.connect.jaas import JaasSyntaxError, parse_jaas, parse_jaas_entries, redact_jaas
from kshare_cli.connect.java_properties import load_properties, parse_properties
from kshare_cli.connect.property_mapping import PropertySources, parse_oauthbearer_config
from kshare_cli.connect.secret import redact_property
from kshare_cli.errors import UsageError

# (file bytes, what Java's Properties.load(InputStream) gives)
JAVA_PROPERTIES = [
    (b"a=b", {"a": "b"}),
    (b"a = b", {"a": "b"}),
    (b"a:b", {"a": "b"}),
    (b"a b", {"a": "b"}),
    (b"a\t  = \t b  ", {"a": "b  "}),  # trailing blanks stay
    (b"a==b", {"a": "=b"}),
    (b"a = = b", {"a": "= b"}),  # only one separator is skipped
    (b"a :=b", {"a": "=b"}),
    (b"# comment\n! also\n  #indented\na=1", {"a": "1"}),
    (b"a=x\\\n   y", {"a": "xy"}),  # continuation drops the next line's indent
    (b"a=x\\\\\ny=2", {"a": "x\\", "y": "2"}),  # an even run of backslashes does not continue
    (b"a=x\\\\\\\n y", {"a": "x\\y"}),  # an odd run does
    (b"a=x\\\n#not comment", {"a": "x#not comment"}),
    (b"\\\n#comment\nb=1", {"b": "1"}),  # an emptied logical line can still be a comment
    (b"#only\\\nb=1", {"b": "1"}),  # a comment never continues
    (b"a=x\\\n\nb=1", {"a": "x", "b": "1"}),  # an empty continuation line ends the value
    (b"a=x\\\n   \nb=1", {"a": "x", "b": "1"}),
    (b"a\\\n b=c", {"ab": "c"}),
    (b"key\\ with\\ spaces = v", {"key with spaces": "v"}),
    (b"k\\:colon=v", {"k:colon": "v"}),
    (b"k\\=eq=v", {"k=eq": "v"}),
    (b"k=\\u00e9\\u0041", {"k": "\u00e9A"}),
    (b"k=\\ud83d\\ude00", {"k": "\U0001f600"}),  # a UTF-16 surrogate pair is one character
    (b"k=tab\\there\\nnl\\r\\f", {"k": "tab\there\nnl\r\f"}),
    (b"k=\\q\\z\\\\", {"k": "qz\\"}),
    (b"k", {"k": ""}),
    (b"k=", {"k": ""}),
    (b"=v", {"": "v"}),
    (b":v", {"": "v"}),
    (b"a=1\r\nb=2\r\n", {"a": "1", "b": "2"}),
    (b"a=1\rb=2", {"a": "1", "b": "2"}),
    (b"a=x\\\r\n  y", {"a": "xy"}),
    (b"a=1\na=2", {"a": "2"}),
    (b"a=x\\", {"a": "x"}),  # a backslash at the end of the file is dropped
    (b"k=\xc3\xa9", {"k": "\u00c3\u00a9"}),  # Kafka reads bytes as ISO-8859-1
    (b"\x0c a=1", {"a": "1"}),
    (b"  \n\t\n", {}),
    (b"k=v\\ \\ ", {"k": "v  "}),
    (b"a=  leading and trailing  ", {"a": "leading and trailing  "}),
]


@pytest.mark.parametrize(("data", "expected"), JAVA_PROPERTIES)
def test_properties_parse_as_java_does(
    tmp_path: Path, data: bytes, expected: dict[str, str]
) -> None:
    path = tmp_path / "client.properties"
    path.write_bytes(data)
    assert load_properties(path) == expected


@pytest.mark.parametrize(
    ("data", "line"), [(b"k=\\u12", 1), (b"k=\\u00zz", 1), (b"x=1\n\nk=v\\u004", 3)]
)
def test_malformed_unicode_escape_is_a_usage_error_naming_file_and_line(
    tmp_path: Path, data: bytes, line: int
) -> None:
    path = tmp_path / "bad.properties"
    path.write_bytes(data)
    with pytest.raises(UsageError) as caught:
        load_properties(path)
    assert str(caught.value) == f"--command-config {path}: line {line}: malformed \\uxxxx escape"


def test_line_numbers_count_comments_and_continuations() -> None:
    text = "# c\n\na=x\\\n  y\nb=\\uZZZZ\n"
    with pytest.raises(UsageError, match="line 5"):
        parse_properties(text)


def test_unreadable_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    with pytest.raises(UsageError, match=f"cannot read --command-config {missing}: No such file"):
        load_properties(missing)
    with pytest.raises(UsageError, match="it is a directory"):
        load_properties(tmp_path)


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


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("sasl.password", SECRET, "***"),
        ("ssl.keystore.password", SECRET, "***"),
        ("ssl.key.pem", SECRET, "***"),
        ("ssl.keystore.key", SECRET, "***"),
        ("kshare.oauthbearer.token", SECRET, "***"),
        ("sasl.oauthbearer.client.secret", SECRET, "***"),
        ("kshare.oauthbearer.token.file", "/run/token", "/run/token"),
        ("ssl.truststore.location", "/etc/t.p12", "/etc/t.p12"),
        ("client.id", "ops", "ops"),
        (
            "sasl.jaas.config",
            f'M required username="u" password="{SECRET}";',
            'M required username="u" password="***";',
        ),
    ],
)
def test_redact_property(key: str, value: str, shown: str) -> None:
    assert redact_property(key, value) == shown


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


@pytest.mark.parametrize("junk", ["\x00", "\x1b[0m", "\x7f", "\x0b"])
def test_control_characters_make_a_line_not_a_property(junk: str) -> None:
    """Java would load a keystore given by mistake as keys of junk; kshare refuses it."""
    with pytest.raises(UsageError, match=r"^line 2 is not a property: it holds binary"):
        parse_properties(f"a=1\nkey{junk}=value\n")


def test_blanks_and_escapes_are_not_control_characters() -> None:
    assert parse_properties("a\t=\fb\\u0000\r\nc") == {"a": "b\x00", "c": ""}


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
