// The styles and script of the `ab --html` page (ab_html.cpp writes the data between them). No
// network: nothing is loaded from anywhere. The script parses the comparison block at once and an
// event block (1024 events of one trace) only when one of its rows is shown or a filter needs it;
// the list is virtual — only the rows in view (and the expanded calls among them) are in the DOM.
#include "cli/ab_html.hpp"

namespace cudatool::cli {

const std::string_view kAbHtmlHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cudatool ab</title>
<style>
:root { --h: 18px; }
html, body { margin: 0; height: 100%; }
body { display: flex; flex-direction: column; font: 13px/1.35 system-ui, sans-serif; color: #1d1d1f; }
header { padding: 6px 10px 4px; border-bottom: 1px solid #ccc; background: #fafafa; }
header h1 { font-size: 14px; margin: 0 0 2px; }
header .files { font: 12px monospace; color: #444; white-space: pre; overflow: hidden; text-overflow: ellipsis; }
#notes { font: 12px monospace; color: #8a4b00; white-space: pre-wrap; }
#verdict { font: 12px/1.4 monospace; margin: 4px 0 0; white-space: pre-wrap; max-height: 30vh; overflow: auto; }
#toolbar { display: flex; gap: 8px; align-items: center; padding: 4px 10px; border-bottom: 1px solid #ccc; }
#filter { flex: 1; font: 12px monospace; padding: 2px 4px; }
#filter.bad { background: #fff4f4; }
#mode, #count { font-size: 12px; color: #555; white-space: nowrap; }
button { font-size: 12px; }
#list { flex: 1; overflow: auto; position: relative; font: 12px monospace; }
#canvas { position: relative; }
#window { position: absolute; left: 0; right: 0; }
.r { display: grid; grid-template-columns: 2ch 6ch 6ch minmax(0, 1fr) 24ch minmax(0, 1fr) 24ch;
     column-gap: 1ch; height: var(--h);
     line-height: var(--h); white-space: nowrap; cursor: pointer; border-bottom: 1px solid #f0f0f0; }
.r > span { overflow: hidden; text-overflow: ellipsis; }
.r .n { text-align: right; color: #666; }
.r:hover { background: #eef4ff; }
.r.same .bt, .r.same .br { color: #999; }
.r .ar, .r .br { font-weight: bold; }
.r.k-status, .r.k-parameters, .r.k-return { background: #fff1c2; }
.r.k-missing { background: #fcd9dc; }
.r.k-extra { background: #d6f2dc; }
.r.gone { background: #f7eaeb; color: #777; }
.r.first { outline: 2px solid #c0162b; outline-offset: -2px; font-weight: bold; }
.r.open { background: #dbe7ff; }
.d { padding: 6px 10px 8px 4ch; background: #f6f8fc; border-bottom: 1px solid #c9d4e8; white-space: normal; }
.d .sides { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.d h4 { margin: 2px 0 4px; font-size: 12px; }
.d .api { color: #345; font-style: italic; }
.d .ms { color: #555; margin-top: 4px; }
.m { white-space: pre; }
.m .mn { color: #0b4f8a; }
.m.hl { background: #ffe08a; }
.diffs table { border-collapse: collapse; margin-bottom: 6px; }
.diffs td { padding: 0 8px 0 0; white-space: pre; }
.diffs td.fa { color: #a0001a; } .diffs td.fb { color: #006b2d; }
.empty { padding: 10px; color: #666; }
</style></head>
<body>
<header><h1 id="title">cudatool ab</h1><div class="files" id="files"></div><div id="notes"></div>
<pre id="verdict"></pre></header>
<div id="toolbar"><input id="filter" type="search" placeholder="filter: an expression (status!=NV_OK, call=NV_ESC_RM_FREE, ctrl=NV2080_*, divergent, kind=missing_call …) or any text" spellcheck="false" autocomplete="off">
<span id="mode"></span><label><input type="checkbox" id="only"> divergences only</label>
<button id="prev" title="previous divergence">&#9650;</button><button id="next" title="next divergence">&#9660;</button><button id="gofirst">first divergence</button><span id="count"></span></div>
<div id="list"><div id="canvas"><div id="window"></div></div></div>
)HTML";

const std::string_view kAbHtmlTail = R"HTML(<script>
"use strict";
(function () {
const D = JSON.parse(document.getElementById("ab-data").textContent);
// Positions in an event (ab_html.cpp).
const EV = {summary: 0, sys: 1, call: 2, cmd: 3, cmdName: 4, cls: 5, clsName: 6, status: 7, statusName: 8,
  errno: 9, errnoName: 10, device: 11, path: 12, tid: 13, pid: 14, seq: 15, fd: 16, client: 17, parent: 18,
  object: 19, request: 20, ret: 21, t: 22, dur: 23, flags: 24, argStruct: 25, args: 26, paramsStruct: 27,
  params: 28, notes: 29, api: 30, hex: 31};
const OPS = ["match", "change", "missing", "extra"];
const KIND_CLASS = ["k-missing", "k-extra", "k-status", "k-parameters", "k-return"];
const H = 18, OVERSCAN = 12;
const rows = D.rows, nrows = rows.length / 4;
const sides = {a: D.a, b: D.b};
const cache = {a: [], b: []};
const $ = (id) => document.getElementById(id);
const list = $("list"), canvas = $("canvas"), win = $("window");

function chunk(side, c) {
  let v = cache[side][c];
  if (v === undefined) {
    const el = document.getElementById(side + c);
    v = el ? JSON.parse(el.textContent) : [];
    cache[side][c] = v;
  }
  return v;
}
function ev(side, i) { return i < 0 ? null : chunk(side, Math.floor(i / D.chunk))[i % D.chunk]; }
function s(side, id) { return sides[side].strings[id] || ""; }
function esc(t) { return String(t).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }

// ---- the filter: the decode filter language (docs/decode.md), or a substring -----------------
const FIELDS = {sys: "sys", call: "call", escape: "call", ctrl: "ctrl", control: "ctrl", cmd: "ctrl",
  class: "class", status: "status", errno: "errno", device: "device", path: "path", tid: "tid", pid: "pid",
  seq: "seq", fd: "fd", t: "t", dur: "dur", client: "client", parent: "parent", object: "object",
  handle: "handle", request: "request", req: "request", ret: "ret", kind: "kind", index: "index",
  api: "api"};
const FLAGS = ["failed", "unknown", "notes", "partial", "divergent"];
function lex(src) {
  const out = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) { i++; continue; }
    const two = src.substr(i, 2);
    if (two === "&&") { out.push({t: "and"}); i += 2; continue; }
    if (two === "||") { out.push({t: "or"}); i += 2; continue; }
    if (two === "!=" || two === "==" || two === "<=" || two === ">=") { out.push({t: "op", v: two === "==" ? "=" : two}); i += 2; continue; }
    if (c === "=" || c === "<" || c === ">") { out.push({t: "op", v: c}); i++; continue; }
    if (c === "!") { out.push({t: "not"}); i++; continue; }
    if (c === "(" || c === ")") { out.push({t: c}); i++; continue; }
    let w = "";
    while (i < src.length) {
      const d = src[i];
      if (d === "'" || d === '"') {
        const j = src.indexOf(d, i + 1);
        if (j < 0) throw new Error("unclosed quote");
        w += src.slice(i + 1, j); i = j + 1; continue;
      }
      if (d === "[") { const j = src.indexOf("]", i + 1); if (j < 0) throw new Error("unclosed ["); w += src.slice(i, j + 1); i = j + 1; continue; }
      if (/[\s()=<>!&|]/.test(d)) break;
      w += d; i++;
    }
    if (!w) throw new Error("unexpected " + src[i]);
    const lw = w.toLowerCase();
    out.push(lw === "and" || lw === "or" || lw === "not" ? {t: lw} : {t: "word", v: w});
  }
  return out;
}
function parse(src) {
  const toks = lex(src);
  let p = 0;
  const peek = () => toks[p] || {t: "end"};
  function expr() { let l = conj(); while (peek().t === "or") { p++; l = {or: [l, conj()]}; } return l; }
  function conj() {
    let l = unary();
    for (;;) {
      const t = peek().t;
      if (t === "and") { p++; l = {and: [l, unary()]}; } else if (t === "word" || t === "not" || t === "(") { l = {and: [l, unary()]}; } else break;
    }
    return l;
  }
  function unary() {
    const t = peek();
    if (t.t === "not") { p++; return {not: unary()}; }
    if (t.t === "(") { p++; const e = expr(); if (peek().t !== ")") throw new Error("( not closed"); p++; return e; }
    if (t.t !== "word") throw new Error("expected a condition");
    p++;
    const name = t.v.toLowerCase();
    if (peek().t === "op") {
      const op = toks[p++].v;
      const v = peek();
      if (v.t !== "word") throw new Error("expected a value");
      p++;
      const field = FIELDS[name];
      if (!field) throw new Error("unknown field " + name);
      if ((op[0] === "<" || op[0] === ">") && !/^(tid|pid|seq|fd|t|dur|ret|index|request|client|parent|object|handle)$/.test(field)) throw new Error(field + " is compared with = or !=");
      const values = v.v.split(",").filter((x) => x.length).map((x) => value(field, x));
      if (!values.length) throw new Error("expected a value");
      return {field, op, values};
    }
    if (FLAGS.indexOf(name) < 0) throw new Error("unknown flag " + name);
    return {flag: name};
  }
  const e = expr();
  if (p !== toks.length) throw new Error("unexpected " + (toks[p].v || toks[p].t));
  return e;
}
function number(x) {
  if (/^-?0x[0-9a-f]+$/i.test(x)) return (x[0] === "-" ? -1 : 1) * parseInt(x.replace("-", ""), 16);
  if (/^-?[0-9]+$/.test(x)) return parseInt(x, 10);
  return null;
}
function time(x) {
  const m = /^([0-9.]+)\s*(ns|us|µs|ms|s)?$/i.exec(x);
  if (!m) return null;
  const k = {ns: 1, us: 1e3, "µs": 1e3, ms: 1e6, s: 1e9}[(m[2] || "ns").toLowerCase()];
  return parseFloat(m[1]) * k;
}
function glob(x) {
  let r = "";
  for (let i = 0; i < x.length; i++) {
    const c = x[i];
    if (c === "*") r += ".*"; else if (c === "?") r += ".";
    else if (c === "[") { const j = x.indexOf("]", i + 1); let body = x.slice(i + 1, j); if (body[0] === "!" || body[0] === "^") body = "^" + body.slice(1); r += "[" + body.replace(/\\/g, "\\\\") + "]"; i = j; }
    else r += c.replace(/[.+^${}()|\\\/]/g, "\\$&");
  }
  return new RegExp("^" + r + "$", "i");
}
function value(field, x) {
  if (field === "t" || field === "dur") { const v = time(x); if (v === null) throw new Error("bad time " + x); return {n: v}; }
  const n = /^-?[0-9]/.test(x) ? number(x) : null;
  if (n !== null) return {n};
  if (/^(tid|pid|seq|fd|ret|index|request|client|parent|object|handle)$/.test(field)) throw new Error("bad number " + x);
  return {g: glob(x)};
}
// The values of one field of one event: [number or null, name or ""].
function get(field, side, e, ri, idx) {
  switch (field) {
    case "sys": return [null, s(side, e[EV.sys])];
    case "call": return [null, s(side, e[EV.call])];
    case "ctrl": return [e[EV.cmd], s(side, e[EV.cmdName])];
    case "class": return [e[EV.cls], s(side, e[EV.clsName])];
    case "status": return [e[EV.status], s(side, e[EV.statusName])];
    case "errno": return e[EV.errno] ? [e[EV.errno], s(side, e[EV.errnoName])] : [null, ""];
    case "device": return [null, s(side, e[EV.device])];
    case "path": return [null, s(side, e[EV.path])];
    case "api": return [null, e[EV.api] || ""];
    case "kind": { const d = rows[ri * 4 + 3]; return [null, d < 0 ? "match" : D.kinds[D.divs[d][0]]]; }
    case "index": return [idx, ""];
    default: return [e[EV[field]] === undefined ? null : e[EV[field]], ""];
  }
}
function test(c, side, e, ri, idx) {
  if (c.flag) {
    const f = e[EV.flags];
    switch (c.flag) {
      case "failed": return e[EV.errno] !== 0 || (e[EV.status] !== null && e[EV.status] !== 0);
      case "unknown": return (f & 8) !== 0 && (f & 1) === 0;
      case "notes": return (f & 2) !== 0;
      case "partial": return (f & 4) !== 0;
      case "divergent": return rows[ri * 4 + 3] >= 0;
    }
    return false;
  }
  const fields = c.field === "handle" ? ["client", "parent", "object"] : [c.field];
  const got = fields.map((f) => get(f, side, e, ri, idx));
  const one = (g, v) => {
    if (v.g) return g[1] !== "" && v.g.test(g[1]);
    if (g[0] === null) return null;
    switch (c.op) {
      case "<": return g[0] < v.n; case "<=": return g[0] <= v.n;
      case ">": return g[0] > v.n; case ">=": return g[0] >= v.n;
    }
    return g[0] === v.n;
  };
  const present = got.some((g) => g[0] !== null || g[1] !== "");
  if (!present) return false;  // a missing field is false for = and != alike
  const any = c.values.some((v) => got.some((g) => one(g, v) === true));
  return c.op === "!=" ? !any : any;
}
function evalNode(n, side, e, ri, idx) {
  if (n.and) return evalNode(n.and[0], side, e, ri, idx) && evalNode(n.and[1], side, e, ri, idx);
  if (n.or) return evalNode(n.or[0], side, e, ri, idx) || evalNode(n.or[1], side, e, ri, idx);
  if (n.not) return !evalNode(n.not, side, e, ri, idx);
  return test(n, side, e, ri, idx);
}

// ---- the list -----------------------------------------------------------------------------
let view = new Int32Array(nrows);  // rows shown, in order
for (let k = 0; k < nrows; k++) view[k] = k;
let nview = nrows;
const open = new Map();  // row → measured height of its details
let openTops = [];       // [view position, extra height], sorted by position

function posOf(row) { let lo = 0, hi = nview - 1; while (lo <= hi) { const m = (lo + hi) >> 1; if (view[m] < row) lo = m + 1; else if (view[m] > row) hi = m - 1; else return m; } return -1; }
function recount() {
  openTops = [];
  for (const [row, h] of open) { const p = posOf(row); if (p >= 0) openTops.push([p, h]); }
  openTops.sort((x, y) => x[0] - y[0]);
  let extra = 0;
  for (const o of openTops) extra += o[1];
  canvas.style.height = (nview * H + extra) + "px";
}
function topOf(p) { let t = p * H; for (const o of openTops) { if (o[0] < p) t += o[1]; else break; } return t; }
function posAt(y) { let lo = 0, hi = nview; while (lo < hi) { const m = (lo + hi) >> 1; if (topOf(m + 1) <= y) lo = m + 1; else hi = m; } return Math.min(lo, Math.max(0, nview - 1)); }

function rowHtml(k) {
  const op = rows[k * 4], a = rows[k * 4 + 1], b = rows[k * 4 + 2], d = rows[k * 4 + 3];
  const ea = ev("a", a), eb = ev("b", b);
  let cls = "r";
  let mark = " ";
  if (d >= 0) {
    const div = D.divs[d];
    cls += div[1] ? " gone" : " " + KIND_CLASS[div[0]];
    mark = op === 2 ? "-" : op === 3 ? "+" : "!";
  }
  if (k === D.first) { cls += " first"; mark = ">" + mark.trim(); }
  if (open.has(k)) cls += " open";
  const ta = ea ? ea[EV.summary] : "", tb = eb ? eb[EV.summary] : "";
  if (ta === tb) cls += " same";
  const [ca, ra] = split(ta), [cb, rb] = split(tb);
  return '<div class="' + cls + '" data-row="' + k + '"><span>' + esc(mark) + '</span><span class="n">' + (a < 0 ? "." : a) +
    '</span><span class="n">' + (b < 0 ? "." : b) + '</span><span class="at" title="' + esc(ta) + '">' + esc(ca) +
    '</span><span class="ar">' + esc(ra) + '</span><span class="bt" title="' + esc(tb) + '">' + esc(cb) +
    '</span><span class="br">' + esc(rb) + "</span></div>";
}
// "call … → result": the result gets a column of its own, so that it is never cut off.
function split(t) {
  const i = t.lastIndexOf(" \u2192 ");
  return i < 0 ? [t, ""] : [t.slice(0, i), "\u2192 " + t.slice(i + 3)];
}
function membersHtml(side, list, path, depth, hl) {
  let h = "";
  list.forEach((m, i) => {
    const name = s(side, m[0]);
    const p = name ? (path ? path + "." + name : name) : path + "[" + i + "]";
    const label = name || "[" + i + "]";
    const pad = ' style="padding-left:' + (depth * 2) + 'ch"';
    if (Array.isArray(m[1])) {
      const total = m.length > 2 ? " [" + m[2] + "]" : "";
      h += '<div class="m' + (hl.has(p) ? " hl" : "") + '"' + pad + '><span class="mn">' + esc(label) + "</span>" + esc(total) + "</div>";
      h += membersHtml(side, m[1], p, depth + 1, hl);
    } else {
      h += '<div class="m' + (hl.has(p) ? " hl" : "") + '"' + pad + '><span class="mn">' + esc(label) + "</span> = <span class=\"mv\">" + esc(m[1]) + "</span></div>";
    }
  });
  return h;
}
function sideHtml(side, i, hl) {
  const e = ev(side, i);
  const S = side.toUpperCase();
  if (!e) return '<div class="side ' + side + '"><h4>' + S + ": no call here</h4></div>";
  let h = '<div class="side ' + side + '"><h4>' + S + " #" + i + " · seq " + e[EV.seq] + " · tid " + e[EV.tid] +
    " · t " + (e[EV.t] / 1e9).toFixed(6) + " s · " + esc(s(side, e[EV.path]) || s(side, e[EV.sys])) + "</h4>";
  if (e[EV.api]) h += '<div class="api">during ' + esc(e[EV.api]) + "</div>";
  h += "<div>" + esc(s(side, e[EV.call]) || s(side, e[EV.sys])) + (e[EV.errno] ? " = -1 " + esc(s(side, e[EV.errnoName]) || e[EV.errno]) : "") + "</div>";
  if (e[EV.argStruct] || e[EV.args].length) h += '<div class="ms">' + esc(s(side, e[EV.argStruct]) || "arguments") + "</div>" + membersHtml(side, e[EV.args], "arg", 1, hl);
  if (e[EV.paramsStruct] || e[EV.params].length) h += '<div class="ms">' + esc(s(side, e[EV.paramsStruct]) || "parameters") + "</div>" + membersHtml(side, e[EV.params], "params", 1, hl);
  if (e[EV.hex]) h += '<div class="m">hex = ' + esc(e[EV.hex]) + "</div>";
  for (const n of e[EV.notes]) h += '<div class="ms">' + esc(n) + "</div>";
  return h + "</div>";
}
function detailsHtml(k) {
  const d = rows[k * 4 + 3];
  const hl = new Set();
  let h = '<div class="d" data-details="' + k + '">';
  if (d >= 0) {
    const div = D.divs[d];
    h += '<div class="diffs"><b>' + esc(D.kinds[div[0]].replace(/_/g, " ")) + (div[1] ? " (not made: the run had ended)" : "") + "</b>";
    if (div[2].length) {
      h += "<table><tr><td>member</td><td>A</td><td>B</td></tr>";
      for (const f of div[2]) {
        hl.add(f[0].replace(/ .*$/, ""));
        h += "<tr><td>" + esc(f[0] + (f[1] ? " (" + f[1] + ")" : "")) + '</td><td class="fa">' + esc(f[2]) + '</td><td class="fb">' + esc(f[3]) + "</td></tr>";
      }
      h += "</table>";
    }
    h += "</div>";
  }
  h += '<div class="sides">' + sideHtml("a", rows[k * 4 + 1], hl) + sideHtml("b", rows[k * 4 + 2], hl) + "</div></div>";
  return h;
}
let drawn = [-1, -1];
function draw(force) {
  if (nview === 0) { win.innerHTML = '<div class="empty">no call matches the filter</div>'; win.style.top = "0px"; drawn = [-1, -1]; return; }
  const top = list.scrollTop, bottom = top + list.clientHeight;
  const p0 = Math.max(0, posAt(top) - OVERSCAN);
  let p1 = posAt(bottom) + OVERSCAN;
  p1 = Math.min(nview - 1, p1);
  if (!force && drawn[0] === p0 && drawn[1] === p1) return;
  drawn = [p0, p1];
  let h = "";
  for (let p = p0; p <= p1; p++) { const k = view[p]; h += rowHtml(k); if (open.has(k)) h += detailsHtml(k); }
  win.style.top = topOf(p0) + "px";
  win.innerHTML = h;
  let changed = false;
  for (const el of win.querySelectorAll(".d")) {
    const k = +el.dataset.details, ht = el.offsetHeight;
    if (open.get(k) !== ht) { open.set(k, ht); changed = true; }
  }
  if (changed) { recount(); draw(true); }
}
function scrollToRow(k, where) {
  const p = posOf(k);
  if (p < 0) return;
  list.scrollTop = Math.max(0, topOf(p) - list.clientHeight * where);
  draw(true);
}
win.addEventListener("click", (e) => {
  const r = e.target.closest(".r");
  if (!r) return;
  const k = +r.dataset.row;
  if (open.has(k)) open.delete(k); else open.set(k, 0);
  recount();
  draw(true);
});
list.addEventListener("scroll", () => draw(false));
window.addEventListener("resize", () => draw(true));

// ---- applying the filter --------------------------------------------------------------------
let state = {mode: "all"};
function applyFilter() {
  const text = $("filter").value.trim();
  const only = $("only").checked;
  let pred = null, mode = "all";
  if (text) {
    try {
      const ast = parse(text);
      mode = "expression";
      pred = (k) => { const a = rows[k * 4 + 1], b = rows[k * 4 + 2];
        return (a >= 0 && evalNode(ast, "a", ev("a", a), k, a)) || (b >= 0 && evalNode(ast, "b", ev("b", b), k, b)); };
    } catch (err) {
      mode = "text";
      const q = text.toLowerCase();
      pred = (k) => { const a = ev("a", rows[k * 4 + 1]), b = ev("b", rows[k * 4 + 2]);
        return (a && a[EV.summary].toLowerCase().includes(q)) || (b && b[EV.summary].toLowerCase().includes(q)); };
    }
  }
  const v = new Int32Array(nrows);
  let n = 0;
  for (let k = 0; k < nrows; k++) {
    if (only && rows[k * 4 + 3] < 0) continue;
    if (pred && !pred(k)) continue;
    v[n++] = k;
  }
  view = v; nview = n;
  state = {mode};
  $("mode").textContent = mode === "all" ? "" : mode === "expression" ? "(filter expression)" : "(text)";
  $("count").textContent = n + " of " + nrows + " rows";
  recount();
  list.scrollTop = 0;
  draw(true);
}
let timer = 0;
$("filter").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(applyFilter, 120); });
$("filter").addEventListener("keydown", (e) => { if (e.key === "Enter") { clearTimeout(timer); applyFilter(); } });
$("only").addEventListener("change", applyFilter);
function divergenceFrom(p, step) {
  for (let q = p + step; q >= 0 && q < nview; q += step) if (rows[view[q] * 4 + 3] >= 0) return view[q];
  return -1;
}
$("next").addEventListener("click", () => { const k = divergenceFrom(posAt(list.scrollTop + list.clientHeight / 3), 1); if (k >= 0) scrollToRow(k, 1 / 3); });
$("prev").addEventListener("click", () => { const k = divergenceFrom(posAt(list.scrollTop + list.clientHeight / 3), -1); if (k >= 0) scrollToRow(k, 1 / 3); });
$("gofirst").addEventListener("click", () => { if (D.first >= 0) scrollToRow(D.first, 1 / 3); });

// ---- opening --------------------------------------------------------------------------------
$("title").textContent = "cudatool ab: " + (D.first < 0 ? "equivalent" : "divergent");
$("files").textContent = "A: " + D.a.text + "\nB: " + D.b.text;
$("notes").textContent = D.notes.join("\n");
$("verdict").textContent = D.verdict.join("\n");
document.title = "cudatool ab — " + D.a.text.split(" — ")[0] + " vs " + D.b.text.split(" — ")[0];
$("count").textContent = nrows + " of " + nrows + " rows";
recount();
if (D.first >= 0) scrollToRow(D.first, 1 / 3); else draw(true);
window.abPage = {ready: true, rows: nrows, shown: () => nview, mode: () => state.mode, first: D.first};
})();
</script>
</body></html>
)HTML";

}  // namespace cudatool::cli
