"""kshare: the operator toolkit for Apache Kafka share groups (KIP-932)."""

__version__ = "0.1.0"
