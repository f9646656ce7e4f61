"""A client test against the bridge, as the README shows it: a three-turn scenario (a reply, an
approval, a failure) and assertions on what the client saw. Run it with
``pytest examples/test_with_codex_app_bridge.py`` (the plugin comes with the package)."""

import pytest

SCENARIO = """
{"match": "hello", "reply": "Hello! I am a scripted Codex."}
{"match": "deploy", "approval": "make deploy", "output": "deployed\\n", "reply": "Deployed."}
{"match": "crash", "fail": "the model is overloaded"}
"""


@pytest.mark.anyio
@pytest.mark.codex_scenario(SCENARIO)
async def test_three_turns(codex_client):
    thread = await codex_client.start_thread()

    hello = await codex_client.run_turn(thread, "hello")
    hello.assert_completed("Hello! I am a scripted Codex.")

    deploy = await codex_client.run_turn(thread, "please deploy")
    deploy.assert_approval_requested("make deploy")
    deploy.assert_completed("Deployed.")
    assert deploy.items[1]["aggregatedOutput"] == "deployed\n"

    declined = await codex_client.run_turn(thread, "deploy again", answer="decline")
    assert declined.items[1]["status"] == "declined"

    crash = await codex_client.run_turn(thread, "crash")
    crash.assert_failed("the model is overloaded")


@pytest.mark.anyio
@pytest.mark.codex_scenario(SCENARIO)
async def test_the_same_over_a_real_pipe(codex_process_client):
    thread = await codex_process_client.start_thread()
    turn = await codex_process_client.run_turn(thread, "hello")
    turn.assert_completed("Hello! I am a scripted Codex.")
