"""The inputs of the config fixtures (``record_fixtures``): config files and request sequences.

The real 0.163.0 binary's answers to them are in ``tests/data/config``; the tests feed the same
inputs to the bridge.
"""

from __future__ import annotations

from typing import Any, Final

SYNTAX_CASES: Final[dict[str, str]] = {
    "key_without_value": 'model = "a"\nwire_api\n',
    "unterminated_basic_string": 'model = "a\n',
    "duplicate_key": 'model = "a"\nmodel = "b"\n',
    "duplicate_table": "[a]\nx=1\n[a]\ny=2\n",
    "missing_value": "model = \n",
    "bare_word": "model = abc\n",
    "unclosed_table": "[a\n",
    "unclosed_array": "x = [1, 2\n",
    "unclosed_inline_table": "x = {a = 1\n",
    "two_values": "x = 1 2\n",
    "empty_key": 'model = "a" # ok\n= 3\n',
    "bad_month": "x = 1979-13-01\n",
    "bad_escape": 'x = "\\q"\n',
    "prefix_without_digits": "x = 0x\n",
    "dotted_then_plain": "a.b = 1\na = 2\n",
    "unclosed_array_table": 'model = "ok"\n\n\n   [[x]\n',
    "trailing_underscore": "x = 1_\n",
    "unterminated_multiline": 'x = """abc\n',
    "unterminated_literal": "x = 'abc\n",
}

SEMANTIC_CASES: Final[dict[str, str]] = {
    "wrong_type": "model = 5\n",
    "summary_variant": 'model_reasoning_summary = "verbose"\n',
    "sandbox_variant": 'sandbox_mode = "open"\n',
    "unknown_provider": 'model_provider = "nope"\n',
    "chat_wire_api": (
        'model_provider = "m"\n[model_providers.m]\nname = "m"\nbase_url = "http://x"\n'
        'wire_api = "chat"\n'
    ),
    "legacy_profile": 'profile = "p1"\n[profiles.p1]\nmodel = "x"\n',
    "unknown_keys": "foo = 1\nbar = 2\n[baz]\nq = 1\n",
    "open_effort": 'model_reasoning_effort = "bogus"\n',
    "verbosity_variant": 'model_verbosity = "verbose"\n',
    "approval_variant": 'approval_policy = "sometimes"\n',
    "provider_without_url": '[model_providers.m]\nname = "m"\n',
    "provider_without_name": '[model_providers.m]\nbase_url = "http://x"\n',
    "provider_field_type": (
        '[model_providers.m]\nname = "m"\nbase_url = "http://x"\nrequest_max_retries = "x"\n'
    ),
    "provider_unknown_field": '[model_providers.m]\nname = "m"\nbase_url = "http://x"\nfoo = 1\n',
    "negative_window": "model_context_window = -5\n",
    "provider_id_type": "model_provider = 3\n",
    "reserved_provider": '[model_providers.openai]\nname = "mine"\nbase_url = "http://x"\n',
    "two_errors": 'model = "a"\nmodel_reasoning_summary = "verbose"\nsandbox_mode = "open"\n',
    "providers_type": "model_providers = 5\n",
    "granular_missing_field": ("approval_policy = { granular = { sandbox_approval = true } }\n"),
    "fast_tier": 'service_tier = "fast"\n',
    "unknown_provider_and_key": 'model_provider = "nope"\nfoo = 1\n',
    "unknown_feature": "[features]\nmemories = true\nfoo_feature = true\n",
    "capabilities": (
        'model_provider = "m"\n[model_providers.m]\nname = "m"\nbase_url = "http://x"\n'
        "[model_providers.m.capabilities]\nimage_generation = false\n"
    ),
    "mock_provider": (
        'model = "mock-model"\nmodel_provider = "mock"\napproval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\nmodel_reasoning_summary = "detailed"\n\n'
        '[model_providers.mock]\nname = "mock"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'wire_api = "responses"\nrequires_openai_auth = false\nsupports_websockets = false\n'
        "request_max_retries = 2\nstream_max_retries = 1\nstream_idle_timeout_ms = 60000\n\n"
        "[analytics]\nenabled = false\n"
    ),
}


def _write(key_path: str, value: Any, strategy: str = "replace", **extra: Any) -> tuple[str, Any]:
    return "config/value/write", {
        "keyPath": key_path,
        "value": value,
        "mergeStrategy": strategy,
        **extra,
    }


def _batch(*edits: tuple[str, Any, str]) -> tuple[str, Any]:
    return "config/batchWrite", {
        "edits": [{"keyPath": k, "value": v, "mergeStrategy": m} for k, v, m in edits]
    }


