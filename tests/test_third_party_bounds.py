"""The private third-party APIs kshare relies on, and the upper bounds that hold them still.

Where no public API does the job without changing behaviour or output, kshare uses
a private one and bounds the dependency in ``pyproject.toml`` (a comment there names
the API). These tests fail when that bargain must be looked at again: when the
installed version leaves the declared range (a bound was moved, or an environment
installs something else), or when the private API is no longer what kshare's code
assumes (its name, signature or the bookkeeping copied from it). Moving a bound
means re-reading the code named here, then updating the test.
"""

from __future__ import annotations

import base64
import inspect
import tomllib
from functools import cache
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

#: Distribution -> the private APIs (or exact behaviour) its upper bound protects, each
#: of which must be named in pyproject.toml's comment on that bound.
BOUNDED = {
    # tui/widgets.py FastTable.update_rows; tui/app.py DashboardApp's failure handling.
    "textual": (
        "DataTable._data",
        "_column_locations",
        "_update_count",
        "App._handle_exception",
        "_fatal_error",
        "_close_messages_no_wait",
    ),
    # render/output_formats.py layout_table: Rich's Table layout, byte for byte.
    "rich": ("layout_table",),
    # consumer/deserializers.py _ProtobufReader._message_class.
    "confluent-kafka": ("_resolve_named_schema", "_init_pool", "_str_to_proto"),
    # pipeline/session.py spark_running.
    "pyspark": ("SparkContext._active_spark_context",),
    # wire/records.py: not private, but imported, so declared (it was not).
    "crc32c": (),
}


@cache
def _pyproject_text() -> str:
    return PYPROJECT.read_text(encoding="utf-8")


@cache
def _declared() -> dict[str, Requirement]:
    """Every requirement of the project and its extras, by canonical distribution name."""
    project = tomllib.loads(_pyproject_text())["project"]
    lines = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        lines.extend(extra)
    requirements = [Requirement(line) for line in lines]
    return {canonicalize_name(req.name): req for req in requirements if req.name != "kshare-cli"}


@pytest.mark.parametrize("distribution", sorted(BOUNDED))
def test_the_installed_version_is_within_a_declared_upper_bound(distribution: str) -> None:
    requirement = _declared().get(canonicalize_name(distribution))
    assert requirement is not None, f"{distribution} is imported but not declared"
    uppers = [spec for spec in requirement.specifier if spec.operator in ("<", "<=", "==", "~=")]
    assert uppers, f"{requirement} has no upper bound"
    installed = Version(version(distribution))
    assert requirement.specifier.contains(installed, prereleases=True), (
        f"{distribution} {installed} is outside {requirement.specifier}: re-check "
        f"{', '.join(BOUNDED[distribution]) or 'its use'} before moving the bound"
    )


@pytest.mark.parametrize(
    ("distribution", "api"),
    [(distribution, api) for distribution, apis in BOUNDED.items() for api in apis],
)
def test_pyproject_names_each_private_api_by_its_bound(distribution: str, api: str) -> None:
    text = _pyproject_text()
    assert api in text, f"pyproject.toml's comment on {distribution}'s bound should name {api}"


# -------------------------------------------------------------------------- textual


def test_datatable_keeps_the_cells_update_rows_writes_to() -> None:
    """FastTable.update_rows does DataTable.update_cell's bookkeeping without its repaint."""
    from textual._two_way_dict import TwoWayDict
    from textual.widgets import DataTable

    table: DataTable[object] = DataTable()
    assert isinstance(table._data, dict)
    assert isinstance(table._column_locations, TwoWayDict)
    assert table._update_count == 0
    parameters = list(inspect.signature(DataTable.update_cell).parameters)
    assert parameters[:4] == ["self", "row_key", "column_key", "value"]
    source = inspect.getsource(DataTable.update_cell)
    # The two lines update_rows copies: the cell's value, the count that drops render caches.
    assert "self._data[row_key][column_key] = value" in source
    assert "self._update_count += 1" in source


