"""ShareGroupAdmin: typed share-group operations that return frozen domain models."""
