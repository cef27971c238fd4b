"""Hooks: submit the bundled Delta job through Spark."""
