"""Kafka's feature flags as ApiVersions reports them: names, levels and what they mean.

A cluster's finalized feature levels decide what its brokers act on, whatever
their software could do: a Kafka 4.4 cluster formatted with ``share.version=1``
stores the dead-letter-queue configs and ignores them (the 4.4 recording). The
names and levels here are Kafka's (``MetadataVersion``, ``ShareVersion`` in
``server-common``, branch 4.4); what a command says about them is the admin
layer's.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "METADATA_VERSION",
    "METADATA_VERSIONS",
    "SHARE_VERSION",
    "kafka_line_of",
    "metadata_version_name",
]

#: The feature that versions the cluster's metadata, named after a release (``4.3-IV0``).
METADATA_VERSION: Final = "metadata.version"
#: The share-group feature: 1 enables share groups (4.2), 2 the dead-letter queue (4.4).
SHARE_VERSION: Final = "share.version"

#: ``MetadataVersion`` feature levels from 3.9 on, by Kafka's names (``IBP_4_3_IV0`` is 30).
METADATA_VERSIONS: Final[dict[int, str]] = {
    21: "3.9-IV0",
    22: "4.0-IV0",
    23: "4.0-IV1",
    24: "4.0-IV2",
    25: "4.0-IV3",
    26: "4.1-IV0",
    27: "4.1-IV1",
    28: "4.2-IV0",
    29: "4.2-IV1",
    30: "4.3-IV0",
    31: "4.4-IV0",
    32: "4.4-IV1",
    33: "4.4-IV2",
}

#: The lowest ``share.version`` a Kafka release line supports at most (``ShareVersion``
#: SV_1 arrived with 4.2's production share groups, SV_2 with 4.4's DLQ).
_LINE_OF_SHARE_VERSION: Final = {2: "4.4", 1: "4.2"}


def metadata_version_name(level: int) -> str:
    """Kafka's name of a ``metadata.version`` level; ``level N`` for one kshare does not know."""
    return METADATA_VERSIONS.get(level, f"level {level}")


def kafka_line_of(metadata_level: int | None, share_version_max: int | None) -> str | None:
    """The newest Kafka release line the broker's features prove, ``4.3`` or ``4.4``.

    ``metadata.version`` names a release, but a new 4.4 cluster is formatted with
    4.3-IV0 (the recording), so the ``share.version`` its software supports (2
    from 4.4 on) counts too; the later of the two wins. None when neither is known.
    """
    lines: list[str] = []
    if metadata_level is not None and metadata_level in METADATA_VERSIONS:
        lines.append(METADATA_VERSIONS[metadata_level].split("-", 1)[0])
    for level, line in _LINE_OF_SHARE_VERSION.items():
        if share_version_max is not None and share_version_max >= level:
            lines.append(line)
            break
    if not lines:
        return None
    return max(lines, key=lambda line: tuple(int(part) for part in line.split(".")))
