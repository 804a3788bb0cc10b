// The ferrumkv console: polls /api/snapshot every second (INFO, parsed server-side) and
// /api/curve every five, keeps five minutes of history and draws it as small SVG charts.
// No library, no CDN: the page works offline.
"use strict";

const POLL_MS = 1000, CURVE_EVERY = 5, HISTORY = 300;
const COLORS = ["#2f6fdb", "#d9822b", "#2b9d6b", "#8e44ad"];
const hist = [];           // {t, ops, evict, dr, df, real, exact, rreal, rexact, alpha, used, max}
let prev = null, polls = 0, keysCursor = "0", advised = false;
const SCAN_PAGES_MAX = 64;    // SCAN may return empty pages: follow up to this many per click

const $ = (id) => document.getElementById(id);
const fmtBytes = (b) => {
  if (b === undefined || b === null) return "–";
  const u = ["B", "KB", "MB", "GB", "TB"]; let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(2) : b) + " " + u[i];
};
const pct = (x) => (x === undefined || x === null || isNaN(x)) ? "–" : (100 * x).toFixed(2) + " %";

async function getJSON(url, opts) {
  const r = await fetch(url, opts);
  if (!r.ok) throw new Error(url + ": HTTP " + r.status);
  return r.json();
}

// ---- charts ----

function svgEl(name, attrs, text) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Legends sit in a band above the plot, laid left to right (wrapping), never over a line.
const LEGEND_ROW = 13, LEGEND_CHAR = 7;
function legendRows(series, width) {
  const rows = [[]]; let x = 0;
  series.forEach((s, i) => {
    const label = s.name + (s.dash ? " (dashed)" : ""), w = label.length * LEGEND_CHAR + 22;
    if (x + w > width && rows[rows.length - 1].length) { rows.push([]); x = 0; }
    rows[rows.length - 1].push({label, x, i, s}); x += w;
  });
  return rows;
}

// The y range a chart shows: fixed bounds, or (opts.zoom) the data's own range padded by a
// tenth of it (at least opts.zoom), clamped to [opts.ymin, opts.ymax]: a one-point gap
// between two hit rates is the point, and on a 0-100 % axis it cannot be seen.
function yRange(pts, opts) {
  const lo = Math.min(...pts.map((p) => p[1])), hi = Math.max(...pts.map((p) => p[1]));
  if (!opts.zoom) {
    return [opts.ymin !== undefined ? opts.ymin : lo, opts.ymax !== undefined ? opts.ymax : hi];
  }
  const pad = Math.max((hi - lo) / 10, opts.zoom / 2);
  return [Math.max(opts.ymin !== undefined ? opts.ymin : -Infinity, lo - pad),
          Math.min(opts.ymax !== undefined ? opts.ymax : Infinity, hi + pad)];
}

