"""A KIP-932 share-group broker emulator for tests and demos. It is not Apache Kafka.

Nothing in kshare imports this package except the ``kshare sandbox`` command and the tests.
"""
