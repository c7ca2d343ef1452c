"""Renderers (Rich tables, Kafka's plain text, JSON, JSONL, CSV, YAML), one per domain model.

Every renderer is a pure function from a model to text; the command writes the
text to stdout, and the lines of ``notices`` (Kafka's informational stderr
lines) to stderr, beside the result's ``errors()``. ``render`` picks the
renderer for a model, so a command hands over whatever the service returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypeAlias

from kshare_cli.admin.models import GroupDescriptions, GroupListing, ShareGroupOffsets
from kshare_cli.render.output_formats import OutputFormat

if TYPE_CHECKING:
    # A plan comes only from reset-offsets, which has imported admin/reset.py already;
    # list and describe are spared importing it here.
    from kshare_cli.admin.reset import ResetPlan

__all__ = ["OutputFormat", "View", "notices", "render"]

#: The describe views of ``kafka-share-groups.sh``; offsets is its default.
View = Literal["offsets", "members", "state"]

#: (group id, topic, partition) → seconds, as ``render.offsets.LagAges``.
LagAges = Mapping[tuple[str, str, int], float | None]

Model: TypeAlias = "GroupListing | GroupDescriptions | ShareGroupOffsets | ResetPlan"


def render(
    model: Model,
    fmt: OutputFormat | str,
    *,
    view: View | None = None,
    verbose: bool = False,
    with_state: bool = False,
    width: int | None = None,
    lag_ages: LagAges | None = None,
) -> str:
    """``model`` in ``fmt``.

    ``view`` chooses between the members and state views of ``GroupDescriptions``
    (default members); ``with_state`` is ``--list --state`` for a listing in plain;
    ``verbose`` adds Kafka's ``--verbose`` columns; ``width`` is the table width;
    ``lag_ages`` is ``describe --time-lag``'s figures for an offsets model.
    """
    if isinstance(model, GroupListing):
        from kshare_cli.render.listing import render_listing

        return render_listing(model, fmt, with_state=with_state, width=width)
    if isinstance(model, ShareGroupOffsets):
        from kshare_cli.render.offsets import render_offsets

        return render_offsets(model, fmt, verbose=verbose, width=width, lag_ages=lag_ages)
    if not isinstance(model, GroupDescriptions):
        from kshare_cli.render.reset import render_reset

        return render_reset(model, fmt, width=width)
    from kshare_cli.render.descriptions import render_members, render_states

    if view == "state":
        return render_states(model, fmt, verbose=verbose, width=width)
    return render_members(model, fmt, verbose=verbose, width=width)


def notices(model: Model, fmt: OutputFormat | str | None = None) -> tuple[str, ...]:
    """Informational notices for stderr that Kafka's tool prints beside ``model``.

    A command writes each followed by a newline. In ``plain`` they carry Kafka's
    own blank lines, so stderr is Kafka's byte for byte; in the other formats each
    is one line. Errors are not among them: they are ``model.errors()`` (and, for
    offsets, ``partition_errors()``), which a command reports as it sees fit.
    """
    if isinstance(model, GroupDescriptions):
        from kshare_cli.render.descriptions import description_notices

        return description_notices(model, plain=str(fmt) == OutputFormat.plain.value)
    return ()
