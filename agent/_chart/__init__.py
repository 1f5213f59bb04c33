"""Layer A2 — the agent's chart: its state keys, config, stages (seed, call-llm, route, tool
calls, wrap-up, final), the tool-call gates, pauses and the events the stages emit. A stage
never imports turn orchestration (``agent._run``): the chart runs the same under any runner."""
