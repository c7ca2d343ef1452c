"""A small ACL authorizer for the sandbox: the refusals a secured Kafka cluster gives.

Everything is allowed except what a deny list names, per principal (``User:bob``),
as ``(resource type, name, operation)``: ``("TOPIC", "orders", "READ")``,
``("GROUP", "g", "DESCRIBE")``, ``("CLUSTER", "kafka-cluster", "DESCRIBE")``; a name
``"*"`` or the operation ``"ALL"`` match any. It sits where requests are dispatched,
in front of the handlers, and answers with the error Kafka 4.2's ``KafkaApis``
answers for the operation it checks:

- TOPIC_AUTHORIZATION_FAILED: Metadata (DESCRIBE; a request for all topics leaves
  them out), Produce (WRITE), Fetch (READ), ListOffsets (DESCRIBE), ShareFetch
  and ShareAcknowledge (READ), per partition; DescribeShareGroupOffsets (DESCRIBE)
  and AlterShareGroupOffsets (READ) per partition, DeleteShareGroupOffsets (READ)
  per topic; ShareGroupHeartbeat (DESCRIBE on every subscribed topic) as a whole.
- GROUP_AUTHORIZATION_FAILED: ShareGroupHeartbeat, ShareFetch, ShareAcknowledge
  and AlterShareGroupOffsets (READ) and DeleteShareGroupOffsets (DELETE) as a
  whole; ShareGroupDescribe and DescribeShareGroupOffsets (DESCRIBE), DeleteGroups
  (DELETE), DescribeConfigs (DESCRIBE_CONFIGS) and IncrementalAlterConfigs
  (ALTER_CONFIGS) per group; FindCoordinator for a group key (DESCRIBE).
- CLUSTER_AUTHORIZATION_FAILED: FindCoordinator for a share-state key (CLUSTER_ACTION).
- ListGroups without DESCRIBE on the cluster lists only the groups the principal
  may DESCRIBE, with no error, as Kafka does.

A refused change is never applied: the refused parts are taken out of the request
before its handler sees it and put back into the answer with their error. The
sandbox's own share coordinator writes ``__share_group_state`` without a
connection and is never asked.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

from kio.schema.errors import ErrorCode

from kshare_cli.kafka.api_keys import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_GROUPS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_CONFIGS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    FETCH,
    FIND_COORDINATOR,
    INCREMENTAL_ALTER_CONFIGS,
    LIST_GROUPS,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    SHARE_ACKNOWLEDGE,
    SHARE_FETCH,
    SHARE_GROUP_DESCRIBE,
    SHARE_GROUP_HEARTBEAT,
)
from kshare_cli.sandbox.framing import Request
from kshare_cli.sandbox.server import Connection

__all__ = ["Authorizer", "Denial", "DenyList"]

#: One refused right: resource type (TOPIC, GROUP, CLUSTER), resource name, operation.
Denial = tuple[str, str, str]
#: Refused rights by principal (``User:bob``).
DenyList = Mapping[str, Iterable[Denial]]

CLUSTER_NAME: Final = "kafka-cluster"
#: DescribeConfigs and IncrementalAlterConfigs resource types (ConfigResource.Type).
_GROUP_RESOURCE: Final = 32
_TOPIC_RESOURCE: Final = 2
#: FindCoordinator key types.
_GROUP_KEY: Final = 0
_SHARE_KEY: Final = 2

#: Kafka's messages for its authorization errors (``Errors``), where an answer carries one.
MESSAGES: Final = {
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
}
TOPIC_DENIED: Final = ErrorCode.topic_authorization_failed
GROUP_DENIED: Final = ErrorCode.group_authorization_failed
CLUSTER_DENIED: Final = ErrorCode.cluster_authorization_failed

Handle = Callable[[Request], Awaitable[Any]]  # None only for Produce with acks=0
TopicName = Callable[[uuid.UUID | None], str | None]


def _replace(entity: Any, **changes: Any) -> Any:
    """``entity`` with ``changes``, keeping only the fields its version has."""
    fields = {field.name for field in dataclasses.fields(entity)}
    return dataclasses.replace(entity, **{k: v for k, v in changes.items() if k in fields})


def _with_payload(request: Request, payload: Any) -> Request:
    return dataclasses.replace(request, payload=payload)


class Authorizer:
    """Kafka's authorizer over a deny list; see the module docstring."""

    def __init__(self, deny: DenyList) -> None:
        self._deny = {principal: frozenset(rules) for principal, rules in deny.items()}

    def allows(self, principal: str | None, resource: str, name: str, operation: str) -> bool:
        """Whether ``principal`` may perform ``operation`` on the resource."""
        for denied_resource, denied_name, denied_operation in self._deny.get(principal or "", ()):
            if (
                denied_resource == resource
                and denied_name in (name, "*")
                and denied_operation in (operation, "ALL")
            ):
                return False
        return True

    async def dispatch(
        self, request: Request, connection: Connection, handle: Handle, topic_name: TopicName
    ) -> Any | None:
        """Answer ``request`` through ``handle``, with what ``connection``'s principal may not do
        refused as Kafka refuses it. ``topic_name`` names a topic id (None when unknown)."""
        principal = connection.authenticated_principal
        if principal not in self._deny:
            return await handle(request)
        check = _Check(self, principal, topic_name)
        step = _STEPS.get(request.api_key)
        if step is None:
            return await handle(request)
        return await step(check, request, handle)