def test_app_reports_a_crash_through_the_hooks_the_dashboard_overrides() -> None:
    """DashboardApp keeps the first crash (_handle_exception) and prints no traceback with
    local variables, which would show SASL passwords (_fatal_error)."""
    from textual.app import App

    assert list(inspect.signature(App._handle_exception).parameters) == ["self", "error"]
    assert list(inspect.signature(App._fatal_error).parameters) == ["self"]
    assert list(inspect.signature(App._close_messages_no_wait).parameters) == ["self"]
    handle = inspect.getsource(App._handle_exception)
    assert "self._fatal_error()" in handle
    fatal = inspect.getsource(App._fatal_error)
    assert "show_locals=True" in fatal
    assert "self._close_messages_no_wait()" in fatal


# -------------------------------------------------------------------------- rich


def test_layout_table_is_still_richs_layout() -> None:
    """One table with every case layout_table reproduces (tests/render/test_table_fast.py
    checks any table, with Hypothesis)."""
    from kshare_cli.render.output_formats import (
        add_row,
        layout_table,
        new_table,
        rich_table_lines,
    )

    table = new_table("GROUP", "PARTITION", "LAG", right=("PARTITION", "LAG"))
    add_row(table, ["orders", 0, "12  "], end_section=True)
    add_row(table, ["注文", 10, None])
    add_row(table, ["x", 2])
    fast = layout_table(table, None)
    assert fast is not None
    assert fast == rich_table_lines(table, None)


# -------------------------------------------------------------------------- confluent-kafka


def test_the_protobuf_helpers_the_console_consumer_builds_classes_with() -> None:
    pytest.importorskip("google.protobuf")
    from confluent_kafka.schema_registry._sync.protobuf import _resolve_named_schema
    from confluent_kafka.schema_registry.common.protobuf import _init_pool, _str_to_proto
    from google.protobuf import descriptor_pb2  # type: ignore[import-untyped]
    from google.protobuf.descriptor_pool import DescriptorPool  # type: ignore[import-untyped]

    assert list(inspect.signature(_resolve_named_schema).parameters)[:3] == [
        "schema",
        "schema_registry_client",
        "pool",
    ]
    assert list(inspect.signature(_init_pool).parameters) == ["pool"]
    assert list(inspect.signature(_str_to_proto).parameters) == ["name", "schema_str"]

    pool = DescriptorPool()
    _init_pool(pool)
    assert pool.FindMessageTypeByName("google.protobuf.Timestamp").name == "Timestamp"
    written = descriptor_pb2.FileDescriptorProto(name="orders.proto", package="shop")
    written.message_type.add(name="Order")
    encoded = base64.standard_b64encode(written.SerializeToString()).decode("ascii")
    parsed = _str_to_proto("default", encoded)
    assert (parsed.name, parsed.package, parsed.message_type[0].name) == (
        "default",
        "shop",
        "Order",
    )


# -------------------------------------------------------------------------- pyspark


def test_spark_running_reads_the_context_pyspark_keeps() -> None:
    pytest.importorskip("pyspark")
    from pyspark import SparkContext

    from kshare_cli.pipeline.session import spark_running

    assert "_active_spark_context" in vars(SparkContext)
    # Set when a context starts and cleared when it stops, whatever the thread.
    assert "SparkContext._active_spark_context = instance" in inspect.getsource(
        SparkContext._ensure_initialized
    )
    assert "SparkContext._active_spark_context = None" in inspect.getsource(SparkContext.stop)
    assert spark_running() is (SparkContext._active_spark_context is not None)


# -------------------------------------------------------------------------- crc32c


def test_crc32c_checks_a_batch_slice() -> None:
    import crc32c

    data = b"123456789"
    # CRC-32C's check value (RFC 3720 B.4), on a memoryview slice as wire/records.py passes.
    assert crc32c.crc32c(memoryview(b"--" + data)[2:]) == 0xE3069283
