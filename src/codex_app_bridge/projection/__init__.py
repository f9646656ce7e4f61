"""Projection layer (pure): ResponseItem -> TurnItem, user-turn boundaries, rollout user positions
and rollout truncation for rollback and fork. No I/O, no state."""
