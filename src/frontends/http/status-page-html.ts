/**
 * @module The status page's HTML: one document with its style and script inline. The
 * script polls `status.json` (relative to the page) every second and draws the tables
 * and the five-minute sparklines with DOM calls only (text never goes through
 * innerHTML, so model names and error reasons cannot inject markup).
 */

export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Nereid status</title>
<style>
  :root { --fg: #1d2330; --muted: #667085; --line: #e4e7ec; --ok: #067647; --bad: #b42318; --warn: #b54708; --accent: #2e6bd9; }
  body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 24px; background: #fafbfc; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  h2 { font-size: 15px; margin: 24px 0 8px; }
  .sub { color: var(--muted); margin-bottom: 16px; }
  table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); min-width: 100%; }
  th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
  th { font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .READY { color: var(--ok); font-weight: 600; }
  .UNAVAILABLE { color: var(--bad); font-weight: 600; }
  .LOADING, .UNLOADING { color: var(--warn); font-weight: 600; }
  svg.spark { display: block; }
  svg.spark polyline { fill: none; stroke: var(--accent); stroke-width: 1.5; }
  #errors td.reason { white-space: normal; color: var(--bad); }
  #conn { font-weight: 600; }
  #conn.down { color: var(--bad); }
</style>
</head>
<body>
<h1>Nereid</h1>
<div class="sub">server id <span id="server-id"></span> &middot; protocol <span id="server-version"></span> &middot; <span id="server-state"></span> &middot; up <span id="uptime"></span> &middot; <span id="conn">connecting</span></div>
<h2>Models</h2>
<table id="models">
  <thead><tr>
    <th>Model</th><th>Version</th><th>State</th><th>Requests/s</th><th>Rate (5 min)</th><th>Latency ms</th><th>Latency (5 min)</th>
    <th>Queue ms</th><th>Infer ms</th><th>Queue depth</th><th>Success</th><th>Failures</th><th>Cache hits</th>
  </tr></thead>
  <tbody></tbody>
</table>
<h2>Load errors</h2>
<table id="errors">
  <thead><tr><th>Model</th><th>Version</th><th>Reason</th></tr></thead>
  <tbody></tbody>
</table>
<script>
"use strict";
const SVG = "http://www.w3.org/2000/svg";
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; };
const fixed = (x, d) => (Number.isFinite(x) ? x.toFixed(d) : "-");
function spark(values) {
  const w = 120, h = 24, svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark"); svg.setAttribute("width", w); svg.setAttribute("height", h);
  const max = Math.max(1e-9, ...values), n = Math.max(values.length - 1, 1);
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", values.map((v, i) => (i * w / n).toFixed(1) + "," + (h - 1 - (v / max) * (h - 2)).toFixed(1)).join(" "));
  svg.appendChild(line);
  return svg;
}
function duration(s) {
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
  return h ? h + "h " + m + "m" : m ? m + "m " + (s % 60) + "s" : s + "s";
}
function render(d) {
  document.getElementById("server-id").textContent = d.server.id;
  document.getElementById("server-version").textContent = d.server.version;
  document.getElementById("server-state").textContent = d.server.state + " \u00b7 ready: " + (d.server.ready ? "yes" : "no");
  document.getElementById("uptime").textContent = duration(d.server.uptime_secs);
  const body = document.querySelector("#models tbody");
  const rows = [];
  for (const m of d.models) {
    const last = m.history[m.history.length - 1];
    const tr = el("tr");
    tr.dataset.model = m.name; tr.dataset.version = m.version;
    const failures = Object.values(m.failure).reduce((a, b) => a + b, 0);
    const cells = [
      el("td", m.name), el("td", m.version), el("td", m.state, m.state),
      el("td", last ? fixed(last.rate, 1) : "-", "num rate"),
      el("td"),
      el("td", last && last.rate > 0 ? fixed(last.request_us / 1000, 2) : "-", "num latency"),
      el("td"),
      el("td", last && last.rate > 0 ? fixed(last.queue_us / 1000, 2) : "-", "num"),
      el("td", last && last.rate > 0 ? fixed(last.compute_infer_us / 1000, 2) : "-", "num"),
      el("td", m.pending, "num pending"),
      el("td", m.success, "num success"),
      el("td", failures, "num failures"),
      el("td", m.cache_enabled ? m.cache_hits + " / " + (m.cache_hits + m.cache_misses) : "off", "num cache"),
    ];
    cells[4].appendChild(spark(m.history.map((p) => p.rate)));
    cells[6].appendChild(spark(m.history.map((p) => p.request_us / 1000)));
    if (m.reason) cells[2].title = m.reason;
    for (const c of cells) tr.appendChild(c);
    rows.push(tr);
  }
  body.replaceChildren(...rows);
  const errors = document.querySelector("#errors tbody");
  errors.replaceChildren(...(d.load_errors.length ? d.load_errors.map((e) => {
    const tr = el("tr"); tr.append(el("td", e.name), el("td", e.version), el("td", e.reason, "reason")); return tr;
  }) : [(() => { const tr = el("tr"); const td = el("td", "none"); td.colSpan = 3; tr.appendChild(td); return tr; })()]));
}
async function poll() {
  const conn = document.getElementById("conn");
  try {
    const res = await fetch("status.json", { cache: "no-store" });
    if (!res.ok) throw new Error("HTTP " + res.status);
    render(await res.json());
    conn.textContent = "live"; conn.className = "";
  } catch (err) {
    conn.textContent = "disconnected (" + err.message + ")"; conn.className = "down";
  }
  setTimeout(poll, 1000);
}
poll();
</script>
</body>
</html>
`;
