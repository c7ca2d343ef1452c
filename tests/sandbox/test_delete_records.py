"""DeleteRecords on the sandbox, as confluent-kafka's AdminClient asks it (issue 26).

Kafka's ``deleteRecordsOnLeader``: the log start offset moves up to the offset asked
(-1: the high watermark), never back; past the end is OFFSET_OUT_OF_RANGE. Readers
then start at the new low watermark.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from tests.support.sandbox_thread import SandboxThread


def test_delete_records_moves_the_log_start_offset() -> None:
    with SandboxThread() as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
        for future in admin.create_topics([NewTopic("trimmed", 1, 1)]).values():
            future.result(15)
        producer = Producer({"bootstrap.servers": sandbox.bootstrap})
        for i in range(10):
            producer.produce("trimmed", value=f"v{i}".encode())
        assert producer.flush(15) == 0

        def delete(offset: int) -> int:
            (future,) = admin.delete_records([TopicPartition("trimmed", 0, offset)]).values()
            return int(future.result(15).low_watermark)

        assert delete(4) == 4
        assert delete(2) == 4  # never back
        with pytest.raises(KafkaException, match="OFFSET_OUT_OF_RANGE|out of range"):
            delete(11)
        assert delete(-1) == 10  # the high watermark
        from confluent_kafka import Consumer

        reader = Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": "unused"})
        try:
            assert reader.get_watermark_offsets(TopicPartition("trimmed", 0), 15) == (10, 10)
        finally:
            reader.close()
