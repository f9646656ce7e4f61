"""Event sources: where EventMsg streams come from (the built-in agent, scripts, rollouts,
producer processes, test-harness injection)."""
