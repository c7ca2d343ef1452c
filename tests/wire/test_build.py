"""build(): a field only other versions have is dropped, a key no version defines is an error."""

from __future__ import annotations

import pytest
from kio.schema.list_groups.v0.response import ListGroupsResponse as ListGroupsResponseV0
from kio.schema.list_groups.v4.request import ListGroupsRequest as ListGroupsRequestV4
from kio.schema.list_groups.v5.request import ListGroupsRequest as ListGroupsRequestV5
from kio.schema.metadata.v9.request import MetadataRequest as MetadataRequestV9
from kio.schema.metadata.v12.request import MetadataRequest as MetadataRequestV12

from kshare_cli.wire.build import build


def test_a_misspelt_key_is_an_error_not_an_empty_filter() -> None:
    """``type_filter`` (ListGroups' field is ``types_filter``) would list every group type."""
    with pytest.raises(TypeError, match=r"ListGroupsRequest .*'type_filter'"):
        build(ListGroupsRequestV5, {"states_filter": [], "type_filter": ["share"]})


def test_the_right_key_filters() -> None:
    request = build(ListGroupsRequestV5, {"states_filter": [], "types_filter": ["share"]})
    assert request.types_filter == ("share",)


def test_a_field_only_newer_versions_have_is_dropped() -> None:
    request = build(ListGroupsRequestV4, {"states_filter": ["Stable"], "types_filter": ["share"]})
    assert request.states_filter == ("Stable",)
    assert not hasattr(request, "types_filter")


def test_a_response_field_only_newer_versions_have_is_dropped() -> None:
    response = build(
        ListGroupsResponseV0,
        {
            "error_code": 0,
            "groups": [
                {"group_id": "g", "protocol_type": "share", "group_state": "Stable"},
            ],
        },
    )
    assert response.groups[0].group_id == "g"


def test_a_nested_field_of_another_version_is_dropped() -> None:
    """Metadata's topics carry ``topic_id`` from v10 on; v9 drops it without complaint."""
    body = {
        "topics": [{"name": "t", "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }
    old_topics = build(MetadataRequestV9, body).topics
    assert old_topics is not None
    assert old_topics[0].name == "t"
    new_topics = build(MetadataRequestV12, body).topics
    assert new_topics is not None
    assert new_topics[0].topic_id is None


def test_a_misspelt_nested_key_is_an_error() -> None:
    with pytest.raises(TypeError, match=r"MetadataRequestTopic .*'topic_name'"):
        build(MetadataRequestV12, {"topics": [{"topic_name": "t"}]})


def test_a_top_level_key_misplaced_in_a_nested_entity_is_an_error() -> None:
    """Keys are matched by their place in the message, not by any entity's field names."""
    with pytest.raises(TypeError, match="'allow_auto_topic_creation'"):
        build(MetadataRequestV12, {"topics": [{"name": "t", "allow_auto_topic_creation": True}]})
