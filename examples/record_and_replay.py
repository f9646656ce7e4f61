"""Record one session of a client and replay it: python examples/record_and_replay.py COMMAND...

COMMAND is the server the official SDK (``pip install openai-codex==0.163.0``) starts instead of
``codex app-server``: the real one behind ``record`` the first time (a paid model run), the
bridge serving the recording every time after. The same client flow gets the same answer::

    python examples/record_and_replay.py \\
        codex-app-bridge record --out recording/ -- codex app-server
    python examples/record_and_replay.py \\
        codex-app-bridge serve --script recording/script.jsonl
"""

import sys

from openai_codex import Codex, CodexConfig

with Codex(CodexConfig(launch_args_override=tuple(sys.argv[1:]))) as codex:
    thread = codex.thread_start()
    print(thread.run("Say hello.").final_response)
