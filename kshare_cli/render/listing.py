"""Rendering a ``GroupListing``: ``kshare list``, and ``kafka-share-groups.sh --list``.

Kafka prints bare group ids for ``--list`` and a GROUP/STATE table for
``--list --state``; ``with_state`` chooses between them for ``plain``. The
table (for people) and the structured formats always carry the state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kshare_cli.admin.models import BrokerFailure, GroupListing
from kshare_cli.render.output_formats import (
    OutputFormat,
    add_row,
    dispatch,
    error_document,
    java_row,
    new_table,
    table_text,
)

__all__ = ["broker_errors_document", "listing_document", "listing_rows", "render_listing"]

#: ``printGroupInfo``: the GROUP column is at least 15 wide.
_MIN_GROUP_WIDTH = 15

CSV_HEADER = ("group_id", "state")


def render_listing(
    listing: GroupListing,
    fmt: OutputFormat | str,
    *,
    with_state: bool = False,
    width: int | None = None,
) -> str:
    """The listing in ``fmt``; ``with_state`` is Kafka's ``--list --state`` layout for plain."""
    return dispatch(
        fmt,
        plain=lambda: _plain(listing, with_state),
        table=lambda: _table(listing, width),
        document=lambda: listing_document(listing),
        rows=lambda: listing_rows(listing),
        csv_header=CSV_HEADER,
        csv_rows=lambda: ((g.group_id, g.state) for g in listing.groups),
    )


def listing_rows(listing: GroupListing) -> list[dict[str, Any]]:
    """One object per group (``docs/schemas/list-row.schema.json``)."""
    return [{"group_id": group.group_id, "state": group.state} for group in listing.groups]


def listing_document(listing: GroupListing) -> dict[str, Any]:
    """The whole listing (``docs/schemas/list.schema.json``)."""
    return {
        "groups": listing_rows(listing),
        "states_filter": list(listing.states_filter),
        "broker_errors": broker_errors_document(listing.failures),
    }


def broker_errors_document(failures: Iterable[BrokerFailure]) -> list[dict[str, Any]]:
    """``broker_errors``: the brokers a listing could not ask, in every document that lists."""
    return [
        {
            "node_id": failure.node_id,
            "host": failure.host,
            "port": failure.port,
            "error": error_document(failure.error),
        }
        for failure in failures
    ]


def _plain(listing: GroupListing, with_state: bool) -> str:
    if not with_state:
        return "".join(f"{group.group_id}\n" for group in listing.groups)
    width = max([_MIN_GROUP_WIDTH, *(len(group.group_id) for group in listing.groups)])
    lines = [java_row((width,), ("GROUP", "STATE"))]
    lines += [java_row((width,), (group.group_id, group.state)) for group in listing.groups]
    return "".join(f"{line}\n" for line in lines)


def _table(listing: GroupListing, width: int | None) -> str:
    count = len(listing.groups)
    caption = f"{count} share group{'' if count == 1 else 's'}"
    if listing.states_filter:
        caption += f" in state {' or '.join(listing.states_filter)}"
    if not listing.ok():
        caption += " (incomplete: a broker did not answer)"
    table = new_table("GROUP", "STATE")
    for group in listing.groups:
        add_row(table, (group.group_id, group.state))
    return table_text(table, width, [caption])
