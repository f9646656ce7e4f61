"""Mapping layer (pure): the stateless mapper from one core EventMsg to at most one app-server
notification, TurnItem -> ThreadItem conversion and the item builders. No I/O, no state."""