@dataclasses.dataclass(frozen=True, slots=True)
class _Check:
    authorizer: Authorizer
    principal: str
    topic_name: TopicName

    def topic(self, name: str | None, operation: str) -> bool:
        return name is None or self.authorizer.allows(self.principal, "TOPIC", name, operation)

    def topic_id(self, topic_id: uuid.UUID | None, operation: str) -> bool:
        return self.topic(self.topic_name(topic_id), operation)

    def group(self, name: str, operation: str) -> bool:
        return self.authorizer.allows(self.principal, "GROUP", name, operation)

    def cluster(self, operation: str) -> bool:
        return self.authorizer.allows(self.principal, "CLUSTER", CLUSTER_NAME, operation)


Step = Callable[[_Check, Request, Handle], Awaitable[Any | None]]
_STEPS: dict[int, Step] = {}


def _step(api_key: int) -> Callable[[Step], Step]:
    def register(step: Step) -> Step:
        _STEPS[api_key] = step
        return step

    return register


# -- topics ------------------------------------------------------------------------------


@_step(METADATA)
async def _metadata(check: _Check, request: Request, handle: Handle) -> Any:
    response = await handle(request)
    named = request.payload.topics is not None
    topics = []
    for topic in response.topics:
        if check.topic(topic.name, "DESCRIBE"):
            topics.append(topic)
        elif named:
            topics.append(_replace(topic, error_code=TOPIC_DENIED, partitions=()))
    return _replace(response, topics=tuple(topics))


@_step(PRODUCE)
async def _produce(check: _Check, request: Request, handle: Handle) -> Any:
    payload = request.payload
    denied = [t for t in payload.topic_data if not check.topic(t.name, "WRITE")]
    if not denied:
        return await handle(request)
    allowed = tuple(t for t in payload.topic_data if check.topic(t.name, "WRITE"))
    response = await handle(_with_payload(request, _replace(payload, topic_data=allowed)))
    if response is None:  # acks=0: nothing is answered, refused or not
        return None
    topic_type = _entry_type(response, "responses")
    partition_type = _entry_type(topic_type, "partition_responses")
    refused = [
        _build_entry(
            topic_type,
            name=topic.name,
            partition_responses=[
                _fields_of(
                    partition_type,
                    index=partition.index,
                    error_code=TOPIC_DENIED,
                    base_offset=-1,
                    log_append_time=None,
                    log_start_offset=-1,
                    record_errors=[],
                    error_message=None,
                    current_leader={"leader_id": -1, "leader_epoch": -1},
                )
                for partition in topic.partition_data
            ],
        )
        for topic in denied
    ]
    return _replace(response, responses=(*response.responses, *refused))


