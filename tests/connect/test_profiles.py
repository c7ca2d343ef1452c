"""The profiles file: where it lives, what it holds, and that nobody else can read it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kshare_cli.connect.profiles import Profile, ProfileStore, default_profiles_path
from kshare_cli.errors import UsageError

SECRET = "pr0file-SECRET"


def test_where_the_file_lives(tmp_path: Path) -> None:
    assert default_profiles_path({"KSHARE_CONFIG": str(tmp_path / "k.toml")}) == tmp_path / "k.toml"
    assert default_profiles_path({"XDG_CONFIG_HOME": "/xdg", "HOME": "/home/u"}) == Path(
        "/xdg/kshare/config.toml"
    )
    # A relative XDG_CONFIG_HOME is invalid by the XDG specification and ignored.
    assert default_profiles_path({"XDG_CONFIG_HOME": "rel", "HOME": "/home/u"}) == Path(
        "/home/u/.config/kshare/config.toml"
    )
    assert default_profiles_path({"HOME": "/home/u"}) == Path("/home/u/.config/kshare/config.toml")
    assert default_profiles_path(
        {"KSHARE_CONFIG": str(tmp_path / "k.toml"), "XDG_CONFIG_HOME": "/xdg"}
    ) == (tmp_path / "k.toml")


def test_add_list_use_remove(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "kshare" / "config.toml")
    assert store.list() == [] and store.current() is None
    prod = Profile(
        "prod", ("k1:9093", "k2:9093"), Path("/etc/prod.properties"), (("client.id", "ops"),)
    )
    dev = Profile("dev", ("localhost:9092",))
    assert store.add(prod) is True  # the first profile becomes current by itself
    assert store.add(dev) is False
    assert store.list() == [dev, prod]  # sorted by name
    assert store.current() == "prod"
    assert store.get("prod") == prod
    store.use("dev")
    assert store.current() == "dev"
    assert store.remove("dev") is True
    assert store.current() is None
    assert store.list() == [prod]
    assert store.add(dev, use=True) is True and store.current() == "dev"


def test_the_file_is_private_and_replaced_atomically(tmp_path: Path) -> None:
    directory = tmp_path / "kshare"
    store = ProfileStore(directory / "config.toml")
    store.add(Profile("prod", ("k:1",), properties=(("sasl.password", SECRET),)))
    store.add(Profile("dev", ("k:2",)))
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert [p.name for p in directory.iterdir()] == ["config.toml"]  # no temporary left behind


def test_the_toml_layout(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "config.toml")
    store.add(
        Profile("prod", ("k1:9093", "k2:9093"), Path("/etc/p.properties"), (("client.id", "ops"),))
    )
    assert store.path.read_text() == (
        'current = "prod"\n'
        "\n"
        "[profiles.prod]\n"
        "bootstrap_servers = [\n"
        '    "k1:9093",\n'
        '    "k2:9093",\n'
        "]\n"
        'command_config = "/etc/p.properties"\n'
        "\n"
        "[profiles.prod.properties]\n"
        '"client.id" = "ops"\n'
    )


def test_hand_written_files_are_read_and_other_keys_kept(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        'editor_note = "keep me"\ncurrent = "a"\n[profiles.a]\nbootstrap_servers = "x:1, y:2"\n'
    )
    store = ProfileStore(path)
    assert store.get("a") == Profile("a", ("x:1", "y:2"))
    store.add(Profile("b", ("z:3",)))
    assert 'editor_note = "keep me"' in path.read_text()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[profiles\n", "is not valid TOML"),
        ("profiles = 3\n", "'profiles' must be a table"),
        ("current = 1\n", "'current' must be a string"),
        ("[profiles.a]\nbootstrap_servers = 9092\n", "bootstrap_servers must be a list"),
        ("[profiles.a]\nbootstrap_servers = ['k:1']\nproperties = {a = 1}\n", "properties must be"),
    ],
)
def test_broken_files_are_usage_errors_naming_the_file(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(content)
    with pytest.raises(UsageError) as caught:
        ProfileStore(path).list()
    assert str(path) in str(caught.value)
    assert message in str(caught.value)


def test_names_duplicates_and_missing_profiles(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "config.toml")
    store.add(Profile("prod", ("k:1",)))
    with pytest.raises(UsageError, match="profile 'prod' exists; pass --replace"):
        store.add(Profile("prod", ("k:2",)))
    store.add(Profile("prod", ("k:2",)), replace=True)
    assert store.get("prod").bootstrap_servers == ("k:2",)
    with pytest.raises(UsageError, match=r"invalid profile name 'a b'"):
        store.add(Profile("a b", ("k:1",)))
    with pytest.raises(UsageError, match=r"no profile named 'nope' \(profiles: prod\)"):
        store.use("nope")
    with pytest.raises(UsageError, match="no profile named 'nope'"):
        store.remove("nope")


def test_profile_repr_hides_secret_properties() -> None:
    profile = Profile(
        "p",
        ("k:1",),
        properties=(
            ("sasl.jaas.config", f'M required username="u" password="{SECRET}";'),
            ("ssl.key.password", SECRET),
            ("client.id", "ops"),
        ),
    )
    assert SECRET not in repr(profile)
    assert "client.id=ops" in repr(profile)
