"""Many bridge servers sharing threads through NATS JetStream (``serve --cluster URL``).

The adapter to an existing engine: a thread's core events are its log (a JetStream stream,
file storage), its metadata a KV bucket, its submissions from other nodes a request/reply
subject to the node that plays its turns. The server knows none of it: a ``ClusterNode`` is its
``SharedThreads`` hook (``server._shared``) and wraps its source (``ClusterSource``: followed
threads read the log). Importing this package does not import ``nats``; joining does.

* ``ClusterOptions``: the NATS URL(s), credentials and TLS (``_options``).
* ``ClusterNode``: joins the cluster (an async context manager), publishes owned threads' events,
  serves their control subject, loads and follows the others' (``_node``).
"""

from codex_app_bridge.cluster._node import ClusterNode
from codex_app_bridge.cluster._options import ClusterOptions

__all__ = ["ClusterNode", "ClusterOptions"]