@_step(FETCH)
async def _fetch(check: _Check, request: Request, handle: Handle) -> Any:
    response = await handle(request)
    responses = []
    for topic in response.responses:
        name = getattr(topic, "topic", None) or check.topic_name(getattr(topic, "topic_id", None))
        if check.topic(name, "READ"):
            responses.append(topic)
            continue
        # Empty records, as Kafka's FetchResponse.partitionResponse (MemoryRecords.EMPTY):
        # librdkafka cannot parse a null record set (MessageSetSize -1) and drops the
        # connection instead of reporting the refusal.
        partitions = tuple(
            _replace(p, error_code=TOPIC_DENIED, records=b"", high_watermark=-1)
            for p in topic.partitions
        )
        responses.append(_replace(topic, partitions=partitions))
    return _replace(response, responses=tuple(responses))


@_step(LIST_OFFSETS)
async def _list_offsets(check: _Check, request: Request, handle: Handle) -> Any:
    response = await handle(request)
    topics = []
    for topic in response.topics:
        if not check.topic(topic.name, "DESCRIBE"):
            partitions = tuple(
                _replace(p, error_code=TOPIC_DENIED, offset=-1, timestamp=-1)
                for p in topic.partitions
            )
            topic = _replace(topic, partitions=partitions)
        topics.append(topic)
    return _replace(response, topics=tuple(topics))


# -- coordinators and groups ------------------------------------------------------------------


@_step(FIND_COORDINATOR)
async def _find_coordinator(check: _Check, request: Request, handle: Handle) -> Any:
    response = await handle(request)
    key_type = int(request.payload.key_type)
    if key_type == _SHARE_KEY:
        allowed = check.cluster("CLUSTER_ACTION")
        code = CLUSTER_DENIED
    elif key_type == _GROUP_KEY:
        allowed = True
        code = GROUP_DENIED
    else:
        return response
    if not hasattr(response, "coordinators"):  # v0-v3: one key
        key = request.payload.key
        if allowed and (key_type != _GROUP_KEY or check.group(key, "DESCRIBE")):
            return response
        return _replace(
            response, error_code=code, error_message=MESSAGES[code], node_id=-1, host="", port=-1
        )
    coordinators = []
    for coordinator in response.coordinators:
        if key_type == _GROUP_KEY:
            allowed = check.group(coordinator.key, "DESCRIBE")
        if not allowed:
            coordinator = _replace(
                coordinator,
                error_code=code,
                error_message=MESSAGES[code],
                node_id=-1,
                host="",
                port=-1,
            )
        coordinators.append(coordinator)
    return _replace(response, coordinators=tuple(coordinators))


@_step(LIST_GROUPS)
async def _list_groups(check: _Check, request: Request, handle: Handle) -> Any:
    response = await handle(request)
    if check.cluster("DESCRIBE"):
        return response
    groups = tuple(g for g in response.groups if check.group(g.group_id, "DESCRIBE"))
    return _replace(response, groups=groups)


@_step(SHARE_GROUP_DESCRIBE)
async def _share_group_describe(check: _Check, request: Request, handle: Handle) -> Any:
    response = await handle(request)
    groups = []
    for group in response.groups:
        if not check.group(group.group_id, "DESCRIBE"):
            group = _replace(
                group,
                error_code=GROUP_DENIED,
                error_message=None,
                group_state="",
                group_epoch=-1,
                assignment_epoch=-1,
                assignor_name="",
                members=(),
            )
        groups.append(group)
    return _replace(response, groups=tuple(groups))


@_step(DESCRIBE_SHARE_GROUP_OFFSETS)
async def _describe_share_group_offsets(check: _Check, request: Request, handle: Handle) -> Any:
    response = await handle(request)
    groups = []
    for group in response.groups:
        if not check.group(group.group_id, "DESCRIBE"):
            group = _replace(group, error_code=GROUP_DENIED, error_message=None, topics=())
        else:
            topics = []
            for topic in group.topics:
                if not check.topic(topic.topic_name, "DESCRIBE"):
                    partitions = tuple(
                        _replace(
                            p,
                            error_code=TOPIC_DENIED,
                            error_message=None,
                            start_offset=-1,
                            leader_epoch=-1,
                            lag=-1,
                        )
                        for p in topic.partitions
                    )
                    topic = _replace(topic, partitions=partitions)
                topics.append(topic)
            group = _replace(group, topics=tuple(topics))
        groups.append(group)
    return _replace(response, groups=tuple(groups))


