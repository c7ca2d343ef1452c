"""Kafka's own knowledge, written down once: API keys, share-partition states, group configs.

The lowest layer: the product layers and the sandbox broker both import it, and
it imports only kio and the standard library. What Kafka defines (an API key,
a delivery state's wire id, a group config's bounds) lives here so the client
and the emulator cannot drift apart. Submodules are imported one by one, never
from this package: ``share_states`` stays free of kio, so the state codec and
the Spark jobs can use it without paying for kio.
"""
