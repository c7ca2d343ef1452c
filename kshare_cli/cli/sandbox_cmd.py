"""``kshare sandbox``: serve the share-group broker emulator until interrupted.

The bootstrap address goes to stdout (so a script can capture it), the banner
and warnings to stderr. The command says loudly that this is an emulator: an
operator must never mistake it for a Kafka cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from kshare_cli.errors import ExitCode

BANNER = (
    "kshare sandbox: a KIP-932 share-group broker EMULATOR for tests and demos -- "
    "not Apache Kafka. Do not put data you care about here."
)


def sandbox(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port to listen on (0 picks a free one).")
    ] = 9092,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            file_okay=False,
            help="Keep topic logs (and so share-group state) here across restarts.",
        ),
    ] = None,
    demo: Annotated[
        bool,
        typer.Option(
            help="Also create a topic, produce a steady trickle and run share consumers that "
            "accept, release and reject, so there is something live to look at."
        ),
    ] = False,
) -> None:
    """Run a share-group broker EMULATOR for tests and demos. It is not Apache Kafka.

    Speaks the Kafka protocol (ApiVersions, Metadata, Produce, Fetch, ListOffsets,
    CreateTopics, share groups, the share-group admin RPCs) on one node, and writes
    share-partition state to __share_group_state as Kafka 4.2 does.
    """
    if data_dir is not None:
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            typer.echo(f"kshare: cannot use --data-dir {data_dir}: {error.strerror}", err=True)
            raise typer.Exit(ExitCode.USAGE) from None
    try:
        interrupted = asyncio.run(_serve(host, port, data_dir, demo))
    except OSError as error:
        typer.echo(f"kshare: cannot listen on {host}:{port}: {error.strerror or error}", err=True)
        raise typer.Exit(ExitCode.CONNECTION) from None
    except KeyboardInterrupt:
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    if interrupted:
        raise typer.Exit(ExitCode.INTERRUPTED)


async def _serve(host: str, port: int, data_dir: Path | None, demo: bool) -> bool:
    """Serve until SIGINT or SIGTERM; True when it was SIGINT (exit 130, as documented)."""
    from kshare_cli.sandbox.runner import new_broker

    broker = new_broker(data_dir)
    bound = await broker.start(host, port)
    print(f"{broker.advertised.host}:{bound}", flush=True)
    print(BANNER, file=sys.stderr, flush=True)
    stop = asyncio.Event()
    received: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        received.append(signum)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, on_signal, signum)
    demo_task = None
    if demo:
        from kshare_cli.sandbox.demo import run_demo

        bootstrap = f"{broker.advertised.host}:{bound}"
        print(
            f"demo: topic 'demo-orders', share group 'demo-group' on {bootstrap}", file=sys.stderr
        )
        demo_task = asyncio.ensure_future(run_demo(broker, bootstrap, stop))
    try:
        await stop.wait()
    finally:
        if demo_task is not None:
            await demo_task
        await broker.close()
    return signal.SIGINT in received
