"""``kshare dlq redrive --rate``: does the pace hold, and do the plan's counts equal what was sent?

Run: ``.venv/bin/python benchmarks/dlq_redrive.py [--records 500] [--rate 50]``.

A sandbox on Kafka 4.4's profile (``kshare sandbox --kafka-version 4.4``, in its own
process) holds a topic of N records that a share consumer rejected, so the broker
dead-lettered each one (headers only: the redrive reads key, value and headers from
the source log). Then, in this run:

* the baseline: ``kshare dlq redrive --execute`` unpaced, to a fresh topic -- what the
  command costs without ``--rate`` (start-up, reading the DLQ and the source log,
  scanning the target, sending);
* the dry run's plan to a second fresh topic (its ``send`` count);
* ``--rate R/s --execute`` to that topic: N / R seconds of pacing on top of the same
  work (issue 26: 500 records at 50/s take about 10 s).

It prints each wall time, the paced run's against N / R (the ratio should be near 1,
a little above for the fixed costs) and against the baseline, the records per second
the paced run achieved, and whether the plan's count equals the records sent (each
counted in the target topic by the headers naming its dead letter).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

KSHARE = Path(sys.executable).with_name("kshare")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from describe_fanout import Sandbox  # noqa: E402 -- beside this file, found through the path above


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _create(bootstrap: str, *topics: NewTopic) -> None:
    admin = _admin(bootstrap)
    for future in admin.create_topics(list(topics)).values():
        future.result(15)


def _ends(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"b-{uuid.uuid4().hex}"})
    try:
        partitions = consumer.list_topics(topic, timeout=15).topics[topic].partitions
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), 15)[1] for p in partitions
        )
    finally:
        consumer.close()


def _dead_letter(bootstrap: str, records: int) -> tuple[str, str]:
    """A topic of ``records`` records, all rejected by a share group into its DLQ."""
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"bench-{suffix}", f"bench-g-{suffix}"
    dlq = f"dlq.{topic}"
    _create(
        bootstrap,
        NewTopic(topic, 2, 1),
        NewTopic(dlq, 2, 1, config={"errors.deadletterqueue.group.enable": "true"}),
    )
    entries = []
    for name, value in (
        ("share.auto.offset.reset", "earliest"),
        ("errors.deadletterqueue.topic.name", dlq),
    ):
        entry = ConfigEntry(name, value)
        entry.incremental_operation = AlterConfigOpType.SET
        entries.append(entry)
    admin = _admin(bootstrap)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(15)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(records):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    rejected = 0
    deadline = time.monotonic() + 120
    try:
        while rejected < records and time.monotonic() < deadline:
            for message in consumer.poll(0.2):
                consumer.acknowledge(message, AcknowledgeType.REJECT)
                rejected += 1
        consumer.commit_sync()
    finally:
        consumer.close()
    while _ends(bootstrap, dlq) < records:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {_ends(bootstrap, dlq)} of {records} dead letters")
        time.sleep(0.1)
    return topic, group


def _kshare(bootstrap: str, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(
        [str(KSHARE), "dlq", *args, "-b", bootstrap, "--timeout", "120s"],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"kshare dlq {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return elapsed, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--rate", type=float, default=50.0)
    options = parser.parse_args()
    records, rate = options.records, options.rate

    with Sandbox(options=["--kafka-version", "4.4"]) as sandbox:
        bootstrap = sandbox.bootstrap
        started = time.perf_counter()
        _, group = _dead_letter(bootstrap, records)
        print(f"setup: {records} records dead-lettered in {time.perf_counter() - started:.1f} s")

        baseline_topic, paced_topic = (f"bench-to-{uuid.uuid4().hex[:8]}" for _ in range(2))
        _create(bootstrap, NewTopic(baseline_topic, 2, 1), NewTopic(paced_topic, 2, 1))

        baseline_s, _ = _kshare(
            bootstrap, "redrive", group, "--to-topic", baseline_topic, "--execute", "--yes"
        )
        _, dry = _kshare(bootstrap, "redrive", group, "--to-topic", paced_topic, "-o", "json")
        planned = json.loads(dry.stdout)["send"]
        paced_s, paced = _kshare(
            bootstrap,
            *("redrive", group, "--to-topic", paced_topic, "--rate", f"{rate:g}/s"),
            *("--execute", "--yes", "-o", "json"),
        )
        result = json.loads(paced.stdout)["result"]
        sent, in_topic = result["sent"], _ends(bootstrap, paced_topic)

    expected_s = records / rate
    print(f"baseline (unpaced) redrive of {records}: {baseline_s:.2f} s")
    print(
        f"--rate {rate:g}/s over {records}: {paced_s:.2f} s wall "
        f"({result['elapsed_seconds']:.2f} s sending), expected about {expected_s:.1f} s"
    )
    print(f"ratio paced / expected: {paced_s / expected_s:.3f}")
    print(f"ratio paced / baseline: {paced_s / baseline_s:.1f}x")
    print(f"achieved: {sent / result['elapsed_seconds']:.1f} records/s while sending")
    print(
        f"plan counts equal what was sent: {planned == sent == in_topic} "
        f"(planned {planned}, sent {sent}, in the target topic {in_topic})"
    )


if __name__ == "__main__":
    main()
