/* flowchart view — the page's only script. Law: data is JSON.parse'd from the payload
   element and reaches the page through textContent / setAttribute only, never as markup.
   The state at step n is the fold of commits 0..n over the initial state (the
   flowchart._core.commits.replay law), cached every SNAP commits; only visible timeline rows exist. */
"use strict";
(function () {
  // A number is shown as the record spells it: a whole float stays 129.0 (as Python, and every
  // Python-made sentence on the page, write it), never JavaScript's 129 in one panel and 129.0 in
  // the next. JSON.parse hands a reviver the source text (where the browser offers it); a number
  // JavaScript would print differently becomes a Spelled number: its value, and its text.
  class Spelled extends Number {
    constructor(value, text) { super(value); this.text = text; }
    toString() { return this.text; }
  }
  const SPELLED = "\u0000\u0001n:";
  const payloadText = document.getElementById("payload").textContent;
  const mayDiffer = /[0-9](?:\.0+|[eE][-+]?[0-9]+)(?=[,\]}])/.test(payloadText);
  const P = mayDiffer
    ? JSON.parse(payloadText, (key, value, context) =>
      typeof value === "number" && context && typeof context.source === "string" && context.source !== String(value)
        ? new Spelled(value, context.source) : value)
    : JSON.parse(payloadText);
  // JSON text of a value, its Spelled numbers as spelled
  function jsonText(v, indent) {
    const out = JSON.stringify(v, (k, x) => (x instanceof Spelled ? SPELLED + x.text : x), indent);
    return out === undefined ? out : out.replace(/"\\u0000\\u0001n:([^"]*)"/g, "$1");
  }
  const ROW = 40, OVERSCAN = 12, SNAP = 256, INLINE = 100, TEXT_INLINE = 400, LAZY = 4000;
  const commits = P.commits, N = commits.length, lines = P.narrative.map((r) => r[2]);
  const $ = (id) => document.getElementById(id);
  const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Number);

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

  // -- replay (copy-on-write, like flowchart._core.commits.apply_op) ---------------------------------
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
    return jsonText(v);
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
    const flat = jsonText(v);
    if (flat === undefined) return el("code", { class: "v" }, "undefined");
    if (flat.length <= INLINE) return el("code", { class: "v" }, flat);
    const d = el("details", { class: "fold" }, el("summary", null, preview(v, flat)));
    const fill = () => {
      if (d.dataset.filled) return;
      d.dataset.filled = "1";
      d.append(el("pre", { class: "v" }, typeof v === "string" ? v : jsonText(v, 2)));
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
  tl.dataset.row = String(ROW);  // the row pitch, for whoever scrolls the list to a commit
  let cur = -1, whyKey = "", whySet = new Set(), whyRoot = -1;
  function opsText(ops) { return ops.map((o) => (o[1] === "delete" ? "del " : o[1] + " ") + pathText(o[0])).join(" · "); }
  // the step's headline record, placed in Python by stage id (the text is never parsed)
  function headline(i) { const h = P.headlines[i]; return h === null || h === undefined ? "" : lines[h]; }
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
  // column widths that fit the longest text of the whole log (measured once), so no cell is cut;
  // the narrative line and the ops share one column, on two lines, so both start in view
  function fitColumns() {
    const longest = (texts) => texts.map((t, i) => [t.length, i]).sort((a, b) => b[0] - a[0]).slice(0, 8).map((p) => texts[p[1]]);
    const columns = { rid: commits.map((c) => String(c[0])), stage: commits.map((c) => String(c[1])), narr: commits.map((c, i) => headline(i)), ops: commits.map((c) => opsText(c[3]) || "—") };
    const probe = el("div", { class: "row", style: "visibility:hidden;top:0;display:block;width:max-content" });
    const widths = {};
    spacer.append(probe);
    for (const [name, texts] of Object.entries(columns)) {
      let widest = 0;
      for (const t of longest(texts)) {
        const cell = el("span", { class: name }, t);
        probe.replaceChildren(cell);
        widest = Math.max(widest, Math.ceil(cell.getBoundingClientRect().width));
      }
      widths[name] = widest + 2;
    }
    probe.remove();
    tl.style.setProperty("--w-rid", `${widths.rid}px`);
    tl.style.setProperty("--w-stage", `${widths.stage}px`);
    tl.style.setProperty("--w-text", `${Math.max(widths.narr, widths.ops)}px`);
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
  // a decision the commit did not record (an older trace): its narrative record, shown as told
  function decisionView(i) {
    const box = section("Decision", el("p", { class: "condition" }, lines[P.decisions[i]]));
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
          `${c.key} ${c.actual_summary} ${c.op} ${jsonText(c.threshold)} ${c.result ? "✓" : "✗"}`))) : null,
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
      if (raw.hidden && !raw.textContent) raw.textContent = jsonText(state, 2);
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
    const mine = P.blocks[i] || [];
    pane.append(section("Narrative", mine.length ? el("div", { class: "narrative" }, mine.map((j) =>
      el("div", { class: `line type-${P.narrative[j][0]}` + (["condition", "selector"].includes(P.narrative[j][0]) ? " cond" : ""), "data-record": j }, lines[j])))
      : el("p", { class: "muted" }, P.narrative.length && !P.blocks.some((b) => b.length) ? "(this trace's narrative records carry no stage ids: version 1)" : "(no narrative for this step)")));
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

  // -- failure and pause ------------------------------------------------------------------
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
    panel.append(section(`Paused at ${P.pause.stage_id} — pending question`, valueView(data)));
  }
  // -- panels: what a flowchart.viewer.Panel draws (its script registered a renderer first) ----
  const api = { el, section, valueView, textView, select, isObj, has, story: $("story"), side: $("panel-side"), commits };
  const renderers = self.flowchartPanels || {};
  for (const [name, data] of Object.entries(P.panels || {})) {
    if (typeof renderers[name] !== "function") continue;
    try { renderers[name](api, data); }
    catch (e) { $("panel-side").hidden = false; $("panel-side").append(el("p", { class: "failure" }, `panel ${name} failed: ${e}`)); }
  }
  if ($("story").childElementCount) { $("story").hidden = false; document.body.classList.add("has-story"); }
  if ($("panel-side").childElementCount) $("panel-side").hidden = false;

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
