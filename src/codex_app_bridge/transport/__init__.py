"""Transport layer: bytes <-> messages. Each transport is an async context manager yielding a pair
of anyio memory object streams; it frames and encodes, nothing more."""