// series: [{name, values: [[x, y]...], dash}],
// opts: {ymin, ymax, zoom, logx, xfmt, yfmt, marks}
function draw(svg, series, opts) {
  opts = opts || {};
  const W = svg.clientWidth || 400, H = svg.clientHeight || 170, L = 48, R = 8, B = 20;
  const legend = series.length > 1 || (series[0] && series[0].dash) ? legendRows(series, W - L - R) : [];
  const T = 8 + LEGEND_ROW * legend.length;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.replaceChildren();
  const pts = series.flatMap((s) => s.values).filter((p) => p[1] !== null && !isNaN(p[1]));
  if (!pts.length) { svg.append(svgEl("text", {x: L, y: H / 2}, "no data yet")); return; }
  const tx = opts.logx ? (x) => Math.log10(Math.max(x, 1)) : (x) => x;
  let x0 = Math.min(...pts.map((p) => tx(p[0]))), x1 = Math.max(...pts.map((p) => tx(p[0])));
  let [y0, y1] = yRange(pts, opts);
  if (x1 === x0) x1 = x0 + 1; if (y1 === y0) y1 = y0 + 1;
  const X = (x) => L + (tx(x) - x0) / (x1 - x0) * (W - L - R);
  const Y = (y) => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  svg.append(svgEl("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis"}));
  svg.append(svgEl("line", {x1: L, y1: T, x2: L, y2: H - B, class: "axis"}));
  const yfmt = opts.yfmt || ((v) => +v.toPrecision(3));
  for (const v of [y0, (y0 + y1) / 2, y1]) {
    svg.append(svgEl("text", {x: 2, y: Y(v) + 3}, yfmt(v)));
  }
  const xfmt = opts.xfmt || ((v) => v);
  const xs = [];
  if (opts.logx) {                       // powers of ten inside the range
    for (let e = Math.ceil(x0); e <= Math.floor(x1); e++) xs.push(Math.pow(10, e));
  } else {
    xs.push(pts[0][0]);
  }
  for (const v of xs) {
    const x = X(v), anchor = x > W - R - 30 ? "end" : x < L + 20 ? "start" : "middle";
    svg.append(svgEl("text", {x, y: H - 5, "text-anchor": anchor}, xfmt(v)));
  }
  series.forEach((s, i) => {
    const d = s.values.filter((p) => p[1] !== null && !isNaN(p[1]))
      .map((p, j) => (j ? "L" : "M") + X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1)).join("");
    if (d) svg.append(svgEl("path", {d, fill: "none", stroke: s.color || COLORS[i % 4],
                                      "stroke-width": 1.6, "stroke-dasharray": s.dash || ""}));
  });
  legend.forEach((row, r) => row.forEach(({label, x, i, s}) => {
    const color = s.color || COLORS[i % 4], y = 8 + LEGEND_ROW * r + 6;
    svg.append(svgEl("line", {x1: L + x, y1: y - 3, x2: L + x + 10, y2: y - 3, stroke: color,
                              "stroke-width": 2, "stroke-dasharray": s.dash || ""}));
    svg.append(svgEl("text", {x: L + x + 13, y, style: "fill:" + color, class: "legend"}, label));
  }));
  for (const m of (opts.marks || [])) {
    if (m.x !== undefined && m.y === undefined)
      svg.append(svgEl("line", {x1: X(m.x), y1: T, x2: X(m.x), y2: H - B, class: "mark"}));
    if (m.y !== undefined)
      svg.append(svgEl("circle", {cx: X(m.x), cy: Y(m.y), r: 4, fill: "#c0392b"}));
    if (m.label) {                      // near the right edge the label reads leftwards
      const right = X(m.x) > W - R - 80;
      svg.append(svgEl("text", {x: X(m.x) + (right ? -4 : 4), y: T + 10,
                                "text-anchor": right ? "end" : "start"}, m.label));
    }
  }
}

function timeSeries(fields) {
  const t0 = hist.length ? hist[hist.length - 1].t : 0;
  return fields.map(([name, key, dash, color]) => ({
    name, dash, color, values: hist.map((h) => [(h.t - t0) / 1000, h[key]])}));
}
const tfmt = (v) => (Math.round(v) === 0 ? "now" : Math.round(v) + " s");
const plural = (n, one, many) => n.toLocaleString() + " " + (n === 1 ? one : many);

function redraw() {
  draw($("c-ops"), timeSeries([["ops/s", "ops"]]), {ymin: 0, xfmt: tfmt});
  draw($("c-hit"), timeSeries([["server", "real"], ["exact LRU", "exact"],
                               ["server, reuses", "rreal", "4 3"], ["exact LRU, reuses", "rexact", "4 3"]]),
       {ymin: 0, ymax: 1, zoom: 0.02, yfmt: (v) => (100 * v).toFixed(1) + "%", xfmt: tfmt});
  draw($("c-alpha"), timeSeries([["alpha", "alpha"]]),
       {ymin: 0, ymax: 1, yfmt: (v) => v === 1 ? "1 recency" : v === 0 ? "0 frequency" : v.toFixed(1),
        xfmt: tfmt});
  draw($("c-evict"), timeSeries([["evicted/s", "evict"]]), {ymin: 0, xfmt: tfmt});
  draw($("c-duels"), timeSeries([["recency won", "dr"], ["frequency won", "df"]]), {ymin: 0, xfmt: tfmt});
  draw($("c-mem"), timeSeries([["used_memory", "used"], ["maxmemory", "max", "4 3"]]),
       {ymin: 0, yfmt: fmtBytes, xfmt: tfmt});
  draw($("c-rss"), timeSeries([["RSS", "rss"], ["baseline", "base", "4 3"],
                               ["litehit shadow", "shadow"]]),
       {ymin: 0, yfmt: fmtBytes, xfmt: tfmt});
  draw($("c-cpu"), timeSeries([["user", "cpu_user"], ["system", "cpu_sys"]]),
       {ymin: 0, yfmt: (v) => (100 * v).toFixed(0) + "%", xfmt: tfmt});
}

