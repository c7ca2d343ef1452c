"""The API keys are kio's: each named key is the one kio's request classes carry."""

from __future__ import annotations

import pytest
from kio.index import load_entity_schema
from kio.schema.index import schema_name_map
from kio.static.constants import EntityType

from kshare_cli.kafka import api_keys


@pytest.mark.parametrize("name", [name for name in api_keys.__all__ if name.isupper()])
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
