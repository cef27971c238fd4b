"""Chaos runs: bank transfers on Delta under concurrent writers, maintenance, a schema change and faults."""