// ---- polling ----

function num(x) { return typeof x === "number" ? x : null; }

function update(s) {
  const mem = s.memory || {}, st = s.stats || {}, lit = s.litehit || {}, ks = s.keyspace || {};
  const keys = Object.values(ks).reduce((a, d) => a + (d.keys || 0), 0);
  const now = s.time_ms;
  const cpu = s.cpu || {};
  const row = {t: now, alpha: num(mem.ahe_alpha), used: mem.used_memory,
               max: mem.maxmemory || null, rss: num(mem.used_memory_rss),
               base: num(mem.rss_baseline),
               shadow: lit.litehit_shadow ? num(mem.litehit_shadow_memory) : null,
               cpu_user: null, cpu_sys: null,
               // a rate over no reads is no data, not 0 %
               real: lit.litehit_window_blocks ? num(lit.litehit_window_real_hit_rate) : null,
               exact: lit.litehit_window_blocks ? num(lit.litehit_window_exact_hit_rate) : null,
               rreal: lit.litehit_window_reuse_blocks ? num(lit.litehit_window_reuse_real_hit_rate) : null,
               rexact: lit.litehit_window_reuse_blocks ? num(lit.litehit_window_reuse_exact_hit_rate) : null,
               ops: null, evict: null, dr: null, df: null};
  if (prev && now > prev.t) {
    const dt = (now - prev.t) / 1000;
    const rate = (a, b) => (a === undefined || b === undefined) ? null : Math.max(a - b, 0) / dt;
    row.ops = rate(st.total_commands_processed, prev.cmds);
    row.evict = rate(st.evicted_keys, prev.evicted);
    row.dr = rate(mem.ahe_duels_recency_won, prev.dr);
    row.df = rate(mem.ahe_duels_frequency_won, prev.df);
    row.cpu_user = rate(cpu.used_cpu_user, prev.cpu_user);     // CPU seconds per second
    row.cpu_sys = rate(cpu.used_cpu_sys, prev.cpu_sys);
  }
  prev = {t: now, cmds: st.total_commands_processed, evicted: st.evicted_keys,
          dr: mem.ahe_duels_recency_won, df: mem.ahe_duels_frequency_won,
          cpu_user: cpu.used_cpu_user, cpu_sys: cpu.used_cpu_sys};
  hist.push(row);
  while (hist.length > HISTORY) hist.shift();

  $("v-maxmemory_policy").textContent = mem.maxmemory_policy;
  $("v-memory").textContent = fmtBytes(mem.used_memory) + " / " + (mem.maxmemory ? fmtBytes(mem.maxmemory) : "no limit");
  $("v-memory").dataset.used = mem.used_memory;
  $("v-keys").textContent = keys.toLocaleString();
  $("v-rss").textContent = fmtBytes(mem.used_memory_rss);
  commandTable(s.commandstats || {}, s.latencystats || {});
  $("v-ops").textContent = row.ops === null ? "–" : Math.round(row.ops);
  $("v-connected_clients").textContent = (s.clients || {}).connected_clients;
  $("v-ahe_alpha").textContent = mem.ahe_alpha === undefined ? "n/a (not an AHE policy)" : mem.ahe_alpha.toFixed(6);
  $("v-ahe_leaning").textContent = mem.ahe_alpha_leaning ? "(" + mem.ahe_alpha_leaning + ")" : "";
  $("v-hit").textContent = lit.litehit_shadow ? pct(row.real) + " / " + pct(row.exact)
    : "shadow off (CONFIG SET litehit-shadow yes)";
  $("v-uptime").textContent = (s.server || {}).uptime_in_seconds + " s";
  redraw();
}

