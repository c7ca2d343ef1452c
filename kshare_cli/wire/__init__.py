"""Kafka protocol on kio message types: frames, headers, record batches, the async client."""
