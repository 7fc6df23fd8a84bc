"""The SQL audit store: the pipeline's record of truth (``connectors.audit.store``)."""
