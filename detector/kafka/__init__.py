"""Kafka plumbing shared by the service and the pager (neither imports the other)."""
