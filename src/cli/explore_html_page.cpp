// The styles and script of the `explore --html` page (explore_output.cpp writes the report's
// JSON between them). No network: nothing is loaded from anywhere. One table of the experiments
// in the report's order (crashes, hangs, fails, tolerated), colour by consequence, a filter box
// (substring of any column) and the reproducing command of each crash and hang.
#include "cli/explore_output.hpp"

namespace cudatool::cli {

const std::string_view kExploreHtmlHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cudatool explore</title>
<style>
body { margin: 0; font: 13px/1.35 system-ui, sans-serif; color: #1d1d1f; }
header { padding: 6px 10px 4px; border-bottom: 1px solid #ccc; background: #fafafa; }
header h1 { font-size: 14px; margin: 0 0 2px; }
#summary { font: 12px monospace; white-space: pre-wrap; }
#toolbar { display: flex; gap: 8px; align-items: center; padding: 4px 10px; border-bottom: 1px solid #ccc; }
#filter { flex: 1; font: 12px monospace; padding: 2px 4px; }
#count { font-size: 12px; color: #555; }
table { border-collapse: collapse; width: 100%; font: 12px monospace; }
th, td { text-align: left; padding: 2px 6px; border-bottom: 1px solid #eee; vertical-align: top; }
th { position: sticky; top: 0; background: #f0f0f0; }
tr.crashes td:first-child { background: #f8c8c8; }
tr.hangs td:first-child { background: #f8e0b0; }
tr.fails td:first-child { background: #fff0c0; }
tr.tolerated td:first-child { background: #d8f0d8; }
.repro { color: #555; white-space: pre-wrap; word-break: break-all; }
</style></head><body>
<header><h1>cudatool explore</h1><div id="summary"></div></header>
<div id="toolbar"><input id="filter" placeholder="filter: any text of a row (request, member, outcome…)"><span id="count"></span></div>
<table><thead><tr><th>outcome</th><th>strategy</th><th>request</th><th>×</th><th>change</th><th>what happened</th><th>s</th></tr></thead><tbody id="rows"></tbody></table>
)HTML";

const std::string_view kExploreHtmlTail = R"HTML(<script>
"use strict";
const D = JSON.parse(document.getElementById("explore-data").textContent);
const $ = (id) => document.getElementById(id);
function esc(t) { return String(t).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }
function happened(e) {
  if (e.outcome === "crashes") return "signal " + e.signal + (e.function ? " in " + e.function : "");
  if (e.outcome === "hangs") return e.end === "time_limit" ? "time limit passed" : "no progress until the deadline";
  if (e.outcome === "fails") {
    let s = "exit " + e.exit_status;
    if (e.api_call) s += "; " + e.api_call + " " + (e.cuda_result === null ? "not returned" : e.cuda_result) + (e.baseline_result === null ? "" : " (baseline " + e.baseline_result + ")");
    else if (e.output_change) s += "; output " + e.output_change;
    return s;
  }
  if (e.outcome === "tolerated") {
    const list = (v) => v.map((c) => c.call + (c.count > 1 ? " ×" + c.count : "")).join(", ");
    const parts = [];
    if (e.skipped.length) parts.push("skipped " + list(e.skipped));
    if (e.added.length) parts.push("added " + list(e.added));
    return parts.length ? parts.join("; ") : "no call changed";
  }
  return e.error ? "not run: " + e.error : "not run";
}
const counts = {};
for (const e of D.experiments) counts[e.outcome] = (counts[e.outcome] || 0) + 1;
$("summary").textContent = D.trace + " — driver " + (D.driver_version || "?") + ", " + D.request_kinds + " request kinds\n" +
  "command: " + D.argv.join(" ") + "\n" +
  "baseline: " + (D.baseline.ok ? "exit 0" : D.baseline.message) + " (" + D.baseline.wall_s.toFixed(2) + " s)\n" +
  D.experiments.length + " experiments (" + D.jobs + " jobs, " + D.wall_s.toFixed(1) + " s): " +
  ["crashes", "hangs", "fails", "tolerated", "not_run"].filter((k) => counts[k]).map((k) => counts[k] + " " + k).join(", ") +
  (D.interrupted ? "\ninterrupted: what was done so far" : "");
const rows = D.experiments.map((e) => {
  const change = e.strategy === "refuse" ? "refused: " + e.value : e.member + " = " + e.value;
  const what = happened(e);
  const text = [e.outcome, e.strategy, e.request, change, what, e.reproduce || ""].join(" ").toLowerCase();
  const html = "<tr class=\"" + e.outcome + "\"><td>" + esc(e.outcome) + "</td><td>" + esc(e.strategy) + "</td><td>" + esc(e.request) +
    (e.api ? "<br>made by " + esc(e.api) : "") + "</td><td>" + e.count + "</td><td>" + esc(change) + "</td><td>" + esc(what) +
    (e.reproduce ? "<div class=\"repro\">" + esc(e.reproduce) + "</div>" : "") + "</td><td>" + e.wall_s.toFixed(2) + "</td></tr>";
  return {text, html};
});
function draw() {
  const f = $("filter").value.toLowerCase();
  const shown = rows.filter((r) => !f || r.text.includes(f));
  $("rows").innerHTML = shown.map((r) => r.html).join("");
  $("count").textContent = shown.length + " of " + rows.length;
}
$("filter").addEventListener("input", draw);
draw();
</script>
</body></html>
)HTML";

}  // namespace cudatool::cli
