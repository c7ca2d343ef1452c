"""librdkafka's mock cluster, driven through ctypes: test-bed infrastructure only.

No Apache Kafka broker can be installed on the machines kshare is tested on, so the
share-consumer behaviour is checked against Confluent's own C implementation of the
consumer side of KIP-932 (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge): the mock
cluster inside the librdkafka that confluent-kafka bundles. The product never imports
this module; the tests and the differential scenarios do.

The library is the very file confluent-kafka's extension is linked against (found next
to the installed package, never by a hard-coded wheel hash), so the mock speaks exactly
the protocol versions the clients under test speak. The mock API is marked experimental
and outside librdkafka's ABI guarantees, hence every prototype below is copied from
``src/rdkafka_mock.h`` and checked against the exported symbols when the library loads.

Quirks of the mock that a caller must know (librdkafka 2.16):

- Every ``rd_kafka_mock_sharegroup_set_*`` setter is cluster-wide: none takes a group
  id. Session timeout and heartbeat interval only reach groups created after the call;
  the other setters also update the groups that already exist.
- ``auto.offset.reset`` defaults to ``latest``, like Kafka; records produced before the
  group's first fetch are invisible unless ``earliest`` is set first.
- Expired acquisition locks are reclaimed by a one-second timer (and lazily on the next
  ShareFetch), so a redelivery after a lock timeout arrives up to about a second late.
- Its assignor splits partitions between members like a consumer group: with more
  members than partitions some members get nothing. Kafka's share assignor shares a
  partition between members; :meth:`RdkafkaMockCluster.share_all_partitions` restores
  that by setting a manual target assignment.
- Whenever any client connection to a broker closes, the mock closes every share
  session on that broker, whoever owned it, and so releases every record acquired
  through them (``rd_kafka_mock_connection_close``). A producer destroyed mid-test
  makes held records come back early with a higher delivery count and makes the
  consumers' next acknowledgements fail with SHARE_SESSION_NOT_FOUND.
- A ShareFetch that fails with an injected top-level error creates no session; the
  client's next ShareFetch then gets SHARE_SESSION_NOT_FOUND once and starts over.
- It has no admin RPCs (no CreateTopics, no IncrementalAlterConfigs): topics and group
  configuration are set through this wrapper.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, Self

import confluent_kafka

__all__ = [
    "MockClusterError",
    "MockRequest",
    "RdkafkaMockCluster",
    "librdkafka_path",
    "librdkafka_version",
]

_RD_KAFKA_PRODUCER: Final = 0
_RD_KAFKA_CONF_OK: Final = 0
_ERRSTR_SIZE: Final = 512

_c_void_pp = ctypes.POINTER(ctypes.c_void_p)
_c_char_ppp = ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p))

# name: (restype, argtypes), transcribed from rdkafka.h and rdkafka_mock.h.
# rd_kafka_resp_err_t, rd_kafka_type_t and rd_kafka_conf_res_t are C enums (int).
_PROTOTYPES: Final[dict[str, tuple[object, list[object]]]] = {
    "rd_kafka_version": (ctypes.c_int, []),
    "rd_kafka_err2str": (ctypes.c_char_p, [ctypes.c_int]),
    "rd_kafka_conf_new": (ctypes.c_void_p, []),
    "rd_kafka_conf_destroy": (None, [ctypes.c_void_p]),
    "rd_kafka_conf_set": (
        ctypes.c_int,
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t],
    ),
    "rd_kafka_new": (
        ctypes.c_void_p,
        [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t],
    ),
    "rd_kafka_destroy": (None, [ctypes.c_void_p]),
    "rd_kafka_mem_free": (None, [ctypes.c_void_p, ctypes.c_void_p]),
    "rd_kafka_topic_partition_list_new": (ctypes.c_void_p, [ctypes.c_int]),
    "rd_kafka_topic_partition_list_add": (
        ctypes.c_void_p,
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32],
    ),
    "rd_kafka_topic_partition_list_destroy": (None, [ctypes.c_void_p]),
    "rd_kafka_mock_cluster_new": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int]),
    "rd_kafka_mock_cluster_destroy": (None, [ctypes.c_void_p]),
    "rd_kafka_mock_cluster_bootstraps": (ctypes.c_char_p, [ctypes.c_void_p]),
    "rd_kafka_mock_topic_create": (
        ctypes.c_int,
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
    ),
    "rd_kafka_mock_push_request_errors_array": (
        None,
        [ctypes.c_void_p, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)],
    ),
    "rd_kafka_mock_clear_request_errors": (None, [ctypes.c_void_p, ctypes.c_int16]),
    "rd_kafka_mock_broker_set_down": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int32]),
    "rd_kafka_mock_broker_set_up": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int32]),
    "rd_kafka_mock_topic_set_error": (None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]),
    "rd_kafka_mock_partition_set_leader": (
        ctypes.c_int,
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int32],
    ),
    "rd_kafka_mock_coordinator_set": (
        ctypes.c_int,
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32],
    ),
    "rd_kafka_mock_sharegroup_set_session_timeout": (None, [ctypes.c_void_p, ctypes.c_int]),
    "rd_kafka_mock_sharegroup_set_heartbeat_interval": (None, [ctypes.c_void_p, ctypes.c_int]),
    "rd_kafka_mock_sharegroup_set_max_delivery_attempts": (
        None,
        [ctypes.c_void_p, ctypes.c_int],
    ),
    "rd_kafka_mock_sharegroup_set_record_lock_duration": (
        None,
        [ctypes.c_void_p, ctypes.c_int],
    ),
    "rd_kafka_mock_sharegroup_set_max_record_locks": (None, [ctypes.c_void_p, ctypes.c_int]),
    "rd_kafka_mock_sharegroup_set_auto_offset_reset": (None, [ctypes.c_void_p, ctypes.c_int]),
    "rd_kafka_mock_sharegroup_target_assignment": (
        None,
        [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.POINTER(ctypes.c_char_p),
            _c_void_pp,
            ctypes.c_size_t,
        ],
    ),
    "rd_kafka_mock_start_request_tracking": (None, [ctypes.c_void_p]),
    "rd_kafka_mock_stop_request_tracking": (None, [ctypes.c_void_p]),
    "rd_kafka_mock_clear_requests": (None, [ctypes.c_void_p]),
    "rd_kafka_mock_get_requests": (_c_void_pp, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "rd_kafka_mock_request_id": (ctypes.c_int32, [ctypes.c_void_p]),
    "rd_kafka_mock_request_api_key": (ctypes.c_int16, [ctypes.c_void_p]),
    "rd_kafka_mock_request_timestamp": (ctypes.c_int64, [ctypes.c_void_p]),
    "rd_kafka_mock_request_destroy_array": (None, [_c_void_pp, ctypes.c_size_t]),
    "rd_kafka_mock_sharegroup_get_member_ids": (
        ctypes.c_int,
        [ctypes.c_void_p, ctypes.c_char_p, _c_char_ppp, ctypes.POINTER(ctypes.c_size_t)],
    ),
}


@dataclass(frozen=True, slots=True)
class MockRequest:
    """One request a mock broker received, as its request tracking recorded it."""

    broker_id: int
    api_key: int
    timestamp_us: int


class MockClusterError(RuntimeError):
    """A mock-cluster call failed; carries librdkafka's error code for assertions."""

    def __init__(self, operation: str, code: int) -> None:
        self.operation = operation
        self.code = code
        super().__init__(f"{operation}: {_error_name(code)} ({code})")


