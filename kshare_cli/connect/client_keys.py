"""Every client property name Kafka's Java clients and librdkafka define.

A ``--command-config`` file written for Kafka's tools carries settings kshare has
no use for (``group.id``, ``client.dns.lookup``, ``acks``); those are known, and
kshare says only that it ignores them. A name in neither list is a typo or a
line that is not a setting at all, and gets a warning of its own with the
nearest name kshare reads: ``securty.protocol`` must not surface later as an
unrelated connection error.

Where the names come from (regenerate on a client upgrade; nothing reads them
at run time):

- Java: the string constants of ``CommonClientConfigs``, ``ConsumerConfig``,
  ``ProducerConfig``, ``AdminClientConfig``, ``SslConfigs`` and ``SaslConfigs``
  on Kafka's 4.2 branch (``*_CONFIG`` and the un-suffixed SSL/SASL names), plus
  ``AbstractConfig``'s ``config.providers`` and the list-serde names.
- librdkafka: every row of ``rd_kafka_conf_properties_show()`` of the
  librdkafka 2.16.0 that confluent-kafka bundles (callbacks included: they
  are property names too).
"""

from __future__ import annotations

JAVA_CLIENT_KEYS = frozenset(
    """
    acks allow.auto.create.topics auto.commit.interval.ms auto.offset.reset batch.size
    bootstrap.controllers bootstrap.servers buffer.memory check.crcs client.dns.lookup client.id
    client.rack compression.gzip.level compression.lz4.level compression.type
    compression.zstd.level config.providers connections.max.idle.ms default.api.timeout.ms
    default.list.key.serde.inner default.list.key.serde.type default.list.value.serde.inner
    default.list.value.serde.type delivery.timeout.ms enable.auto.commit enable.idempotence
    enable.metrics.push exclude.internal.topics fetch.max.bytes fetch.max.wait.ms
    fetch.min.bytes group.id group.instance.id group.protocol group.remote.assignor
    heartbeat.interval.ms interceptor.classes isolation.level key.deserializer key.serializer
    linger.ms max.block.ms max.in.flight.requests.per.connection max.partition.fetch.bytes
    max.poll.interval.ms max.poll.records max.request.size metadata.max.age.ms
    metadata.max.idle.ms metadata.recovery.rebootstrap.trigger.ms metadata.recovery.strategy
    metric.reporters metrics.num.samples metrics.recording.level metrics.sample.window.ms
    partition.assignment.strategy partitioner.adaptive.partitioning.enable
    partitioner.availability.timeout.ms partitioner.class partitioner.ignore.keys
    rebalance.timeout.ms receive.buffer.bytes reconnect.backoff.max.ms reconnect.backoff.ms
    request.timeout.ms retries retry.backoff.max.ms retry.backoff.ms
    sasl.client.callback.handler.class sasl.jaas.config sasl.kerberos.kinit.cmd
    sasl.kerberos.min.time.before.relogin sasl.kerberos.service.name
    sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
    sasl.login.callback.handler.class sasl.login.class sasl.login.connect.timeout.ms
    sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds
    sasl.login.refresh.min.period.seconds sasl.login.refresh.window.factor
    sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms sasl.login.retry.backoff.ms
    sasl.mechanism sasl.oauthbearer.assertion.algorithm sasl.oauthbearer.assertion.claim.aud
    sasl.oauthbearer.assertion.claim.exp.seconds sasl.oauthbearer.assertion.claim.iss
    sasl.oauthbearer.assertion.claim.jti.include sasl.oauthbearer.assertion.claim.nbf.seconds
    sasl.oauthbearer.assertion.claim.sub sasl.oauthbearer.assertion.file
    sasl.oauthbearer.assertion.private.key.file
    sasl.oauthbearer.assertion.private.key.passphrase sasl.oauthbearer.assertion.template.file
    sasl.oauthbearer.client.credentials.client.id
    sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.clock.skew.seconds
    sasl.oauthbearer.expected.audience sasl.oauthbearer.expected.issuer
    sasl.oauthbearer.header.urlencode sasl.oauthbearer.jwks.endpoint.refresh.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.ms sasl.oauthbearer.jwks.endpoint.url
    sasl.oauthbearer.jwt.retriever.class sasl.oauthbearer.jwt.validator.class
    sasl.oauthbearer.scope sasl.oauthbearer.scope.claim.name sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url security.protocol send.buffer.bytes session.timeout.ms
    share.acknowledgement.mode share.acquire.mode socket.connection.setup.timeout.max.ms
    socket.connection.setup.timeout.ms ssl.cipher.suites ssl.enabled.protocols
    ssl.endpoint.identification.algorithm ssl.engine.factory.class ssl.key.password
    ssl.keymanager.algorithm ssl.keystore.certificate.chain ssl.keystore.key
    ssl.keystore.location ssl.keystore.password ssl.keystore.type ssl.protocol ssl.provider
    ssl.secure.random.implementation ssl.trustmanager.algorithm ssl.truststore.certificates
    ssl.truststore.location ssl.truststore.password ssl.truststore.type transaction.timeout.ms
    transaction.two.phase.commit.enable transactional.id value.deserializer value.serializer
    """.split()
)

#: Families of Java client settings named by prefix (``metrics.context.<label>``).
JAVA_CLIENT_PREFIXES = ("metrics.context.", "config.providers.")

