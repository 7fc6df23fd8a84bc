"""Alembic revisions of the audit schema (a package only so that it is installed)."""
