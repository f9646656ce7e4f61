"""Listener layer: the per-thread reducer (pure: state, event -> state, notifications) and the
per-thread subscriptions and fan-out. The only place that holds thread state."""