def librdkafka_path() -> Path:
    """Locate the librdkafka shared library that confluent-kafka itself loads.

    Wheels vendor it under a hashed name (``confluent_kafka.libs/librdkafka-<hash>.so.1``
    on Linux, ``confluent_kafka/.dylibs`` on macOS); the hash changes with every build, so
    it is globbed, and a source build linked against a system librdkafka falls back to
    the dynamic linker's search.
    """
    package_dir = Path(confluent_kafka.__file__).resolve().parent
    candidates = [
        *sorted((package_dir.parent / "confluent_kafka.libs").glob("librdkafka*.so*")),
        *sorted((package_dir / ".dylibs").glob("librdkafka*.dylib")),
    ]
    if candidates:
        return candidates[0]
    system = ctypes.util.find_library("rdkafka")
    if system is None:
        raise FileNotFoundError(f"no librdkafka next to {package_dir} nor on the system")
    return Path(system)


def librdkafka_version() -> int:
    """The loaded library's ``rd_kafka_version()``, to prove it is confluent-kafka's own."""
    version: int = _library().rd_kafka_version()
    return version


@functools.cache
def _library() -> ctypes.CDLL:
    library = ctypes.CDLL(str(librdkafka_path()))
    missing = [name for name in _PROTOTYPES if not hasattr(library, name)]
    if missing:
        raise ImportError(
            f"{librdkafka_path()} (version {confluent_kafka.libversion()[0]}) lacks the "
            f"share-group mock API: {', '.join(missing)}"
        )
    for name, (restype, argtypes) in _PROTOTYPES.items():
        function = getattr(library, name)
        function.restype = restype
        function.argtypes = argtypes
    return library


