"""The thresholds ``kshare health`` and ``kshare exporter`` share are one declaration each.

Both commands must spell a threshold the same way and refuse the same values, so
a change to one (a new metavar, a wider check) cannot leave the other behind.
"""

from __future__ import annotations

from typing import Any

import pytest
import typer

from kshare_cli.cli import threshold_options
from kshare_cli.cli.app import app
from kshare_cli.errors import UsageError


def _options(command: str) -> dict[str, Any]:
    """The command's options as Click built them from the Typer app (Typer's own Click)."""
    group: Any = typer.main.get_command(app)
    with group.make_context("kshare", [command, "--help"], resilient_parsing=True) as context:
        built = group.get_command(context, command)
    return {param.opts[0]: param for param in built.params}


@pytest.mark.parametrize(
    "flag", ["--lag-above", "--archived-above", "--time-lag", "--dlq-rate-above"]
)
def test_health_and_exporter_declare_the_threshold_alike(flag: str) -> None:
    health, exporter = _options("health")[flag], _options("exporter")[flag]
    assert (health.metavar, health.type.name, health.is_flag, health.show_default) == (
        exporter.metavar,
        exporter.type.name,
        exporter.is_flag,
        exporter.show_default,
    )
    assert health.help != exporter.help  # each command says it in its own words


@pytest.mark.parametrize(
    ("lag_above", "archived_above", "refused"),
    [(-1, None, "--lag-above must be 0 or more, not -1"), (0, -2, "--archived-above")],
)
def test_a_negative_threshold_is_refused_the_same_way(
    lag_above: int, archived_above: int | None, refused: str
) -> None:
    with pytest.raises(UsageError, match=refused):
        threshold_options.check_thresholds(lag_above, archived_above)
    threshold_options.check_thresholds(0, None)


def test_dashboard_and_exporter_declare_stall_after_alike() -> None:
    """One stall rule: the same flag, metavar and default, and that default is the services'."""
    from kshare_cli.cli import durations
    from kshare_cli.services.health import DEFAULT_STALL_AFTER_S

    dashboard, exporter = (
        _options("dashboard")["--stall-after"],
        _options("exporter")["--stall-after"],
    )
    assert (dashboard.metavar, dashboard.default) == (exporter.metavar, exporter.default)
    assert dashboard.default == threshold_options.DEFAULT_STALL_AFTER
    seconds = durations.seconds("--stall-after", threshold_options.DEFAULT_STALL_AFTER, bare="s")
    assert seconds == DEFAULT_STALL_AFTER_S
    assert dashboard.help != exporter.help  # each command says it in its own words