WRITE_SEQUENCES: Final[dict[str, tuple[str, list[tuple[str, Any]]]]] = {
    "comments_and_tables": (
        '# top comment\nmodel = "m1"   # inline comment\n\n# providers\n'
        '[model_providers.mock]\nname = "mock"  # the name\nbase_url = "http://x/v1"\n\n'
        "[tui]\nanimations = false\n",
        [
            _write("model", "m2"),
            _write("model_reasoning_effort", "high"),
            _write("model_providers.mock.request_max_retries", 3),
            _write(
                "model_providers.mock",
                {"stream_max_retries": 2, "http_headers": {"a": "b"}},
                "upsert",
            ),
            _write("model_providers.new", {"name": "n", "base_url": "http://n"}),
            _write("tui", {"x": 1}),
            _write("model", None),
            _write("sandbox_mode", "nonsense"),
            _write("", "x"),
            _write("model", 5),
            _write("unknown_key", 5),
            _write("model", "m3", expectedVersion="sha256:0000"),
            _write("model", "m3", filePath="/tmp/other.toml"),
            _write("model_provider", "nope"),
            _write("analytics.enabled", True, "upsert"),
            _batch(("model", "b1", "replace"), ("sandbox_mode", "bad", "replace")),
            _batch(("model", "b1", "replace"), ("model_verbosity", "low", "replace")),
            _batch(),
            ("config/read", {"includeLayers": True}),
            ("thread/start", {}),
        ],
    ),
    "inline_dotted_and_values": (
        "inl = { b = 1 }\nd.b = 1\n[x.y]\nz = 1\n",
        [
            _write("inl.c", 2),
            _write("d.c", 2),
            _write("x.w", 2),
            _write("arr", [1, "a", {"k": 1}]),
            _write("aot", [{"k": 1}, {"k": 2}]),
            _write("s1", 'a"b'),
            _write("s2", "line\nbreak"),
            _write("s3", "ünï\u0001\\x"),
            _write("s4", 'it\'s "q"'),
            _write("f", 1.5),
            _write("fi", 2.0),
            _write("b", True),
            _write("projects./tmp/x.trust_level", "trusted"),
            _write("nothere", None),
            _write("nothere.deep", None),
            _write("b.c", 1),
            _write("b", {"c": 1}, "upsert"),
            _write("x", 5, "upsert"),
            _write("model_providers.openai", {"name": "x"}),
            _write('q."a.b"', 1),
            _write("a..b", 1),
            _write("profile", "p"),
            _write("profiles.p.model", "p"),
            _write("x2", {"a": None}),
            ("config/read", {}),
        ],
    ),
    "no_file_yet": (
        "",
        [
            ("config/read", {"includeLayers": True}),
            _write("model", "first"),
            _write("model_providers.m", {"name": "m", "base_url": "http://m"}),
            ("config/read", {"includeLayers": True}),
        ],
    ),
}

MODEL_LIST_REQUESTS: Final[list[tuple[str, Any]]] = [
    ("model/list", {"includeHidden": True}),
    ("model/list", {"includeHidden": False}),
    ("model/list", {}),
    ("model/list", {"limit": 2}),
    ("model/list", {"limit": 2, "cursor": "2"}),
    ("model/list", {"cursor": "bogus"}),
    ("model/list", {"cursor": "8"}),
    ("model/list", {"cursor": "9"}),
    ("model/list", {"limit": 0}),
    ("model/list", {"cursor": "-1"}),
    ("model/list", {"cursor": "7", "limit": 5}),
    ("model/list", {"cursor": "", "limit": 1}),
    ("model/list", {"cursor": "10", "includeHidden": True}),
    ("model/list", {"cursor": "12", "includeHidden": True}),
    ("model/list", {"cursor": " 1"}),
    ("model/list", {"cursor": "+1"}),
    ("model/list", {"cursor": "01", "limit": 1}),
    ("model/list", None),
]

ACCOUNT_REQUESTS: Final[list[tuple[str, Any]]] = [
    ("account/read", {}),
    ("account/rateLimits/read", None),
    ("account/usage/read", None),
    ("account/login/start", {"type": "apiKey", "apiKey": "sk-test-123"}),
    ("account/read", {}),
    ("account/read", {"refreshToken": True}),
    ("account/rateLimits/read", None),
    ("account/usage/read", None),
    ("modelProvider/capabilities/read", {}),
    ("account/logout", None),
    ("account/read", {}),
    ("account/logout", {}),
    ("account/logout", {"x": 1}),
    ("account/login/start", {"type": "apiKey", "apiKey": ""}),
    ("account/login/start", {"type": "apiKey"}),
    ("account/login/start", {}),
    ("account/login/start", {"type": "bogus"}),
    ("account/usage/read", {"threadId": "x"}),
]
