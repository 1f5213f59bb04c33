"""Layer A3 — running the chart: ``Agent`` and its builder, turns and conversations,
durable runs over a store, resume checks, streams and the queue. Built on ``agent._chart``;
never imported by it."""
