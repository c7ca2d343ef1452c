"""The archived audit: the archived offsets, joined with the source topic's records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kshare_cli.pipeline.kafka_source import KAFKA_SCHEMA
from kshare_cli.pipeline.state_records import (
    NAMED_SHARE_PARTITION_FIELDS,
    SHARE_PARTITION_COLUMNS,
    SHARE_PARTITION_FIELDS,
    with_topic_names,
)
from kshare_cli.state.records import DeliveryState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "ARCHIVED_OFFSETS_SCHEMA",
    "ARCHIVED_SCHEMA",
    "ARCHIVED_STATES",
    "KAFKA_HEADERS_TYPE",
    "archived_offsets",
    "archived_records",
]


KAFKA_HEADERS_TYPE: Final = KAFKA_SCHEMA["headers"].dataType
"""The Kafka source's headers column type: a list of (key string, value binary)."""


# --------------------------------------------------------------------------- archived

ARCHIVED_STATES: Final = (
    DeliveryState.ARCHIVED.name.lower(),
    DeliveryState.ARCHIVING.name.lower(),
)
"""The final states (DELIVERIES_SCHEMA's final_state) of a dead-lettered offset: archived,
and Kafka 4.4's archiving -- on its way to the group's DLQ, never delivered again. An
offset that went ARCHIVING then ARCHIVED has final state archived: one record, not two."""
_ARCHIVED: Final = DeliveryState.ARCHIVED.name.lower()

ARCHIVED_OFFSETS_SCHEMA: Final = StructType(
    [
        *SHARE_PARTITION_FIELDS,
        StructField("offset", LongType(), False),
        StructField("delivery_count", IntegerType(), False),
        StructField("archived_at", TimestampType(), True),
        StructField("state", StringType(), False),
        StructField("archiving_at", TimestampType(), True),
    ]
)
"""One row per offset whose final state is one of ARCHIVED_STATES (DELIVERIES_SCHEMA's
final_state).

delivery_count is the highest count the offset reached; state the final state,
"archived" or "archiving" (a state 3 left behind: reported as such, never as
delivered). Both times are state-topic timestamps: archiving_at of the record
that made the offset ARCHIVING (DELIVERIES' archiving_at: Kafka 4.4, before its
DLQ write), archived_at of the record that made it ARCHIVED (DELIVERIES'
last_changed). Each is null where it is unknown: archiving_at for a record
archived directly (Kafka 4.2, no DLQ) or a write Kafka pruned, archived_at for
a record still ARCHIVING or archived before the earliest record read.
"""

ARCHIVED_SCHEMA: Final = StructType(
    [
        *NAMED_SHARE_PARTITION_FIELDS,
        StructField("offset", LongType(), False),
        StructField("delivery_count", IntegerType(), False),
        StructField("archived_at", TimestampType(), True),
        StructField("record_found", BooleanType(), False),
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
        StructField("headers", KAFKA_HEADERS_TYPE, True),
        StructField("state", StringType(), False),
        StructField("archiving_at", TimestampType(), True),
    ]
)
"""An archived offset with its source record (key, value, timestamp, headers as the
Kafka source has them). record_found is false when the source topic no longer holds
the record (retention, a deleted topic): the offset is still reported."""


def archived_offsets(ranges: DataFrame) -> DataFrame:
    """The offsets of `deliveries` ranges whose final state is archived or archiving, one
    row each."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    return ranges.filter(F.col("final_state").isin(*ARCHIVED_STATES)).select(
        *SHARE_PARTITION_COLUMNS,
        F.explode(F.sequence("first_offset", "last_offset")).alias("offset"),
        F.col("max_delivery_count").alias("delivery_count"),
        F.when(F.col("final_state") == _ARCHIVED, F.col("last_changed")).alias("archived_at"),
        F.col("final_state").alias("state"),
        "archiving_at",
    )


def archived_records(
    offsets: DataFrame, topic_names: DataFrame, source_records: DataFrame | None
) -> DataFrame:
    """Archived offsets joined with the source topic's records (ARCHIVED_SCHEMA).

    source_records is the source topic as `read_kafka` returns it (any offset
    range covering the archived offsets); None when it could not be read.
    """
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own spelling

    named = with_topic_names(offsets, topic_names)
    record_columns = ("key", "value", "timestamp", "timestampType", "headers")
    if source_records is None:
        joined = named.withColumn("_found", F.lit(False))
        for name in record_columns:
            field = ARCHIVED_SCHEMA[name]
            joined = joined.withColumn(name, F.lit(None).cast(field.dataType))
    else:
        records = source_records.select(
            "topic", "partition", "offset", *record_columns, F.lit(True).alias("_found")
        )
        joined = named.join(records, ["topic", "partition", "offset"], "left")
    return joined.select(
        "group_id",
        "topic_id",
        "topic",
        "partition",
        "offset",
        "delivery_count",
        "archived_at",
        F.coalesce(F.col("_found"), F.lit(False)).alias("record_found"),
        *record_columns,
        "state",
        "archiving_at",
    )