LIBRDKAFKA_KEYS = frozenset(
    """
    acks allow.auto.create.topics api.version.fallback.ms api.version.request
    api.version.request.timeout.ms auto.commit.enable auto.commit.interval.ms auto.offset.reset
    background_event_cb batch.num.messages batch.size bootstrap.servers broker.address.family
    broker.address.ttl broker.version.fallback builtin.features check.crcs client.dns.lookup
    client.id client.rack closesocket_cb compression.codec compression.level compression.type
    connect_cb connections.max.idle.ms consume.callback.max.messages consume_cb
    coordinator.query.interval.ms debug default_topic_conf delivery.report.only.error
    delivery.timeout.ms dr_cb dr_msg_cb enable.auto.commit enable.auto.offset.store
    enable.gapless.guarantee enable.idempotence enable.metrics.push enable.partition.eof
    enable.random.seed enable.sasl.oauthbearer.unsecure.jwt enable.ssl.certificate.verification
    enabled_events error_cb fetch.error.backoff.ms fetch.max.bytes fetch.message.max.bytes
    fetch.min.bytes fetch.queue.backoff.ms fetch.wait.max.ms group.id group.instance.id
    group.protocol group.protocol.type group.remote.assignor heartbeat.interval.ms
    https.ca.location https.ca.pem interceptors internal.termination.signal isolation.level
    linger.ms log.connection.close log.queue log.thread.name log_cb log_level max.in.flight
    max.in.flight.requests.per.connection max.partition.fetch.bytes max.poll.interval.ms
    max.poll.records message.copy.max.bytes message.max.bytes message.send.max.retries
    message.timeout.ms metadata.broker.list metadata.max.age.ms
    metadata.recovery.rebootstrap.trigger.ms metadata.recovery.strategy msg_order_cmp
    oauthbearer_token_refresh_cb offset.store.method offset.store.path
    offset.store.sync.interval.ms offset_commit_cb opaque open_cb partition.assignment.strategy
    partitioner partitioner_cb plugin.library.paths produce.offset.report
    queue.buffering.backpressure.threshold queue.buffering.max.kbytes
    queue.buffering.max.messages queue.buffering.max.ms queued.max.messages.kbytes
    queued.min.messages queuing.strategy rebalance_cb receive.message.max.bytes
    reconnect.backoff.jitter.ms reconnect.backoff.max.ms reconnect.backoff.ms
    request.required.acks request.timeout.ms resolve_cb retries retry.backoff.max.ms
    retry.backoff.ms sasl.kerberos.keytab sasl.kerberos.kinit.cmd
    sasl.kerberos.min.time.before.relogin sasl.kerberos.principal sasl.kerberos.service.name
    sasl.mechanism sasl.mechanisms sasl.oauthbearer.assertion.algorithm
    sasl.oauthbearer.assertion.claim.aud sasl.oauthbearer.assertion.claim.exp.seconds
    sasl.oauthbearer.assertion.claim.iss sasl.oauthbearer.assertion.claim.jti.include
    sasl.oauthbearer.assertion.claim.nbf.seconds sasl.oauthbearer.assertion.claim.sub
    sasl.oauthbearer.assertion.file sasl.oauthbearer.assertion.jwt.template.file
    sasl.oauthbearer.assertion.private.key.file
    sasl.oauthbearer.assertion.private.key.passphrase sasl.oauthbearer.assertion.private.key.pem
    sasl.oauthbearer.client.credentials.client.id
    sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.client.id
    sasl.oauthbearer.client.secret sasl.oauthbearer.config sasl.oauthbearer.extensions
    sasl.oauthbearer.grant.type sasl.oauthbearer.metadata.authentication.type
    sasl.oauthbearer.method sasl.oauthbearer.scope sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url sasl.password sasl.username security.protocol
    session.timeout.ms share.acknowledgement.mode socket.blocking.max.ms
    socket.connection.setup.timeout.ms socket.keepalive.enable socket.max.fails
    socket.nagle.disable socket.receive.buffer.bytes socket.send.buffer.bytes socket.timeout.ms
    socket_cb ssl.ca.certificate.stores ssl.ca.location ssl.ca.pem ssl.certificate.location
    ssl.certificate.pem ssl.certificate.verify_cb ssl.cipher.suites ssl.crl.location
    ssl.curves.list ssl.endpoint.identification.algorithm ssl.engine.id ssl.engine.location
    ssl.key.location ssl.key.password ssl.key.pem ssl.keystore.location ssl.keystore.password
    ssl.providers ssl.sigalgs.list ssl_ca ssl_certificate ssl_engine_callback_data ssl_key
    statistics.interval.ms stats_cb sticky.partitioning.linger.ms throttle_cb topic.blacklist
    topic.metadata.propagation.max.ms topic.metadata.refresh.fast.cnt
    topic.metadata.refresh.fast.interval.ms topic.metadata.refresh.interval.ms
    topic.metadata.refresh.sparse transaction.timeout.ms transactional.id
    """.split()
)


def is_client_key(name: str) -> bool:
    """Whether Kafka's Java clients or librdkafka define ``name``."""
    return (
        name in JAVA_CLIENT_KEYS or name in LIBRDKAFKA_KEYS or name.startswith(JAVA_CLIENT_PREFIXES)
    )
