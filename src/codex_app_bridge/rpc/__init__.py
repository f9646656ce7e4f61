"""RPC layer: JSON-RPC message classification, request ids, dispatch, the single
exception -> JSON-RPC error boundary, outbound queues and server -> client requests."""
