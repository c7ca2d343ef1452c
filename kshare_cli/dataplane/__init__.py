"""The one adapter over confluent-kafka (librdkafka): the data plane's clients and their errors.

Reading the state topic, peeking, the console share consumer, the producer, the
Spark source and the dead-letter writer all build librdkafka clients. What they
share lives here once, so that it cannot drift between copies:

- :mod:`~kshare_cli.dataplane.logs`: librdkafka's log lines, silenced (stderr is
  one line per error) or shown with ``--debug``;
- :mod:`~kshare_cli.dataplane.errors`: one classification of librdkafka's errors,
  and the one mapping of client errors onto kshare's errors and exit codes;
- :mod:`~kshare_cli.dataplane.clients`: the factories (a plain reader that
  assigns partitions, a producer, a share consumer, a metadata client), each
  turning a refused configuration into one error.
- :mod:`~kshare_cli.dataplane.offsets`: watermark and end-offset reads, asked
  again through a leader that moved or a topic just created, within a deadline.

The configuration itself comes from ``ConnectionSettings.confluent_config()``
(``connect/``), the one mapping of the settings onto librdkafka's names.

Nothing here imports confluent_kafka at import time: the state tailer, which
the admin layer imports, and every command's ``--help`` must stay light.
"""
