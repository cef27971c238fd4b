"""Triggers that run in the triggerer; they read Delta logs with delta-rs, never with a JVM."""
