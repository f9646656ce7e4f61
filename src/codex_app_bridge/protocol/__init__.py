"""Protocol layer: wire models (v2, generated from the upstream JSON Schema), core-side models
(hand-written: EventMsg, ResponseItem, TurnItem, rollout lines), the JSON-RPC envelope and the
method table. No I/O and no domain logic lives here."""
