"""Sensors on Delta tables; they read the Delta log with delta-rs, never with a JVM."""
