"""The API keys are kio's: each named key is the one kio's request classes carry."""

from __future__ import annotations

import dataclasses

import pytest
from kio.index import load_entity_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

from kshare_cli.kafka import api_keys

NOT_KEYS = {"LIST_GROUPS_WITH_TYPES", "SHARE_GROUP_APIS"}
KEY_NAMES = [name for name in api_keys.__all__ if name.isupper() and name not in NOT_KEYS]


@pytest.mark.parametrize("name", KEY_NAMES)
def test_each_key_is_the_one_kios_request_classes_carry(name: str) -> None:
    versions = schema_name_map[name.lower()]
    carried = {
        load_entity_schema(name.lower(), version, EntityType.request).__api_key__  # type: ignore[attr-defined]  # every request schema has one; Entity does not declare it
        for version in versions
    }
    assert carried == {getattr(api_keys, name)}


def test_a_name_kio_does_not_know_is_an_error() -> None:
    with pytest.raises(KeyError):
        api_keys.api_key("list_group")


def test_list_groups_with_types_is_the_first_version_with_the_types_filter() -> None:
    with_filter = [
        version
        for version in schema_name_map["list_groups"]
        if "types_filter"
        in {
            field.name
            for field in dataclasses.fields(
                load_entity_schema("list_groups", version, EntityType.request)
            )
        }
    ]
    assert min(with_filter) == api_keys.LIST_GROUPS_WITH_TYPES


def test_the_share_group_apis_are_kios_share_apis() -> None:
    assert api_keys.SHARE_GROUP_APIS == {
        key for key, name in api_key_map.items() if "share" in name
    }
