"""How long ``-o table`` takes to render ``describe --all-groups`` for 1,000 share groups.

Run: ``.venv/bin/python benchmarks/render_table.py [--groups 1000] [--partitions 4] [--runs 5]``.

Why: the offsets view of 1,000 groups of 4 partitions is about 5,000 table rows
(a row per share-partition, a TOTAL row per group), and Rich's ``Table`` spent
3.7-5.5 s measuring and wrapping their cells, where ``-o plain`` takes a small
fraction of that. ``table_text`` now lays out a table whose columns fit directly
(``layout_table``) and leaves only folding to a narrow terminal to Rich.

How: one ``ShareGroupOffsets`` model (every tenth group with a bounded lag, so
the ``≤`` cells and the caption are in it) is rendered, in this process, with
``render(model, "table")``, with the same call forced down the Rich path (as
before the change), and with ``render(model, "plain")``. The median and min of
``--runs`` runs are printed, then the ratios. The two table outputs are checked
to be identical before anything is timed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from unittest import mock

from kshare_cli.admin.models import GroupOffsets, ShareGroupOffsets, SharePartitionOffset
from kshare_cli.render import output_formats, render


def offsets_model(groups: int, partitions: int) -> ShareGroupOffsets:
    results = []
    for index in range(groups):
        bound = index % 10 == 0
        results.append(
            GroupOffsets(
                f"payments-share-group-{index:04d}",
                tuple(
                    SharePartitionOffset(
                        "payments.events",
                        partition,
                        1_000 * index + partition,
                        leader_epoch=3,
                        lag=7 * partition,
                        lag_source="bound" if bound else "broker",
                        end_offset=1_000 * index + 8 * partition,
                    )
                    for partition in range(partitions)
                ),
            )
        )
    return ShareGroupOffsets(tuple(results))


@contextmanager
def rich_only() -> Iterator[None]:
    """``table_text`` as it was: every table through Rich's ``Table``."""
    with mock.patch.object(output_formats, "layout_table", return_value=None):
        yield


def timed(action: Callable[[], str], runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), min(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    model = offsets_model(args.groups, args.partitions)

    def table() -> str:
        return render(model, "table")

    def rich_table() -> str:
        with rich_only():
            return render(model, "table")

    def plain() -> str:
        return render(model, "plain")

    fast_text, rich_text = table(), rich_table()
    if fast_text != rich_text:
        raise SystemExit("the direct layout and Rich's differ: not timing")
    rows = len(fast_text.splitlines())
    print(f"{args.groups} groups x {args.partitions} partitions: {rows} table lines")
    print(f"median (min) of {args.runs} runs")
    results = {}
    for name, action in (("table", table), ("table (Rich)", rich_table), ("plain", plain)):
        median, least = timed(action, args.runs)
        results[name] = median
        print(f"  -o {name:<13} {median * 1000:9.1f} ms  ({least * 1000:.1f} ms)")
    print(f"table (Rich) / table   {results['table (Rich)'] / results['table']:7.1f}x")
    print(f"table / plain          {results['table'] / results['plain']:7.1f}x")
    print(f"table (Rich) / plain   {results['table (Rich)'] / results['plain']:7.1f}x")


if __name__ == "__main__":
    main()
