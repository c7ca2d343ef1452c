"""PySpark data sources and audit jobs."""