@_step(DESCRIBE_CONFIGS)
async def _describe_configs(check: _Check, request: Request, handle: Handle) -> Any:
    response = await handle(request)
    results = []
    for result in response.results:
        kind = int(result.resource_type)
        code = None
        if kind == _GROUP_RESOURCE and not check.group(result.resource_name, "DESCRIBE_CONFIGS"):
            code = GROUP_DENIED
        if kind == _TOPIC_RESOURCE and not check.topic(result.resource_name, "DESCRIBE_CONFIGS"):
            code = TOPIC_DENIED
        if code is not None:
            result = _replace(result, error_code=code, error_message=None, configs=())
        results.append(result)
    return _replace(response, results=tuple(results))


@_step(INCREMENTAL_ALTER_CONFIGS)
async def _incremental_alter_configs(check: _Check, request: Request, handle: Handle) -> Any:
    payload = request.payload

    def refusal(resource: Any) -> ErrorCode | None:
        kind = int(resource.resource_type)
        if kind == _GROUP_RESOURCE and not check.group(resource.resource_name, "ALTER_CONFIGS"):
            return GROUP_DENIED
        if kind == _TOPIC_RESOURCE and not check.topic(resource.resource_name, "ALTER_CONFIGS"):
            return TOPIC_DENIED
        return None

    refused = {(int(r.resource_type), r.resource_name): refusal(r) for r in payload.resources}
    if not any(refused.values()):
        return await handle(request)
    allowed = tuple(r for r in payload.resources if refusal(r) is None)
    response = await handle(_with_payload(request, _replace(payload, resources=allowed)))
    answered = {(int(r.resource_type), r.resource_name): r for r in response.responses}
    entry_type = _entry_type(response, "responses")
    responses = []
    for resource in payload.resources:
        key = (int(resource.resource_type), resource.resource_name)
        code = refused[key]
        if code is None:
            responses.append(answered[key])
        else:
            responses.append(
                _build_entry(
                    entry_type,
                    error_code=code,
                    error_message=None,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                )
            )
    return _replace(response, responses=tuple(responses))


@_step(DELETE_GROUPS)
async def _delete_groups(check: _Check, request: Request, handle: Handle) -> Any:
    payload = request.payload
    names = list(payload.groups_names)
    allowed = tuple(name for name in names if check.group(name, "DELETE"))
    if len(allowed) == len(names):
        return await handle(request)
    response = await handle(_with_payload(request, _replace(payload, groups_names=allowed)))
    answered = {result.group_id: result for result in response.results}
    entry_type = _entry_type(response, "results")
    results = [
        answered[name]
        if name in answered
        else _build_entry(entry_type, group_id=name, error_code=GROUP_DENIED)
        for name in names
    ]
    return _replace(response, results=tuple(results))


# -- share groups' whole-request refusals -----------------------------------------------------


def _refuse_whole(request: Request, code: ErrorCode) -> Any:
    """An answer carrying only ``code`` (and empty lists) for a request refused as a whole."""
    from kio.index import load_response_schema

    response_type = load_response_schema(request.api_key, request.api_version)
    return _build_entry(
        response_type,
        **_fields_of(
            response_type,
            throttle_time=0,
            error_code=code,
            error_message=None,
            member_id=None,
            member_epoch=0,
            heartbeat_interval=0,
            assignment=None,
            acquisition_lock_timeout=0,
            responses=[],
            node_endpoints=[],
        ),
    )


@_step(SHARE_GROUP_HEARTBEAT)
async def _share_group_heartbeat(check: _Check, request: Request, handle: Handle) -> Any:
    payload = request.payload
    if not check.group(payload.group_id, "READ"):
        return _refuse_whole(request, GROUP_DENIED)
    topics = payload.subscribed_topic_names or ()
    if not all(check.topic(name, "DESCRIBE") for name in topics):
        return _refuse_whole(request, TOPIC_DENIED)
    return await handle(request)