async function pollCurve(s) {
  const lit = s.litehit || {};
  if (!lit.litehit_shadow) { draw($("c-curve"), [], {}); $("curve-note").textContent =
    "The litehit shadow is off: CONFIG SET litehit-shadow yes to see the curve."; return; }
  const c = await getJSON("/api/curve?points=48");
  const pts = (c.points || []).filter((p) => p.capacity_keys > 0)
    .map((p) => [p.capacity_keys, parseFloat(p.exact_hit_rate)]);
  const marks = [];
  if (c.capacity_keys > 0) {
    marks.push({x: c.capacity_keys, label: "maxmemory"});
    marks.push({x: c.capacity_keys, y: lit.litehit_real_hit_rate});
  }
  if (!advised) { advised = true; advise(); }      // the box says something from the start
  draw($("c-curve"), [{name: "exact LRU", values: pts}],
       {logx: true, ymin: 0, ymax: 1, marks, yfmt: (v) => (100 * v).toFixed(0) + "%",
        xfmt: (v) => v >= 1e6 ? v / 1e6 + "M keys" : v >= 1e3 ? v / 1e3 + "k keys" : plural(v, "key", "keys")});
  $("curve-note").textContent = `block = ${c.block_bytes} bytes; sample rate ${c.sample_rate}; ` +
    `today ${c.capacity_keys > 0 ? plural(c.capacity_keys, "key", "keys") : "no maxmemory"}; server ` +
    `${pct(lit.litehit_real_hit_rate)} against exact LRU ${pct(lit.litehit_exact_hit_rate)} ` +
    `(reuses: ${pct(lit.litehit_reuse_real_hit_rate)} against ${pct(lit.litehit_reuse_exact_hit_rate)})`;
}

// ---- per-command table, slowlog, clients ----

// Calls, time and latency percentiles per command, busiest first (INFO commandstats and
// latencystats, as RedisInsight and redis_exporter dashboards show them).
function commandTable(stats, lat) {
  const rows = Object.entries(stats).filter(([k, v]) => k.startsWith("cmdstat_") && v.calls)
    .map(([k, v]) => [k.slice(8), v]).sort((a, b) => b[1].usec - a[1].usec).slice(0, 15);
  $("cmds-out").querySelector("tbody").replaceChildren(...rows.map(([cmd, v]) => {
    const p = lat["latency_percentiles_usec_" + cmd] || {};
    return tr([cmd, v.calls.toLocaleString(), (v.usec / 1e6).toFixed(3) + " s",
               v.usec_per_call.toFixed(1), p.p50, p.p99, p["p99.9"],
               (v.failed_calls || 0) + (v.rejected_calls || 0)]);
  }));
}

function tr(cells) {
  const row = document.createElement("tr");
  for (const v of cells) {
    const td = document.createElement("td"); td.textContent = v === undefined ? "" : v; row.append(td);
  }
  return row;
}

async function runCommand(argv) {
  const r = await getJSON("/api/command", {method: "POST",
    headers: {"Content-Type": "application/json", "X-Ferrumkv-Console": "1"},
    body: JSON.stringify({argv, db: 0})});
  if (r.error || (r.reply && r.reply.error)) throw new Error(r.error || r.reply.error);
  return r.reply;
}

async function pollOps() {
  try {
    const slow = await runCommand(["SLOWLOG", "GET", "10"]);
    $("slowlog-out").querySelector("tbody").replaceChildren(...slow.map((e) =>
      tr([e[0], new Date(e[1] * 1000).toLocaleTimeString(), (e[2] / 1000).toFixed(2),
          e[3].join(" ").slice(0, 80), e[4]])));
    const clients = (await runCommand(["CLIENT", "LIST"])).trim().split("\n").filter((l) => l);
    $("clients-out").querySelector("tbody").replaceChildren(...clients.slice(0, 50).map((line) => {
      const f = Object.fromEntries(line.split(" ").map((kv) => [kv.split("=")[0], kv.slice(kv.indexOf("=") + 1)]));
      return tr([f.id, f.addr, f.name, f.age + " s", f.idle + " s", f.db, f.cmd, f.omem, f.user]);
    }));
    $("ops-note").textContent = "";
  } catch (e) { $("ops-note").textContent = "slowlog / clients: " + e.message; }
}

async function poll() {
  try {
    const s = await getJSON("/api/snapshot");
    update(s);
    if (polls % CURVE_EVERY === 0) await pollOps();
    if (polls++ % CURVE_EVERY === 0) await pollCurve(s);
    $("status").textContent = "live · " + new Date(s.time_ms).toLocaleTimeString();
    $("status").classList.remove("down");
  } catch (e) {
    $("status").textContent = "disconnected: " + e.message;
    $("status").classList.add("down");
  }
  setTimeout(poll, POLL_MS);
}

