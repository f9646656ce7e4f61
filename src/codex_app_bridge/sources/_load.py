"""``load_script``: the source ``--script FILE`` plays, a script or a Codex rollout.

Role: opens a file as ``_script.ScriptSource`` or ``_rollout.RolloutSource`` after its first
line. It sits above both modules (the rollout source builds on the script module), so that
neither needs the other's source type.
"""

from __future__ import annotations

from pathlib import Path

from codex_app_bridge._scriptfile import is_rollout_head, read_head
from codex_app_bridge.sources._rollout import RolloutSource, index_rollout
from codex_app_bridge.sources._script import ScriptSource, index_script

__all__ = ["load_script"]


def load_script(path: str | Path, *, lazy: bool = False) -> ScriptSource | RolloutSource:
    """A source over a script file, or over a Codex rollout (``RolloutSource``) when its first
    line is a rollout line; ``ScriptError`` names the problem and the line.

    ``lazy``: only check that the file can be read now (and read its first line); index it on
    the first turn instead.
    """
    script = Path(path)
    # a head that is not JSON is reported with its line number by the index pass
    if is_rollout_head(read_head(script)):
        return RolloutSource(script, index=None if lazy else index_rollout(script))
    if lazy:
        return ScriptSource(script_path=script, name=str(script))
    index = index_script(script)
    return ScriptSource(index=index, name=str(script))