async def _share_data(check: _Check, request: Request, handle: Handle) -> Any:
    """ShareFetch and ShareAcknowledge: READ on the group, then READ on each topic."""
    payload = request.payload
    if payload.group_id is not None and not check.group(payload.group_id, "READ"):
        return _refuse_whole(request, GROUP_DENIED)
    denied = [t for t in payload.topics if not check.topic_id(t.topic_id, "READ")]
    if not denied:
        return await handle(request)
    allowed = tuple(t for t in payload.topics if check.topic_id(t.topic_id, "READ"))
    response = await handle(_with_payload(request, _replace(payload, topics=allowed)))
    topic_type = _entry_type(response, "responses")
    partition_type = _entry_type(topic_type, "partitions")
    refused = []
    for topic in denied:
        partitions = [
            _fields_of(
                partition_type,
                partition_index=partition.partition_index,
                error_code=TOPIC_DENIED,
                error_message=MESSAGES[TOPIC_DENIED],
                acknowledge_error_code=0,
                acknowledge_error_message=None,
                current_leader={"leader_id": -1, "leader_epoch": -1},
                records=b"",
                acquired_records=[],
            )
            for partition in topic.partitions
        ]
        refused.append(_build_entry(topic_type, topic_id=topic.topic_id, partitions=partitions))
    return _replace(response, responses=(*response.responses, *refused))


_STEPS[SHARE_FETCH] = _share_data
_STEPS[SHARE_ACKNOWLEDGE] = _share_data


async def _share_group_offsets_change(
    check: _Check,
    request: Request,
    handle: Handle,
    group_operation: str,
    refusal: Callable[[Any], Mapping[str, Any]],
) -> Any:
    """AlterShareGroupOffsets and DeleteShareGroupOffsets: ``group_operation`` on the group,
    then READ on each topic; a refused topic is answered with ``refusal(topic)``'s fields."""
    payload = request.payload
    if not check.group(payload.group_id, group_operation):
        return _refuse_whole(request, GROUP_DENIED)
    denied = [t for t in payload.topics if not check.topic(t.topic_name, "READ")]
    if not denied:
        return await handle(request)
    allowed = tuple(t for t in payload.topics if check.topic(t.topic_name, "READ"))
    response = await handle(_with_payload(request, _replace(payload, topics=allowed)))
    if response.error_code != ErrorCode.none:
        return response
    topic_type = _entry_type(response, "responses")
    refused = [
        _build_entry(
            topic_type,
            topic_name=topic.topic_name,
            topic_id=uuid.UUID(int=0),
            **refusal(topic),
        )
        for topic in denied
    ]
    return _replace(response, responses=(*response.responses, *refused))


@_step(ALTER_SHARE_GROUP_OFFSETS)
async def _alter_share_group_offsets(check: _Check, request: Request, handle: Handle) -> Any:
    def refusal(topic: Any) -> Mapping[str, Any]:
        return {
            "partitions": [
                {
                    "partition_index": p.partition_index,
                    "error_code": TOPIC_DENIED,
                    "error_message": None,
                }
                for p in topic.partitions
            ]
        }

    return await _share_group_offsets_change(check, request, handle, "READ", refusal)


@_step(DELETE_SHARE_GROUP_OFFSETS)
async def _delete_share_group_offsets(check: _Check, request: Request, handle: Handle) -> Any:
    def refusal(topic: Any) -> Mapping[str, Any]:
        return {"error_code": TOPIC_DENIED, "error_message": None}

    return await _share_group_offsets_change(check, request, handle, "DELETE", refusal)


# -- kio's nested entry types -------------------------------------------------------------------


def _entry_type(owner: Any, field: str) -> type[Any]:
    """The dataclass a (tuple) field of ``owner`` (an instance or a class) holds."""
    import typing

    cls = owner if isinstance(owner, type) else type(owner)
    hint = typing.get_type_hints(cls)[field]
    for candidate in (hint, *typing.get_args(hint)):
        if dataclasses.is_dataclass(candidate) and isinstance(candidate, type):
            return candidate
        for inner in typing.get_args(candidate):
            if dataclasses.is_dataclass(inner) and isinstance(inner, type):
                return inner
    raise TypeError(f"{cls.__name__}.{field} holds no entity")


def _fields_of(entry_type: type[Any], **values: Any) -> dict[str, Any]:
    """``values`` for the fields ``entry_type``'s version has (a refusal names them all)."""
    names = {field.name for field in dataclasses.fields(entry_type)}
    return {name: value for name, value in values.items() if name in names}


def _build_entry(entry_type: type[Any], **values: Any) -> Any:
    """An entry of ``entry_type`` from ``values``, through ``wire.build`` (its version's fields)."""
    from kshare_cli.wire.build import build

    return build(entry_type, values)
