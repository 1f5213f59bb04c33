// The inbox's live list: on a server-sent "runs" event, fetch the list again (same filters) and
// rebuild the table's rows. Text goes in through textContent only: nothing from data is parsed as HTML.
"use strict";
(function () {
  const table = document.getElementById("runs");
  const live = document.getElementById("live");
  if (!table || !window.EventSource) return;
  const body = table.tBodies[0];

  function cell(tr, text) {
    const td = document.createElement("td");
    td.textContent = text == null ? "" : String(text);
    tr.appendChild(td);
    return td;
  }

  function render(runs) {
    while (body.firstChild) body.removeChild(body.firstChild);
    if (!runs.length) {
      const tr = document.createElement("tr");
      tr.className = "empty";
      const td = cell(tr, "Nothing waiting.");
      td.colSpan = 5;
      body.appendChild(tr);
      return;
    }
    for (const run of runs) {
      const tr = document.createElement("tr");
      tr.dataset.run = run.run_id;
      if (run.expired) tr.className = "expired";
      const first = cell(tr, "");
      const link = document.createElement("a");
      link.href = "/runs/" + encodeURIComponent(run.run_id);
      link.textContent = run.wants;
      first.appendChild(link);
      cell(tr, run["for"] || run.conversation || "—");
      cell(tr, run.since);
      cell(tr, run.status);
      const code = document.createElement("code");
      code.textContent = run.run_id;
      cell(tr, "").appendChild(code);
      body.appendChild(tr);
    }
  }

  async function refresh() {
    const query = new URLSearchParams(window.location.search);
    query.delete("cursor");
    const reply = await fetch("/api/runs?" + query.toString(), { credentials: "same-origin" });
    if (reply.ok) {
      render((await reply.json()).runs);
      live.textContent = "Live updates: updated " + new Date().toLocaleTimeString();
      table.dataset.updates = String(Number(table.dataset.updates || "0") + 1);
    }
  }

  const source = new EventSource("/api/events");
  source.addEventListener("hello", function () { live.textContent = "Live updates: on"; });
  source.addEventListener("runs", function () { refresh(); });
  source.onerror = function () { live.textContent = "Live updates: reconnecting…"; };
})();