def _error_name(code: int) -> str:
    described: bytes | None = _library().rd_kafka_err2str(code)
    return described.decode() if described else f"error {code}"


def _check(operation: str, code: int) -> None:
    if code != 0:
        raise MockClusterError(operation, code)


class RdkafkaMockCluster:
    """A running librdkafka mock cluster with localhost listeners.

    The mock needs an ``rd_kafka_t`` for its bookkeeping; a private producer handle
    serves, and it outlives the cluster (the cluster is destroyed first). Use it as a
    context manager so the listeners and the mock's threads are gone when a test ends.
    """

    def __init__(self, broker_count: int = 1) -> None:
        if broker_count < 1:
            raise ValueError("a mock cluster needs at least one broker")
        library = _library()
        errstr = ctypes.create_string_buffer(_ERRSTR_SIZE)
        conf = library.rd_kafka_conf_new()
        # Warnings only: the mock logs every connection at info level to stderr.
        if library.rd_kafka_conf_set(conf, b"log_level", b"4", errstr, _ERRSTR_SIZE) != (
            _RD_KAFKA_CONF_OK
        ):
            library.rd_kafka_conf_destroy(conf)
            raise MockClusterError(f"rd_kafka_conf_set: {errstr.value.decode()}", -1)
        handle = library.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, _ERRSTR_SIZE)
        if not handle:
            # rd_kafka_new takes ownership of conf only when it succeeds.
            library.rd_kafka_conf_destroy(conf)
            raise MockClusterError(f"rd_kafka_new: {errstr.value.decode()}", -1)
        cluster = library.rd_kafka_mock_cluster_new(handle, broker_count)
        if not cluster:
            library.rd_kafka_destroy(handle)
            raise MockClusterError("rd_kafka_mock_cluster_new returned NULL", -1)
        self._library = library
        self._handle: int | None = handle
        self._cluster: int | None = cluster
        self.broker_count = broker_count
        self._topics: dict[str, int] = {}
        self.bootstrap_servers: str = library.rd_kafka_mock_cluster_bootstraps(cluster).decode()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A forgotten close() must not leave listeners and mock threads behind, but
        # interpreter shutdown may already have torn ctypes down: then do nothing.
        if getattr(self, "_cluster", None) is not None and not sys.is_finalizing():
            self.close()

    @property
    def _mock(self) -> int:
        if self._cluster is None:
            raise RuntimeError("the mock cluster is closed")
        return self._cluster

    def close(self) -> None:
        """Stop the listeners and free the cluster; safe to call twice."""
        cluster, handle = self._cluster, self._handle
        self._cluster = self._handle = None
        if cluster is not None:
            self._library.rd_kafka_mock_cluster_destroy(cluster)
        if handle is not None:
            self._library.rd_kafka_destroy(handle)

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        """Create a topic up front: the mock answers no CreateTopics request."""
        _check(
            f"create topic {name!r}",
            self._library.rd_kafka_mock_topic_create(
                self._mock, name.encode(), partitions, replication_factor
            ),
        )
        self._topics[name] = partitions

    def set_sharegroup_auto_offset_reset(self, policy: Literal["earliest", "latest"]) -> None:
        """Where a share-partition starts on first fetch, for every share group.

        Cluster-wide in the mock (no group argument exists in its C API); takes effect for
        a group only before its first ShareFetch initialises the share-partition.
        """
        if policy not in ("earliest", "latest"):
            raise ValueError(f"share.auto.offset.reset must be earliest or latest: {policy!r}")
        self._library.rd_kafka_mock_sharegroup_set_auto_offset_reset(
            self._mock, 1 if policy == "earliest" else 0
        )

    def set_sharegroup_record_lock_duration(self, milliseconds: int) -> None:
        """Acquisition lock duration for every share group; 0 means the session timeout."""
        self._library.rd_kafka_mock_sharegroup_set_record_lock_duration(
            self._mock, _non_negative("record lock duration", milliseconds)
        )

    def set_sharegroup_max_delivery_attempts(self, attempts: int) -> None:
        """Deliveries after which a released or timed-out record is archived; 0: unlimited."""
        self._library.rd_kafka_mock_sharegroup_set_max_delivery_attempts(
            self._mock, _non_negative("delivery attempts", attempts)
        )

    def set_sharegroup_session_timeout(self, milliseconds: int) -> None:
        """Member and share-session timeout; reaches only groups created afterwards."""
        self._library.rd_kafka_mock_sharegroup_set_session_timeout(
            self._mock, _positive("session timeout", milliseconds)
        )

    def set_sharegroup_heartbeat_interval(self, milliseconds: int) -> None:
        """Heartbeat interval handed to members; reaches only groups created afterwards.

        A short interval is what makes a test's consumers join and see a new assignment
        in well under a second instead of the five-second default.
        """
        self._library.rd_kafka_mock_sharegroup_set_heartbeat_interval(
            self._mock, _positive("heartbeat interval", milliseconds)
        )

    def set_sharegroup_max_record_locks(self, locks: int) -> None:
        """In-flight (acquired) records allowed per share-partition; 0: unlimited."""
        self._library.rd_kafka_mock_sharegroup_set_max_record_locks(
            self._mock, _non_negative("record locks", locks)
        )

    def sharegroup_member_ids(self, group: str) -> list[str]:
        """Member ids the mock's share-group coordinator knows; empty for an unknown group."""
        ids = ctypes.POINTER(ctypes.c_char_p)()
        count = ctypes.c_size_t(0)
        code = self._library.rd_kafka_mock_sharegroup_get_member_ids(
            self._mock, group.encode(), ctypes.byref(ids), ctypes.byref(count)
        )
        if code != 0:
            return []
        # The strings and the array were rd_malloc'ed by the mock: copy them out, then
        # free them with the allocator librdkafka used, not Python's.
        raw = ctypes.cast(ids, _c_void_pp)
        try:
            members = [(ids[index] or b"").decode() for index in range(count.value)]
        finally:
            for index in range(count.value):
                self._library.rd_kafka_mem_free(self._handle, raw[index])
            if ids:
                self._library.rd_kafka_mem_free(self._handle, raw)
        return members

    def assign_sharegroup(
        self, group: str, assignment: Mapping[str, Sequence[tuple[str, int]]]
    ) -> None:
        """Set a manual target assignment: member id -> (topic, partition) pairs.

        From then on the mock stops assigning automatically for this group, so members
        that join later get nothing until this is called again.
        """
        member_ids = list(assignment)
        lists: list[int] = []
        try:
            for member_id in member_ids:
                partitions = assignment[member_id]
                partition_list = self._library.rd_kafka_topic_partition_list_new(
                    max(len(partitions), 1)
                )
                lists.append(partition_list)
                for topic, partition in partitions:
                    self._library.rd_kafka_topic_partition_list_add(
                        partition_list, topic.encode(), partition
                    )
            member_array = (ctypes.c_char_p * len(member_ids))(
                *(member_id.encode() for member_id in member_ids)
            )
            list_array = (ctypes.c_void_p * len(lists))(*lists)
            self._library.rd_kafka_mock_sharegroup_target_assignment(
                self._mock, group.encode(), member_array, list_array, len(member_ids)
            )
        finally:
            for partition_list in lists:
                self._library.rd_kafka_topic_partition_list_destroy(partition_list)

    def wait_for_sharegroup_members(
        self, group: str, count: int, timeout: float = 10.0
    ) -> list[str]:
        """Wait until ``group`` has at least ``count`` members; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        members = self.sharegroup_member_ids(group)
        while len(members) < count:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"share group {group!r} has {len(members)} members, wanted {count}"
                )
            # The mock offers no membership notification: poll its state, briefly.
            time.sleep(0.02)
            members = self.sharegroup_member_ids(group)
        return members

    def share_all_partitions(self, group: str, topic: str, member_count: int) -> list[str]:
        """Wait for ``member_count`` members, then give each every partition of ``topic``.

        Kafka's share assignor lets several members fetch from one share-partition; the
        mock's splits partitions like a consumer group, so with two members on a
        one-partition topic one of them would get nothing. The signature matches the
        scenarios' ``members_joined`` hook. Returns the members assigned.
        """
        partitions = self._topics.get(topic)
        if partitions is None:
            raise KeyError(f"topic {topic!r} was not created through this wrapper")
        members = self.wait_for_sharegroup_members(group, member_count)
        pairs = [(topic, partition) for partition in range(partitions)]
        self.assign_sharegroup(group, {member: pairs for member in members})
        return members

    def start_request_tracking(self) -> None:
        """Record every request from now on, so a test can see which RPCs really happened."""
        self._library.rd_kafka_mock_start_request_tracking(self._mock)

    def stop_request_tracking(self) -> None:
        """Stop recording; what was recorded stays readable."""
        self._library.rd_kafka_mock_stop_request_tracking(self._mock)

    def clear_requests(self) -> None:
        """Forget the requests recorded so far."""
        self._library.rd_kafka_mock_clear_requests(self._mock)

    def requests(self) -> list[MockRequest]:
        """The requests recorded since tracking started, oldest first."""
        count = ctypes.c_size_t(0)
        array = self._library.rd_kafka_mock_get_requests(self._mock, ctypes.byref(count))
        if not array:
            return []
        try:
            return [
                MockRequest(
                    broker_id=self._library.rd_kafka_mock_request_id(array[index]),
                    api_key=self._library.rd_kafka_mock_request_api_key(array[index]),
                    timestamp_us=self._library.rd_kafka_mock_request_timestamp(array[index]),
                )
                for index in range(count.value)
            ]
        finally:
            self._library.rd_kafka_mock_request_destroy_array(array, count.value)

    def push_request_errors(self, api_key: int, errors: Sequence[int]) -> None:
        """Fail the next ``len(errors)`` requests of ``api_key``, in order, on any broker.

        ``RD_KAFKA_RESP_ERR__TRANSPORT`` (-195) makes the mock drop the connection instead.
        """
        codes = (ctypes.c_int * len(errors))(*errors)
        self._library.rd_kafka_mock_push_request_errors_array(
            self._mock, api_key, len(errors), codes
        )

    def clear_request_errors(self, api_key: int) -> None:
        """Drop the errors still stacked for ``api_key``."""
        self._library.rd_kafka_mock_clear_request_errors(self._mock, api_key)

    def broker_set_down(self, broker_id: int) -> None:
        """Disconnect a broker (-1: all) and refuse new connections; no leader change."""
        _check(
            f"set broker {broker_id} down",
            self._library.rd_kafka_mock_broker_set_down(self._mock, broker_id),
        )

    def broker_set_up(self, broker_id: int) -> None:
        """Accept connections again on a broker (-1: all)."""
        _check(
            f"set broker {broker_id} up",
            self._library.rd_kafka_mock_broker_set_up(self._mock, broker_id),
        )

    def topic_set_error(self, topic: str, code: int) -> None:
        """Answer every Metadata request naming ``topic`` with ``code`` (0: no error again),
        as a real broker lists a topic just created with LEADER_NOT_AVAILABLE."""
        self._library.rd_kafka_mock_topic_set_error(self._mock, topic.encode(), code)

    def partition_set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Move a partition's leadership; the old leader answers NOT_LEADER_OR_FOLLOWER."""
        _check(
            f"move {topic}-{partition} to broker {broker_id}",
            self._library.rd_kafka_mock_partition_set_leader(
                self._mock, topic.encode(), partition, broker_id
            ),
        )

    def coordinator_set(self, group: str, broker_id: int) -> None:
        """Make ``broker_id`` the coordinator FindCoordinator names for ``group``."""
        _check(
            f"set the coordinator of group {group!r}",
            self._library.rd_kafka_mock_coordinator_set(
                self._mock, b"group", group.encode(), broker_id
            ),
        )


def _non_negative(what: str, value: int) -> int:
    if value < 0:
        raise ValueError(f"{what} must be >= 0: {value}")
    return value


def _positive(what: str, value: int) -> int:
    if value <= 0:
        raise ValueError(f"{what} must be > 0: {value}")
    return value