// ---- forms ----

$("advise-form").addEventListener("submit", (ev) => { ev.preventDefault(); advise(); });

async function advise() {
  const out = $("advise-out");
  try {
    const a = await getJSON("/api/advise?target=" + encodeURIComponent($("advise-target").value));
    if (a.error) { out.innerHTML = ""; out.append(row2("error", a.error)); return; }
    out.replaceChildren(...Object.entries(a).map(([k, v]) =>
      row2(k, /bytes$/.test(k) ? fmtBytes(v) + " (" + v + ")" : v)));
  } catch (e) { out.replaceChildren(row2("error", e.message)); }
}

function row2(a, b) {
  const tr = document.createElement("tr");
  for (const v of [a, b]) { const td = document.createElement("td"); td.textContent = v; tr.append(td); }
  return tr;
}

// Split a command line like redis-cli: spaces separate words, "..." and '...' quote.
function splitArgs(line) {
  const out = []; const re = /"((?:\\.|[^"\\])*)"|'([^']*)'|(\S+)/g; let m;
  while ((m = re.exec(line))) out.push(m[1] !== undefined ? JSON.parse('"' + m[1] + '"') : m[2] !== undefined ? m[2] : m[3]);
  return out;
}

function render(v, indent) {
  indent = indent || "";
  if (v === null) return "(nil)";
  if (typeof v === "number") return "(integer) " + v;
  if (typeof v === "string") return /\n/.test(v) ? v.replace(/\r\n/g, "\n") : JSON.stringify(v);
  if (Array.isArray(v)) return v.length ? v.map((x, i) => (i ? indent : "") + (i + 1) + ") " +
    render(x, indent + "   ")).join("\n") : "(empty array)";
  if (v.error !== undefined) return "(error) " + v.error;
  const e = Object.entries(v);
  return e.length ? e.map(([k, x], i) => (i ? indent : "") + (i + 1) + "# " + JSON.stringify(k) + " => " +
    render(x, indent + "   ")).join("\n") : "(empty hash)";
}

$("cmd-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const argv = splitArgs($("cmd-line").value);
  if (!argv.length) return;
  try {
    const r = await getJSON("/api/command", {method: "POST",
      headers: {"Content-Type": "application/json", "X-Ferrumkv-Console": "1"},
      body: JSON.stringify({argv, db: parseInt($("cmd-db").value, 10) || 0})});
    $("cmd-out").textContent = r.error ? "(error) " + r.error : render(r.reply);
  } catch (e) { $("cmd-out").textContent = "(error) " + e.message; }
});

async function scanKeys(cursor) {
  const tbody = $("keys-out").querySelector("tbody");
  try {
    // SCAN may answer a page with no rows (a MATCH that skips a whole page, or sparse
    // tables): follow the cursor until there are rows or the scan ends.
    let r;
    for (let page = 0; page < SCAN_PAGES_MAX; page++) {
      const q = new URLSearchParams({db: $("keys-db").value, match: $("keys-match").value,
                                     count: $("keys-count").value, cursor});
      r = await getJSON("/api/keys?" + q);
      cursor = r.cursor;
      if (r.keys.length || cursor === "0") break;
    }
    keysCursor = r.cursor;
    $("keys-note").textContent = r.keys.length ? "" : r.cursor === "0" ? "no keys match" :
      "no keys in " + SCAN_PAGES_MAX + " pages: next page goes on";
    $("keys-next").disabled = r.cursor === "0";
    tbody.replaceChildren(...r.keys.map((k) => {
      const tr = document.createElement("tr");
      for (const v of [k.key, k.type, k.ttl_ms < 0 ? "none" : (k.ttl_ms / 1000).toFixed(1) + " s",
                       k.bytes, k.freq === undefined ? "" : k.freq, k.idle_s === undefined ? "" : k.idle_s]) {
        const td = document.createElement("td"); td.textContent = v; tr.append(td);
      }
      return tr;
    }));
  } catch (e) { tbody.replaceChildren(row2("error", e.message)); }
}
$("keys-form").addEventListener("submit", (ev) => { ev.preventDefault(); scanKeys("0"); });
$("keys-next").addEventListener("click", () => scanKeys(keysCursor));

poll();
