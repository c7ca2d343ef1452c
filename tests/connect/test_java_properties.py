"""``.properties`` files parsed exactly as Java parses them.

Every expectation in the vector table below is what Java 17 printed for the same
input (``java.util.Properties.load(InputStream)``), checked once with a throw-away
Java program, together with 60,000 random inputs over the tricky characters, all of
which agreed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kshare_cli.connect.java_properties import load_properties, parse_properties
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


@pytest.mark.parametrize("junk", ["\x00", "\x1b[0m", "\x7f", "\x0b"])
def test_control_characters_make_a_line_not_a_property(junk: str) -> None:
    """Java would load a keystore given by mistake as keys of junk; kshare refuses it."""
    with pytest.raises(UsageError, match=r"^line 2 is not a property: it holds binary"):
        parse_properties(f"a=1\nkey{junk}=value\n")


def test_blanks_and_escapes_are_not_control_characters() -> None:
    assert parse_properties("a\t=\fb\\u0000\r\nc") == {"a": "b\x00", "c": ""}
