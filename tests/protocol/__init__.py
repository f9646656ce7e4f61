"""Tests of the protocol layer: wire models, core models, JSON-RPC envelope."""
