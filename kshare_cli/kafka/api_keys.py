"""The API keys kshare and its sandbox speak, taken from kio rather than written as numbers.

kio's index maps every API key to the message's name; a key named here that kio
does not know fails at import, so a typo cannot become a wrong number on the
wire. Importing this module costs kio's index (a few milliseconds), never the
message schemas themselves; ``kshare --help`` imports neither.
"""

from __future__ import annotations

from typing import Final

from kio.schema.index import api_key_map

__all__ = [
    "ALTER_SHARE_GROUP_OFFSETS",
    "API_VERSIONS",
    "CREATE_TOPICS",
    "DELETE_GROUPS",
    "DELETE_RECORDS",
    "DELETE_SHARE_GROUP_OFFSETS",
    "DELETE_SHARE_GROUP_STATE",
    "DELETE_TOPICS",
    "DESCRIBE_CLUSTER",
    "DESCRIBE_CONFIGS",
    "DESCRIBE_SHARE_GROUP_OFFSETS",
    "FETCH",
    "FIND_COORDINATOR",
    "INCREMENTAL_ALTER_CONFIGS",
    "INITIALIZE_SHARE_GROUP_STATE",
    "INIT_PRODUCER_ID",
    "LIST_GROUPS",
    "LIST_GROUPS_WITH_TYPES",
    "LIST_OFFSETS",
    "METADATA",
    "OFFSET_COMMIT",
    "PRODUCE",
    "READ_SHARE_GROUP_STATE",
    "READ_SHARE_GROUP_STATE_SUMMARY",
    "SASL_AUTHENTICATE",
    "SASL_HANDSHAKE",
    "SHARE_ACKNOWLEDGE",
    "SHARE_FETCH",
    "SHARE_GROUP_APIS",
    "SHARE_GROUP_DESCRIBE",
    "SHARE_GROUP_HEARTBEAT",
    "WRITE_SHARE_GROUP_STATE",
    "api_key",
]

_BY_NAME: Final = {name: key for key, name in api_key_map.items()}


def api_key(name: str) -> int:
    """The API key of the message kio calls ``name`` (``"list_groups"``); KeyError if none."""
    return _BY_NAME[name]


# The names below are bound once, from kio's index; they carry no ``Final`` so that
# none of them reads as a number declared here.
PRODUCE = api_key("produce")
FETCH = api_key("fetch")
LIST_OFFSETS = api_key("list_offsets")
METADATA = api_key("metadata")
OFFSET_COMMIT = api_key("offset_commit")
FIND_COORDINATOR = api_key("find_coordinator")
LIST_GROUPS = api_key("list_groups")
#: ListGroups v5 added the types filter (KIP-848); listing share groups needs it.
LIST_GROUPS_WITH_TYPES: Final = 5
SASL_HANDSHAKE = api_key("sasl_handshake")
API_VERSIONS = api_key("api_versions")
CREATE_TOPICS = api_key("create_topics")
DELETE_TOPICS = api_key("delete_topics")
DELETE_RECORDS = api_key("delete_records")
INIT_PRODUCER_ID = api_key("init_producer_id")
DESCRIBE_CONFIGS = api_key("describe_configs")
SASL_AUTHENTICATE = api_key("sasl_authenticate")
DELETE_GROUPS = api_key("delete_groups")
INCREMENTAL_ALTER_CONFIGS = api_key("incremental_alter_configs")
DESCRIBE_CLUSTER = api_key("describe_cluster")
SHARE_GROUP_HEARTBEAT = api_key("share_group_heartbeat")
SHARE_GROUP_DESCRIBE = api_key("share_group_describe")
SHARE_FETCH = api_key("share_fetch")
SHARE_ACKNOWLEDGE = api_key("share_acknowledge")
INITIALIZE_SHARE_GROUP_STATE = api_key("initialize_share_group_state")
READ_SHARE_GROUP_STATE = api_key("read_share_group_state")
WRITE_SHARE_GROUP_STATE = api_key("write_share_group_state")
DELETE_SHARE_GROUP_STATE = api_key("delete_share_group_state")
READ_SHARE_GROUP_STATE_SUMMARY = api_key("read_share_group_state_summary")
DESCRIBE_SHARE_GROUP_OFFSETS = api_key("describe_share_group_offsets")
ALTER_SHARE_GROUP_OFFSETS = api_key("alter_share_group_offsets")
DELETE_SHARE_GROUP_OFFSETS = api_key("delete_share_group_offsets")

#: The APIs KIP-932 added: only brokers with share groups (Apache Kafka 4.1 or later, as
#: the versions kio was generated from; 4.0's early-access v0 is not spoken) have them.
SHARE_GROUP_APIS: Final = frozenset(
    {
        SHARE_GROUP_HEARTBEAT,
        SHARE_GROUP_DESCRIBE,
        SHARE_FETCH,
        SHARE_ACKNOWLEDGE,
        INITIALIZE_SHARE_GROUP_STATE,
        READ_SHARE_GROUP_STATE,
        WRITE_SHARE_GROUP_STATE,
        DELETE_SHARE_GROUP_STATE,
        READ_SHARE_GROUP_STATE_SUMMARY,
        DESCRIBE_SHARE_GROUP_OFFSETS,
        ALTER_SHARE_GROUP_OFFSETS,
        DELETE_SHARE_GROUP_OFFSETS,
    }
)
