"""Server layer: wiring of transports, rpc and the domain; the initialize gate, connection
lifecycle and the request handlers grouped by namespace."""
