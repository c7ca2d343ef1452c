"""Console share consumer and producer on confluent-kafka (the data plane)."""
