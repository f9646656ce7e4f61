"""``codex_app_bridge.config``'s explicit surface: ``__all__`` is what the package exports."""

from __future__ import annotations

import codex_app_bridge.config as config


def test_the_config_package_exports_exactly_its_all() -> None:
    # ``@py_*``: pytest's assertion rewriting, applied to the package of the pytest11 plugin
    names = {name for name in vars(config) if not name.startswith(("_", "@"))}
    public = names - {"annotations"}
    assert public == set(config.__all__)
    assert len(config.__all__) == len(set(config.__all__))
