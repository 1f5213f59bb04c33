/* flowchart view — the page's only script. Law: data is JSON.parse'd from the payload
   element and reaches the page through textContent / setAttribute only, never as markup.
   The state at step n is the fold of commits 0..n over the initial state (the
   flowchart.commits.replay law), cached every SNAP commits; only visible timeline rows exist. */
"use strict";
(function () {
  const P = JSON.parse(document.getElementById("payload").textContent);
  const ROW = 26, OVERSCAN = 12, SNAP = 256, INLINE = 100, TEXT_INLINE = 400, LAZY = 4000;
  const commits = P.commits, N = commits.length, lines = P.narrative;
  const $ = (id) => document.getElementById(id);
  const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }
  const section = (title, ...kids) => el("section", { class: "card" }, el("h3", null, title), ...kids);

  // -- replay (copy-on-write, like flowchart.commits.apply_op) ---------------------------------
  function put(o, k, v) { Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true }); }
  function copy(o) { const out = {}; for (const k of Object.keys(o)) put(out, k, o[k]); return out; }
  function mergeValue(base, patch) {
    if (!(isObj(base) && isObj(patch))) return patch;
    const out = copy(base);
    for (const k of Object.keys(patch)) put(out, k, has(base, k) ? mergeValue(base[k], patch[k]) : patch[k]);
    return out;
  }
  function applyOp(state, path, verb, value) {
    const key = path[0];
    if (path.length === 1) {
      if (verb === "set") put(state, key, value);
      else if (verb === "append") put(state, key, has(state, key) && Array.isArray(state[key]) ? state[key].concat(value) : [...value]);
      else if (verb === "merge") put(state, key, has(state, key) ? mergeValue(state[key], value) : value);
      else if (verb === "delete") delete state[key];
      else unknownVerbs.add(verb);
      return;
    }
    const child = has(state, key) && isObj(state[key]) ? copy(state[key]) : {};
    put(state, key, child);
    applyOp(child, path.slice(1), verb, value);
  }
  const unknownVerbs = new Set();
  function applyCommit(state, ops) { const s = copy(state); for (const op of ops) applyOp(s, op[0], op[1], op[2]); return s; }
  const snaps = new Map([[-1, copy(P.initial)]]);
  let lastAt = { n: -1, state: snaps.get(-1) };
  function stateAt(n) {
    let k = Math.floor((n + 1) / SNAP) * SNAP - 1;
    while (!snaps.has(k)) k -= SNAP;
    let from = k, state = snaps.get(k);
    if (lastAt.n > from && lastAt.n <= n) { from = lastAt.n; state = lastAt.state; }
    for (let i = from + 1; i <= n; i++) {
      state = applyCommit(state, commits[i][3]);
      if ((i + 1) % SNAP === 0) snaps.set(i, state);
    }
    lastAt = { n, state };
    return state;
  }
  function canon(v) {
    if (Array.isArray(v)) return "[" + v.map(canon).join(",") + "]";
    if (isObj(v)) return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canon(v[k])).join(",") + "}";
    return JSON.stringify(v);
  }

  // -- values: redacted stays redacted, large values fold --------------------------------------
  function preview(v, flat) {
    if (Array.isArray(v)) return `[${v.length} items] ${flat.slice(0, 60)}…`;
    if (isObj(v)) return `{${Object.keys(v).length} keys} ${flat.slice(0, 60)}…`;
    if (typeof v === "string") return `${JSON.stringify(v.slice(0, 70))}… (${v.length} chars)`;
    return flat.slice(0, 80) + "…";
  }
  function valueView(v) {
    if (v === "REDACTED") return el("span", { class: "redacted", title: "hidden by the run's redaction" }, "REDACTED");
    const flat = JSON.stringify(v);
    if (flat === undefined) return el("code", { class: "v" }, "undefined");
    if (flat.length <= INLINE) return el("code", { class: "v" }, flat);
    const d = el("details", { class: "fold" }, el("summary", null, preview(v, flat)));
    const fill = () => {
      if (d.dataset.filled) return;
      d.dataset.filled = "1";
      d.append(el("pre", { class: "v" }, typeof v === "string" ? v : JSON.stringify(v, null, 2)));
    };
    if (flat.length <= LAZY) fill(); else d.addEventListener("toggle", fill);
    return d;
  }
  // a message's text (a tool's output, a reply) as the characters it holds, not as a JSON string literal
  function textView(v) {
    if (typeof v !== "string" || v === "REDACTED") return valueView(v);
    if (v.length <= TEXT_INLINE) return el("span", { class: "text" }, v);
    return el("details", { class: "fold" }, el("summary", null, `${v.slice(0, 120)}… (${v.length} chars)`), el("pre", { class: "text" }, v));
  }
  const pathText = (path) => path.join("/");

  // -- header ----------------------------------------------------------------------------------
  const M = P.meta;
  $("title").textContent = M.title || M.name || "run";
  $("status").textContent = M.failed ? "failed" : M.paused ? "paused" : "finished";
  $("meta").textContent = `run ${M.run_id.slice(0, 12)} · ${N} commits · pyfootprint ${M.library_version}` +
    (M.redacted_paths.length ? ` · redacted: ${M.redacted_paths.join(", ")}` : "");
  $("count").textContent = `(${N} commits — click a row or use ← →)`;

  // -- chart -----------------------------------------------------------------------------------
  const svgNodes = new Map();
  for (const g of document.querySelectorAll("#chart-pane g.node")) svgNodes.set(g.getAttribute("data-stage-id"), g);
  const svg = document.querySelector("#chart-pane svg"), zoom = $("zoom");
  let natural = false;
  function fitChart() {
    if (!svg) return;
    const w = Number(svg.getAttribute("width")), h = Number(svg.getAttribute("height")), pane = $("chart-pane");
    const s = natural ? 1 : Math.min(1, (pane.clientWidth - 12) / w, (pane.clientHeight - 34) / h);
    svg.style.width = `${w * s}px`; svg.style.height = `${h * s}px`;
    zoom.textContent = natural ? "fit" : "1:1";
  }
  zoom.addEventListener("click", () => { natural = !natural; fitChart(); });
  window.addEventListener("resize", fitChart);
  const byStage = new Map();
  commits.forEach((c, i) => { if (!byStage.has(c[2])) byStage.set(c[2], []); byStage.get(c[2]).push(i); });
  for (const [sid, g] of svgNodes) {
    g.addEventListener("click", () => {
      const hits = byStage.get(sid);
      if (hits) select(hits.find((i) => i > cur) ?? hits[0]);
    });
  }

  // -- timeline (virtualised) -------------------------------------------------------------------
  const tl = $("timeline"), spacer = $("timeline-spacer"), rendered = new Map();
  spacer.style.height = `${N * ROW}px`;
  let cur = -1, whyKey = "", whySet = new Set(), whyRoot = -1;
  function opsText(ops) { return ops.map((o) => (o[1] === "delete" ? "del " : o[1] + " ") + pathText(o[0])).join(" · "); }
  function headline(i) {
    if (P.decisions[i] !== null && P.decisions[i] !== undefined) return lines[P.decisions[i]];
    const span = P.spans[i];
    if (!span) return "";
    for (let j = span[0]; j < span[1]; j++) if (/^(Stage \d+:|Entering )/.test(lines[j])) return lines[j];
    return lines[span[0]] || "";
  }
  function rowClass(i) {
    return "row" + (i === cur ? " sel" : "") + (whySet.has(i) ? " why" : "") + (i === whyRoot ? " why-root" : "") +
      (P.decisions[i] !== null && P.decisions[i] !== undefined ? " decision" : "");
  }
  function makeRow(i) {
    const c = commits[i];
    const r = el("div", { class: rowClass(i), "data-idx": i, role: "option" },
      el("span", { class: "idx" }, `#${i}`), el("span", { class: "rid" }, c[0]), el("span", { class: "stage" }, c[1]),
      el("span", { class: "narr" }, headline(i)), el("span", { class: "ops" }, opsText(c[3]) || "—"));
    r.style.top = `${i * ROW}px`;
    return r;
  }
  // column widths that fit the longest text of the whole log (measured once), so no cell is cut
  function fitColumns() {
    const longest = (texts) => texts.map((t, i) => [t.length, i]).sort((a, b) => b[0] - a[0]).slice(0, 8).map((p) => texts[p[1]]);
    const columns = { rid: commits.map((c) => String(c[0])), stage: commits.map((c) => String(c[1])), narr: commits.map((c, i) => headline(i)), ops: commits.map((c) => opsText(c[3]) || "—") };
    const probe = el("div", { class: "row", style: "visibility:hidden;top:0;display:block;width:max-content" });
    spacer.append(probe);
    for (const [name, texts] of Object.entries(columns)) {
      let widest = 0;
      for (const t of longest(texts)) {
        const cell = el("span", { class: name }, t);
        probe.replaceChildren(cell);
        widest = Math.max(widest, Math.ceil(cell.getBoundingClientRect().width));
      }
      tl.style.setProperty(`--w-${name}`, `${widest + 2}px`);
    }
    probe.remove();
  }
  function renderRows() {
    const top = tl.scrollTop, h = tl.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN), last = Math.min(N - 1, Math.ceil((top + h) / ROW) + OVERSCAN);
    for (const [i, r] of rendered) if (i < first || i > last) { r.remove(); rendered.delete(i); }
    for (let i = first; i <= last; i++) if (!rendered.has(i)) { const r = makeRow(i); rendered.set(i, r); spacer.append(r); }
  }
  function restyleRows() { for (const [i, r] of rendered) r.className = rowClass(i); }
  tl.addEventListener("scroll", renderRows, { passive: true });
  tl.addEventListener("click", (e) => { const r = e.target.closest(".row"); if (r) select(Number(r.dataset.idx)); });
  function reveal(i) {
    const top = i * ROW;
    if (top < tl.scrollTop || top + ROW > tl.scrollTop + tl.clientHeight) tl.scrollTop = Math.max(0, top - tl.clientHeight / 3);
    renderRows();
  }

  // -- the selected step ------------------------------------------------------------------------
  function decisionView(i) {
    const line = lines[P.decisions[i]];
    const box = section("Decision", el("p", { class: "condition" }, line));
    const m = /^\[Condition\]: It (?:evaluated Rule (\d+)|examined)( "([^"]*)")?: (.*), and chose (.*)\.$/.exec(line);
    const d = /fell back to default(?: "([^"]*)")?: (.*)\.$/.exec(line);
    if (m) {
      box.append(el("p", { class: "matched" }, "Matched rule: ", el("b", null, m[1] !== undefined ? `Rule ${m[1]}` : "function rule"),
        m[3] ? ` “${m[3]}”` : "", " → chose ", el("b", null, m[5])));
      const conds = m[4].match(/[^,]+? [✓✗]/g) || m[4].split(", ");
      box.append(el("ul", { class: "conds" }, conds.map((t) => el("li", { class: t.trim().endsWith("✗") ? "fail" : "pass" }, t.trim()))));
    } else if (d) {
      box.append(el("p", { class: "matched" }, "No rule matched: default ", d[1] ? `“${d[1]}” ` : "", "→ chose ", el("b", null, d[2])));
    }
    if (i + 1 < N) box.append(el("p", { class: "muted" }, `next stage: ${commits[i + 1][1]} (${commits[i + 1][2]})`));
    return box;
  }
  // what a decider or selector returned, as recorded on its commit (no narrative needed)
  function choiceView(i) {
    const rec = P.choices[i], ev = rec.evidence || {};
    // the branch's stage name, when the next commit is that branch
    const next = i + 1 < N ? commits[i + 1] : null;
    const named = (id) => (next && String(next[2]).split("/").pop() === String(id) ? next[1] : String(id));
    const hit = (ev.rules || []).find((r) => r.matched);
    const picked = rec.chosen !== undefined
      ? [hit ? ["Matched rule: ", el("b", null, `Rule ${hit.rule_index}`), hit.label ? ` “${hit.label}”` : "", " → "] : "",
         "chose ", el("b", null, named(rec.chosen))]
      : ["selected ", el("b", null, (rec.selected || []).join(", ") || "nothing")];
    const box = section("Decision", el("p", { class: "matched" }, ...picked));
    if (ev.rules) box.append(el("ol", { class: "rules", start: 0 }, ev.rules.map((r) =>
      el("li", { class: r.matched ? "pass" : "fail" },
        `${r.label ? `“${r.label}” ` : ""}→ ${r.branch} ${r.matched ? "✓" : "✗"}`,
        r.conditions ? el("ul", { class: "conds" }, r.conditions.map((c) => el("li", { class: c.result ? "pass" : "fail" },
          `${c.key} ${c.actual_summary} ${c.op} ${JSON.stringify(c.threshold)} ${c.result ? "✓" : "✗"}`))) : null,
        r.inputs ? el("ul", { class: "conds" }, r.inputs.map((x) => el("li", null, `${x.key}=${x.value_summary}`))) : null,
        r.match_error ? el("p", { class: "muted" }, `rule error: ${r.match_error}`) : null))));
    if (ev.default !== undefined && !(ev.rules || []).some((r) => r.matched))
      box.append(el("p", { class: "muted" }, `no rule matched: default ${ev.default_label ? `“${ev.default_label}” ` : ""}→ ${ev.default}`));
    if (i + 1 < N) box.append(el("p", { class: "muted" }, `next stage: ${commits[i + 1][1]} (${commits[i + 1][2]})`));
    return box;
  }
  function diffView(i) {
    const before = i > 0 ? stateAt(i - 1) : snaps.get(-1), after = stateAt(i);
    const keys = [...new Set(commits[i][3].map((o) => o[0][0]))];
    const rows = [];
    for (const k of keys) {
      const a = has(before, k), b = has(after, k);
      if (a && b && canon(before[k]) === canon(after[k])) continue;
      if (!a && b) rows.push(el("li", { class: "added" }, el("b", null, `+ ${k} `), valueView(after[k])));
      else if (a && !b) rows.push(el("li", { class: "removed" }, el("b", null, `− ${k} `), valueView(before[k])));
      else if (a && b) rows.push(el("li", { class: "changed" }, el("b", null, `~ ${k} `), valueView(before[k]), " → ", valueView(after[k])));
    }
    return section(i > 0 ? `Diff from #${i - 1}` : "Diff from the initial state",
      rows.length ? el("ul", { class: "diff" }, rows) : el("p", { class: "muted" }, "(no change)"));
  }
  function stateView(state) {
    const keys = Object.keys(state);
    const list = el("dl", { class: "state" }, keys.map((k) => [el("dt", null, k), el("dd", null, valueView(state[k]))]));
    const raw = el("pre", { class: "raw", hidden: true });
    const toggle = el("button", { type: "button", class: "as-json", onclick: () => {
      if (raw.hidden && !raw.textContent) raw.textContent = JSON.stringify(state, null, 2);
      raw.hidden = !raw.hidden; list.hidden = !raw.hidden;
    } }, "as JSON");
    return section(`State after #${cur} (${keys.length} keys)`, toggle, list, raw);
  }
  function subflowView(rid) {
    const sub = P.subflows[rid];
    return section(`Inside subflow ${rid} (${sub.commits.length} commits)`, el("ol", { class: "inner", start: 0 },
      sub.commits.map((c) => el("li", null, el("b", null, c[1]), ` ${c[0]} `,
        el("span", { class: "ops" }, c[3].map((o) => (o.verb === "delete" ? "del " : o.verb + " ") + pathText(o.path)).join(" · ") || "—")))));
  }
  function renderStep(i) {
    const pane = $("step-pane");
    pane.replaceChildren();
    if (N === 0) { pane.append(section("Empty log", el("p", null, "This run committed nothing.")), stateView(snaps.get(-1))); return; }
    const c = commits[i];
    pane.append(el("h2", { id: "step-title" }, `#${i} · ${c[1]}`, el("small", null, ` ${c[0]} · ${c[2]} · ${P.kinds[c[2]] || "stage"}`)));
    const span = P.spans[i];
    pane.append(section("Narrative", span ? el("div", { class: "narrative" }, lines.slice(span[0], span[1]).map((t) =>
      el("div", { class: /^\[(Condition|Selected)\]/.test(t) ? "line cond" : "line" }, t))) : el("p", { class: "muted" }, "(no narrative for this step)")));
    if (P.choices[i]) pane.append(choiceView(i));
    else if (P.decisions[i] !== null && P.decisions[i] !== undefined) pane.append(decisionView(i));
    else if (["decider", "selector"].includes(P.kinds[c[2]])) pane.append(section("Decision", el("p", { class: "muted" }, "The trace has no narrative line for this decision.")));
    pane.append(section("Ops", c[3].length ? el("ul", { class: "opslist" }, c[3].map((o) =>
      el("li", null, el("b", null, `${o[1]} ${pathText(o[0])}`), o[1] === "delete" ? "" : [o[1] === "append" ? " += " : " = ", valueView(o[2])]))) : el("p", { class: "muted" }, "(no writes)")));
    pane.append(diffView(i));
    pane.append(section("Reads", c[4].length ? el("div", { class: "chips" }, c[4].map((k) =>
      el("button", { type: "button", class: "chip", title: `why ${k}?`, onclick: () => pickWhy(k) }, k))) : el("p", { class: "muted" }, "(no reads)")));
    if (c[5].length) pane.append(section("Redacted in this commit", el("p", null, c[5].join(", "))));
    if (P.subflows[c[0]]) pane.append(subflowView(c[0]));
    pane.append(stateView(stateAt(i)));
  }
  let currentNode = null;
  function select(i) {
    if (N === 0) return;
    i = Math.max(0, Math.min(N - 1, i));
    cur = i;
    restyleRows(); reveal(i); renderStep(i);
    if (currentNode) currentNode.classList.remove("current");
    currentNode = svgNodes.get(commits[i][2]) || null;
    if (currentNode) currentNode.classList.add("current");
    try { history.replaceState(null, "", `#${i}`); } catch (e) { /* file:// may refuse; harmless */ }
  }
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLSelectElement || e.target instanceof HTMLInputElement) return;
    const step = { ArrowLeft: -1, ArrowUp: -1, ArrowRight: 1, ArrowDown: 1, PageUp: -20, PageDown: 20 }[e.key];
    if (step !== undefined) { e.preventDefault(); select(cur + step); }
    else if (e.key === "Home") { e.preventDefault(); select(0); }
    else if (e.key === "End") { e.preventDefault(); select(N - 1); }
  });

  // -- why -------------------------------------------------------------------------------------
  const picker = $("why-key");
  for (const k of Object.keys(P.why)) picker.append(el("option", { value: k }, k));
  picker.addEventListener("change", () => pickWhy(picker.value));
  function pickWhy(key) {
    const panel = $("why-panel"), chain = P.why[key];
    whyKey = chain ? key : ""; picker.value = whyKey;
    whySet = new Set(chain ? chain.nodes.map((n) => n[0]) : []);
    whyRoot = chain && chain.nodes.length ? chain.nodes[0][0] : -1;
    panel.hidden = !whyKey;
    panel.replaceChildren();
    if (!chain) { restyleRows(); return; }
    const body = chain.nodes.length
      ? [el("ol", { class: "chain" }, chain.nodes.map((n) => el("li", { style: `margin-left:${n[3] * 12}px` },
          el("button", { type: "button", class: "link", onclick: () => select(n[0]) }, `#${n[0]} ${n[2]}`),
          ` ${n[1]}`, n[4] ? ` — via ${n[4]}` : " — wrote it last"))), el("pre", { class: "chain-text" }, chain.text)]
      : [el("p", { class: "muted" }, `never written (${chain.missing}): it comes from the initial state`)];
    panel.append(section(`why ${key}? (at the end of the run)`, ...body));
    if (whyRoot >= 0) select(whyRoot); else restyleRows();
  }
  if (M.why_keys_cut) picker.title = "only the 200 most recently written keys are listed";

  $("run-panel").append(section("Run", el("p", null, el("b", null, "input "), valueView(P.run_input)),
    el("p", { class: "muted" }, `chart ${M.fingerprint.slice(0, 16)}… · initial state: ${Object.keys(P.initial).length} keys`),
    el("p", { class: "muted" }, "Pick a key under “why” (or click a read) to see the commits behind its value.")));

  // -- pause and agent panels ------------------------------------------------------------------
  function msgView(m, i, at) {
    if (!isObj(m)) return el("li", null, valueView(m));
    const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
    return el("li", { class: `msg role-${m.role}` }, el("b", null, m.role + (m.tool_name ? ` ${m.tool_name}` : "")),
      at && at[i] !== null && at[i] !== undefined ? el("button", { type: "button", class: "link", onclick: () => select(at[i]) }, ` #${at[i]}`) : "",
      " ", textView(m.content), calls.map((t) => el("div", { class: "toolcall" }, `→ ${t.name}(`, valueView(t.args), ")")));
  }
  // a model reply no history message holds (the final answer), as its commit set it
  function answerView(call) {
    const calls = Array.isArray(call.tool_calls) ? call.tool_calls.filter(isObj) : [];
    return el("li", { class: "msg role-assistant answer" }, el("b", null, calls.length ? "assistant" : "answer"),
      el("button", { type: "button", class: "link", onclick: () => select(call.commit) }, ` #${call.commit}`),
      " ", typeof call.answer === "string" && call.answer !== "REDACTED" ? el("q", { class: "answer-text" }, call.answer) : textView(call.answer), calls.map((t) => el("div", { class: "toolcall" }, `→ ${t.name}(`, valueView(t.args), ")")));
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
  function ledgerView(rows, at) {
    const out = el("ol", { class: "ledger" });
    rows.forEach((r, i) => {
      if (!isObj(r)) { out.append(el("li", null, valueView(r))); return; }
      const kind = r.outcome === "allow" && r.changed ? "rewrite" : String(r.outcome);
      out.append(el("li", { class: `ledger-row ${kind}` }, el("span", { class: `badge ${kind}` }, kind), ` ${r.middleware} · ${r.phase || r.moment} · iteration ${r.iteration}`,
        at && at[i] !== null && at[i] !== undefined ? el("button", { type: "button", class: "link", onclick: () => select(at[i]) }, ` #${at[i]}`) : "",
        r.why ? el("div", null, `why: ${r.why}`) : "", r.reason ? el("div", null, `reason: ${r.reason}`) : "",
        r.question ? el("div", null, `asks: ${r.question}`) : "",
        has(r, "before") ? el("div", { class: "before-after" }, el("del", null, valueView(r.before)), " → ", el("ins", null, valueView(r.after))) : ""));
    });
    return out;
  }
  function humanView(d, at) {
    const verdict = d.gate === "ask_human" ? "answered" : d.approved === true ? "approved" : "declined";
    return el("p", { class: `human-decision ${verdict}` }, el("b", { class: "by" }, String(d.by ?? "a person")), ` ${verdict} ${d.tool}(`, valueView(d.args), ")",
      has(d, "after") ? el("span", { class: "before-after" }, " edited to ", el("ins", null, valueView(d.after))) : "",
      has(d, "answer") ? el("span", null, ": ", valueView(d.answer)) : "",
      d.note ? el("span", null, ` — note: ${d.note}`) : "", d.at ? el("span", { class: "muted" }, ` · at ${d.at}`) : "",
      at !== null && at !== undefined ? el("button", { type: "button", class: "link", onclick: () => select(at) }, ` #${at}`) : "");
  }
  function toolErrorsView(rows, at) {
    return el("ol", { class: "tool-errors" }, rows.map((r, i) => isObj(r)
      ? el("li", { class: "tool-error" }, el("b", null, `${r.tool_name} · ${r.error_type}`), ` (call ${r.tool_call_id}, iteration ${r.iteration})`,
        at && at[i] !== null && at[i] !== undefined ? el("button", { type: "button", class: "link", onclick: () => select(at[i]) }, ` #${at[i]}`) : "",
        el("div", null, valueView(r.message)),
        Array.isArray(r.traceback) ? el("pre", { class: "traceback" }, r.traceback.map(String).join("\n")) : "")
      : el("li", null, valueView(r))));
  }
  if (P.failure) {
    const f = P.failure, panel = $("pause-panel");
    panel.hidden = false;
    const at = f.runtime_stage_id || f.stage_id;
    panel.append(section(`Failed${at ? ` at ${at}` : ""}`, el("p", { class: "failure" }, el("b", null, `${f.error_type}: `), String(f.message)),
      el("p", { class: "muted" }, `${N} commits were made before the failure; the narrative runs up to it.`)));
  }
  if (P.pause) {
    const data = P.pause.data, panel = $("pause-panel");
    panel.hidden = false;
    const q = isObj(data) && isObj(data.check_in) ? `${data.check_in.tool} needs a person: ${data.check_in.evidence ? data.check_in.evidence.will_do : ""}`
      : isObj(data) && isObj(data.ask) ? String(data.ask.question) : null;
    panel.append(section(`Paused at ${P.pause.stage_id} — pending question`, q ? el("p", { class: "question" }, q) : "", valueView(data)));
  }
  const A = P.agent;
  if (A) {
    const panel = $("agent-panel");
    panel.hidden = false;
    for (const note of A.notes) panel.append(el("p", { class: "muted" }, note));
    if (A.calls) panel.append(section(`Model calls (${A.calls.length})`, A.calls.map((call, k) => el("details", { class: "call", open: true },
      el("summary", null, `call ${k + 1}`, call.commit !== null ? ` · written at #${call.commit}` : " · before this run"),
      el("ul", { class: "msgs" }, call.inputs.map((i) => msgView(A.history[i], i, A.history_at)),
        call.message === null ? answerView(call) : msgView(A.history[call.message], call.message, A.history_at),
        call.results.map((i) => msgView(A.history[i], i, A.history_at)))))));
    if (A.ledger) panel.append(section(`Ledger (${A.ledger.length} rows)`, ledgerView(A.ledger, A.ledger_at)));
    if (A.tool_errors) panel.append(section(`Tool errors (${A.tool_errors.length}) — the model read only the message`, toolErrorsView(A.tool_errors, A.tool_errors_at)));
    if (A.check_in) panel.append(checkInView(A.check_in.request, "Check-in — waiting for a decision"));
    if (A.resumed) {
      const r = A.resumed, p = r.paused, d = r.decision;
      const title = p.kind === "ask_human" ? "Question answered" : p.kind === "ask" ? "Ask answered" : "Check-in answered";
      panel.append(section(`${title} (this run resumed it)`,
        el("p", null, `${p.kind} on ${p.tool_name} `, valueView(p.args), ` · request ${p.request_id || "?"}`),
        isObj(d) ? humanView(d, r.decision_at) : el("p", { class: "muted" }, "no human decision recorded"),
        r.result ? el("p", { class: "decision" }, el("b", null, "result: "), textView(r.result.content)) : el("p", { class: "muted" }, "no tool result recorded")));
    }
    if (A.decisions) panel.append(section(`Human decisions (${A.decisions.length})`,
      el("ol", { class: "human-decisions" }, A.decisions.map((d, i) => el("li", null, isObj(d) ? humanView(d, A.decisions_at[i]) : valueView(d))))));
  }

  // -- start -----------------------------------------------------------------------------------
  fitChart();
  fitColumns();
  renderRows();
  const wanted = Number((location.hash || "").slice(1));
  select(location.hash && Number.isInteger(wanted) ? wanted : N - 1);
  if (N === 0) renderStep(-1);
  if (unknownVerbs.size) $("meta").textContent += ` · ⚠ ops this viewer cannot replay: ${[...unknownVerbs].join(", ")}`;
  document.body.dataset.ready = "1";
  window.__viewerReadyMs = performance.now();
})();
