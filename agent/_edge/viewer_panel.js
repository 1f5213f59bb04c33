/* The agent's panel for `flowchart view` (agent.viewer_panel.PANEL). Law: it draws only the
   data agent.viewer_panel.build read from the trace, through the viewer's api (text, never
   markup), and opens the page on the run's story: the question, the answer, why, the model
   calls in order (sent / returned), the tools with their results, the human decisions, the
   ledger, the cost; the chart and timeline follow. */
"use strict";
(self.flowchartPanels = self.flowchartPanels || {}).agent = function (api, A) {
  const { el, section, valueView, textView, select, isObj, has } = api;
  const at = (n) => (n !== null && n !== undefined ? el("button", { type: "button", class: "link", onclick: () => select(n) }, ` #${n}`) : "");
  const history = Array.isArray(A.history) ? A.history : [];
  const hat = A.history_at || [];
  const toolCallsOf = (m) => (isObj(m) && Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObj) : []);
  const callText = (t) => [`${t.name}(`, valueView(t.args), ")"];

  function msgView(m, i) {
    if (!isObj(m)) return el("li", null, valueView(m));
    return el("li", { class: `msg role-${m.role}` }, el("b", null, m.role + (m.tool_name ? ` ${m.tool_name}` : "")), at(hat[i]),
      " ", textView(m.content), toolCallsOf(m).map((t) => el("div", { class: "toolcall" }, "→ ", callText(t))));
  }
  // a model reply no history message holds (the final answer), as its commit set it
  function answerView(call) {
    const calls = Array.isArray(call.tool_calls) ? call.tool_calls.filter(isObj) : [];
    return el("li", { class: "msg role-assistant answer" }, el("b", null, calls.length ? "assistant" : "answer"), at(call.commit),
      " ", typeof call.answer === "string" && call.answer !== "REDACTED" ? el("q", { class: "answer-text" }, call.answer) : textView(call.answer),
      calls.map((t) => el("div", { class: "toolcall" }, "→ ", callText(t))));
  }
  function checkInView(req, title) {
    const ev = isObj(req.evidence) ? req.evidence : {};
    return section(title, el("p", { class: "will-do" }, el("b", null, "will do: "), String(ev.will_do ?? "?")),
      el("p", null, el("b", null, "tool: "), String(req.tool), " ", valueView(req.args)),
      req.intent ? el("p", null, el("b", null, "intent: "), String(req.intent)) : "",
      Array.isArray(ev.drivers) ? el("ol", { class: "drivers" }, ev.drivers.map((d) => el("li", null, `${Number(d.score).toFixed(3)} · ${d.channel} · `, valueView(d.text)))) : "",
      isObj(ev.trail) ? el("p", { class: "muted" }, `trail: ${ev.trail.summary}`) : "",
      el("p", { class: "muted" }, `request ${req.id}`));
  }
  function ledgerView(rows, rowsAt) {
    return el("ol", { class: "ledger" }, rows.map((r, i) => {
      if (!isObj(r)) return el("li", null, valueView(r));
      const kind = r.outcome === "allow" && r.changed ? "rewrite" : String(r.outcome);
      return el("li", { class: `ledger-row ${kind}` }, el("span", { class: `badge ${kind}` }, kind), ` ${r.middleware} · ${r.phase || r.moment} · iteration ${r.iteration}`,
        at(rowsAt && rowsAt[i]), r.why ? el("div", null, `why: ${r.why}`) : "", r.reason ? el("div", null, `reason: ${r.reason}`) : "",
        r.question ? el("div", null, `asks: ${r.question}`) : "",
        has(r, "before") ? el("div", { class: "before-after" }, el("del", null, valueView(r.before)), " → ", el("ins", null, valueView(r.after))) : "");
    }));
  }
  // "issue_refund(…) — approved by alice at 2026-…": who decided is the first thing a reader looks for
  function humanView(d, n) {
    const verdict = d.gate === "ask_human" ? "answered" : d.approved === true ? "approved" : "declined";
    return el("p", { class: `human-decision ${verdict}` }, callText({ name: d.tool, args: d.args }),
      ` — ${verdict} by `, el("b", { class: "by" }, String(d.by ?? "a person")), d.at ? ` at ${d.at}` : "",
      has(d, "after") ? el("span", { class: "before-after" }, " · edited to ", el("ins", null, valueView(d.after))) : "",
      has(d, "answer") ? el("span", null, ": ", valueView(d.answer)) : "",
      d.note ? el("span", null, ` — note: ${d.note}`) : "", at(n));
  }
  function toolErrorsView(rows, rowsAt) {
    return el("ol", { class: "tool-errors" }, rows.map((r, i) => isObj(r)
      ? el("li", { class: "tool-error" }, el("b", null, `${r.tool_name} · ${r.error_type}`), ` (call ${r.tool_call_id}, iteration ${r.iteration})`,
        at(rowsAt && rowsAt[i]), el("div", null, valueView(r.message)),
        Array.isArray(r.traceback) ? el("pre", { class: "traceback" }, r.traceback.map(String).join("\n")) : "")
      : el("li", null, valueView(r))));
  }
  // every tool call the model asked for, with the result the history holds for it
  function toolsView() {
    const asked = new Map();
    history.forEach((m) => { for (const t of toolCallsOf(m)) asked.set(t.id, t); });
    const loaded = new Set(Array.isArray(A.loaded) ? A.loaded : []);  // an earlier turn's messages: not this run's tools
    const results = history.map((m, i) => [m, i]).filter(([m, i]) => isObj(m) && m.role === "tool" && !loaded.has(i));
    if (!results.length) return null;
    return section(`Tools (${results.length})`, el("ol", { class: "tools" }, results.map(([m, i]) => {
      const call = asked.get(m.tool_call_id);
      return el("li", { class: "tool-result" }, el("b", null, call ? callText(call) : String(m.tool_name ?? "tool")), at(hat[i]),
        el("div", { class: "result" }, "→ ", textView(m.content)));
    })));
  }
  function explanationView(X) {
    const sent = X.sent.map((m) => el("li", { class: `sent origin-${m.role}` }, el("b", null, m.origin), ": ", el("span", { class: "snippet" }, m.snippet),
      Array.isArray(m.details) ? m.details.map((d) => el("div", { class: "detail" }, d)) : ""));
    const call = X.call;
    return section(X.is_final ? "Why this answer" : `Why model call ${call.number} said this`, el("p", { class: "muted" }, `written by model call ${call.number} of ${X.calls}`,
      call.model ? ` (${call.model}${call.provider ? " via " + call.provider : ""})` : "", at(call.idx)),
      el("p", null, `It was sent ${X.sent.length} message(s):`), el("ol", { class: "explanation", start: 0 }, sent),
      X.decisions.length ? [el("p", null, "Decisions on the way:"), el("ul", { class: "explain-decisions" }, X.decisions.map((d) => el("li", null, d)))] : "",
      el("p", { class: "muted" }, "The same as `agent why` prints for this trace."));
  }

  const story = el("div", { class: "story" });
  const head = el("div", { class: "story-head" });
  if (A.mount) head.append(el("p", { class: "muted mounted" }, `The agent mounted at ${A.mount} (add_agent): its run is that stage's subflow — the links open it.`));
  head.append(section("The question", A.question === null || A.question === undefined ? el("p", { class: "muted" }, "no user message in the history") : el("p", { class: "question" }, textView(A.question))));
  const answer = A.answer;
  head.append(section(answer !== null && answer !== undefined ? "The answer" : "No final answer yet",
    answer === null || answer === undefined ? el("p", { class: "muted" }, A.check_in ? "the run is waiting for a person" : "the run has not answered")
      : el("p", { class: "answer" }, typeof answer === "string" && answer !== "REDACTED" ? el("q", null, answer) : textView(answer))));
  if (A.explanation) head.append(explanationView(A.explanation));
  story.append(head);
  const calls = Array.isArray(A.calls) ? A.calls : [];
  const first = el("div", { class: "story-col" });
  for (const note of A.notes) first.append(el("p", { class: "muted" }, note));
  if (A.calls) first.append(section(`Model calls (${calls.length})`, calls.map((call, k) => el("details", { class: "call", open: true },
    el("summary", null, `call ${k + 1}`, call.commit !== null ? ` · written at #${call.commit}` : " · before this run"),
    el("div", { class: "part" }, "sent"), call.earlier ? el("p", { class: "muted earlier" }, `${call.earlier} message(s) from earlier turns, then:`) : "",
    call.inputs.length ? el("ul", { class: "msgs sent" }, call.inputs.map((i) => msgView(history[i], i)))
      : el("p", { class: "muted nothing-new" }, "the conversation so far: nothing new since the previous call and its tool results"),
    el("div", { class: "part" }, "returned"), el("ul", { class: "msgs returned" }, call.message === null ? answerView(call) : msgView(history[call.message], call.message)),
    call.results.length ? [el("div", { class: "part" }, "tool results"), el("ul", { class: "msgs results" }, call.results.map((i) => msgView(history[i], i)))] : ""))));
  const second = el("div", { class: "story-col" });
  const tools = toolsView();
  if (tools) second.append(tools);
  if (A.tool_errors) second.append(section(`Tool errors (${A.tool_errors.length}) — the model read only the message`, toolErrorsView(A.tool_errors, A.tool_errors_at)));
  if (A.check_in) second.append(checkInView(A.check_in.request, "Check-in — waiting for a decision"));
  if (A.ask) second.append(section("Ask — waiting for an answer", el("p", { class: "question" }, String(A.ask.question ?? "?")),
    A.ask.middleware ? el("p", { class: "muted" }, `asked by ${A.ask.middleware}`) : ""));
  if (A.resumed) {
    const r = A.resumed, p = r.paused, d = r.decision;
    const title = p.kind === "ask_human" ? "Question answered" : p.kind === "ask" ? "Ask answered" : "Check-in answered";
    second.append(section(`${title} (this run resumed it)`,
      el("p", null, `${p.kind} on ${p.tool_name} `, valueView(p.args), ` · request ${p.request_id || "?"}`),
      isObj(d) ? humanView(d, r.decision_at) : el("p", { class: "muted" }, "no human decision recorded"),
      r.result ? el("p", { class: "decision" }, el("b", null, "result: "), textView(r.result.content)) : el("p", { class: "muted" }, "no tool result recorded")));
  }
  if (A.decisions) second.append(section(`Human decisions (${A.decisions.length})`,
    el("ol", { class: "human-decisions" }, A.decisions.map((d, i) => el("li", null, isObj(d) ? humanView(d, A.decisions_at[i]) : valueView(d))))));
  if (A.ledger) second.append(section(`Ledger (${A.ledger.length} rows)`, ledgerView(A.ledger, A.ledger_at)));
  // where the money went: the lines agent why --cost prints, each call linked to its commit
  if (isObj(A.cost) && Array.isArray(A.cost.lines)) second.append(section("Cost",
    el("ul", { class: "cost-lines" }, A.cost.lines.map((line) => el("li", null, String(line)))),
    Array.isArray(A.cost.calls) && A.cost.calls.length ? el("p", { class: "muted" }, "recorded at:",
      A.cost.calls.map((c) => [` call ${c.iteration}`, at(c.commit)])) : ""));
  // what the answering call was told besides its messages, and the handoffs: collapsed, each linked to its commit
  const told = A.explanation && Array.isArray(A.explanation.context) ? A.explanation.context : [];
  if (told.length) second.append(el("details", { class: "context" },
    el("summary", null, `Told in the system slot (${told.length})`, at(A.explanation.call.idx)),
    el("ol", { class: "context-items" }, told.map((c) => el("li", { class: `context-item kind-${c.kind}` }, el("b", null, c.label), ": ",
      el("span", { class: "snippet" }, c.snippet), Array.isArray(c.details) ? c.details.map((d) => el("div", { class: "detail" }, d)) : "")))));
  if (Array.isArray(A.handoffs) && A.handoffs.length) second.append(el("details", { class: "handoffs" },
    el("summary", null, `Handoffs (${A.handoffs.length})`),
    el("ol", { class: "handoff-rows" }, A.handoffs.map((h, i) => isObj(h)
      ? el("li", { class: "handoff" }, el("b", null, `to ${h.to}`), ` — reason: ${h.reason ?? "?"}`, at(A.handoffs_at && A.handoffs_at[i]),
        el("div", { class: "detail" }, `sent ${h.messages_sent} message(s)${h.messages_left_out ? `, ${h.messages_left_out} left out` : ""}; run ${h.run_id ?? "?"}`),
        el("div", { class: "result" }, "→ ", textView(h.answer)))
      : el("li", null, valueView(h))))));
  story.append(first, second, el("p", { class: "muted story-foot" }, "The chart and every commit follow below: click a link (#n) to open that commit."));
  api.story.append(story);
};
