// The HTML report's inline stylesheet and plotting script: the page must open offline, from one file.
#include "html_report_assets.h"

namespace gauntlet::html_assets {

const char* const kStyle = R"CSS(
:root { --pass: #2e7d32; --fail: #c62828; --error: #ef6c00; --harness: #6a1b9a; --skip: #9e9e9e;
        --incomplete: #78909c; --unsafe: #a67c00; --ink: #1d2125; --muted: #5f6b76; --line: #d8dde2; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       background: var(--bg); }
header, main { max-width: 1180px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 18px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 0 0 8px; }
.meta { color: var(--muted); margin: 0 0 14px; word-break: break-all; }
.tiles { display: flex; flex-wrap: wrap; gap: 10px; margin-bottom: 16px; }
.tile { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 110px; }
.tile b { display: block; font-size: 22px; }
.tile.pass b { color: var(--pass); } .tile.fail b { color: var(--fail); } .tile.error b { color: var(--error); }
.tile.unsafe b { color: var(--unsafe); }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 14px; }
section.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; margin-bottom: 14px; }
.card p.note { color: var(--muted); margin: 4px 0 0; font-size: 12px; }
svg.plot { width: 100%; height: auto; display: block; }
svg.plot text { font-size: 11px; fill: var(--ink); }
svg.plot text.value, svg.plot text.axis { fill: var(--muted); }
svg.plot .empty { fill: var(--muted); font-style: italic; }
svg.plot line.axis { stroke: var(--line); }
.bar.pass { fill: var(--pass); } .bar.fail { fill: var(--fail); } .bar.error { fill: var(--error); }
.bar.harness-error { fill: var(--harness); } .bar.skip { fill: var(--skip); } .bar.incomplete { fill: var(--incomplete); }
.bar.unsafe { fill: var(--unsafe); }
.bar.count { fill: #546e7a; } .bar.hist { fill: #1565c0; }
.bar:hover { opacity: .8; }
.legend { display: flex; gap: 12px; flex-wrap: wrap; font-size: 12px; color: var(--muted); margin-top: 4px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; border-radius: 2px; vertical-align: -1px; }
.legend .pass { background: var(--pass); } .legend .fail { background: var(--fail); } .legend .error { background: var(--error); }
.legend .harness-error { background: var(--harness); } .legend .skip { background: var(--skip); }
.legend .incomplete { background: var(--incomplete); } .legend .unsafe { background: var(--unsafe); }
.filters { display: flex; gap: 10px; flex-wrap: wrap; align-items: center; margin-bottom: 8px; }
.filters input { min-width: 240px; }
table { width: 100%; border-collapse: collapse; background: #fff; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid var(--line); }
th { background: #eef1f4; position: sticky; top: 0; }
td.kernel { word-break: break-all; max-width: 280px; }
.verdict { font-weight: 600; text-transform: uppercase; font-size: 12px; }
.verdict.pass { color: var(--pass); } .verdict.fail { color: var(--fail); } .verdict.error { color: var(--error); }
.verdict.incomplete { color: var(--incomplete); } .verdict.unsafe { color: var(--unsafe); }
.gate { margin-bottom: 6px; }
.gate .name { font-weight: 600; }
.gate .status { font-size: 11px; text-transform: uppercase; margin-left: 4px; }
.gate .status.fail { color: var(--fail); } .gate .status.error { color: var(--error); }
.gate .status.harness-error { color: var(--harness); }
.gate .cat { color: var(--muted); margin-left: 4px; }
.gate .scope.out-of-contract { color: var(--unsafe); border: 1px solid var(--unsafe); border-radius: 3px; font-size: 11px;
                               padding: 0 4px; margin-left: 6px; }
.msg { white-space: pre-wrap; word-break: break-word; margin: 2px 0; }
code.replay { display: inline-block; background: #eef1f4; padding: 1px 6px; border-radius: 3px; font-size: 12px;
              word-break: break-all; user-select: all; }
details summary { cursor: pointer; color: var(--muted); }
.cause { margin-bottom: 6px; padding-left: 6px; border-left: 3px solid var(--fail); word-break: break-word; }
.cause .name { font-weight: 600; margin-right: 4px; }
.check { font-size: 12px; font-weight: 600; } .check.accept { color: var(--pass); } .check.reject { color: var(--fail); }
.check.error { color: var(--error); }
.flag { display: inline-block; margin-top: 4px; font-size: 11px; color: #fff; background: var(--harness);
        border-radius: 3px; padding: 0 4px; }
table.matrix { width: auto; } table.matrix td { text-align: right; min-width: 90px; font-size: 16px; }
table.matrix td.flagged { background: var(--harness); color: #fff; font-weight: 600; }
.none { color: var(--muted); }
)CSS";

const char* const kScript = R"JS(
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("gauntlet-summary").textContent);

  function el(name, attrs, parent, text) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function tip(e, text) { el("title", {}, e, text); }
  function pct(x) { return (100 * x).toFixed(x > 0 && x < 0.1 ? 1 : 0) + "%"; }
  function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function empty(svg, text) {
    svg.setAttribute("viewBox", "0 0 600 40");
    el("text", {x: 10, y: 24, "class": "empty"}, svg, text);
    return 0;
  }

  // Horizontal bars, one row per item, stacked by `keys`; `right(row)` is the text after the bar.
  function stacked(svg, rows, keys, right) {
    if (!rows.length) return empty(svg, "no data");
    var W = 600, L = 130, R = 118, H = 22, top = 6, max = 0;
    rows.forEach(function (r) {
      var t = 0;
      keys.forEach(function (k) { t += r[k] || 0; });
      max = Math.max(max, t);
    });
    var h = top + rows.length * H + 6, drawn = 0;
    svg.setAttribute("viewBox", "0 0 " + W + " " + h);
    rows.forEach(function (r, i) {
      var y = top + i * H;
      tip(el("text", {x: L - 8, y: y + 15, "text-anchor": "end", "class": "label"}, svg, short(r.name, 20)), r.name);
      var x = L;
      keys.forEach(function (k) {
        var n = r[k] || 0;
        if (!n) return;
        var w = max > 0 ? (W - L - R) * n / max : 0;
        var bar = el("rect", {x: x.toFixed(2), y: y + 3, width: Math.max(w, 1).toFixed(2), height: H - 6,
                              "class": "bar " + k, "data-key": k, "data-count": n}, svg);
        tip(bar, r.name + ": " + n + " " + k);
        x += w;
        drawn++;
      });
      el("text", {x: (x + 6).toFixed(2), y: y + 15, "class": "value"}, svg, right(r));
    });
    return drawn;
  }

  // Vertical histogram of precomputed bins ({label, count}); the note gives n, median and geomean.
  function histogram(svg, hist, what, fmt) {
    var total = hist.values.length;
    if (!total) return empty(svg, "no " + what + " (timing runs only for kernels that pass the twelve gates)");
    var W = 600, L = 30, T = 18, P = 150, B = 64, bins = hist.bins, max = 1, drawn = 0;
    bins.forEach(function (b) { max = Math.max(max, b.count); });
    var bw = (W - L - 8) / bins.length;
    svg.setAttribute("viewBox", "0 0 " + W + " " + (T + P + B));
    el("line", {x1: L, y1: T + P, x2: W - 4, y2: T + P, "class": "axis"}, svg);
    el("text", {x: L - 6, y: T + 4, "text-anchor": "end", "class": "axis"}, svg, String(max));
    el("text", {x: L - 6, y: T + P, "text-anchor": "end", "class": "axis"}, svg, "0");
    bins.forEach(function (b, i) {
      var x = L + i * bw, cx = x + bw / 2;
      if (b.count > 0) {
        var h = P * b.count / max;
        var bar = el("rect", {x: (x + 2).toFixed(2), y: (T + P - h).toFixed(2), width: (bw - 4).toFixed(2),
                              height: h.toFixed(2), "class": "bar hist", "data-bin": i, "data-count": b.count}, svg);
        tip(bar, b.label + ": " + b.count);
        el("text", {x: cx.toFixed(2), y: (T + P - h - 4).toFixed(2), "text-anchor": "middle", "class": "value"}, svg,
           String(b.count));
        drawn++;
      }
      el("text", {x: cx.toFixed(2), y: T + P + 14, "text-anchor": "end",
                  transform: "rotate(-35 " + cx.toFixed(2) + " " + (T + P + 14) + ")"}, svg, b.label);
    });
    var note = svg.parentNode.querySelector(".note");
    if (note) note.textContent = "n = " + total + ", median " + fmt(hist.median) + ", geometric mean " + fmt(hist.geomean);
    return drawn;
  }

  var plots = {
    gates: function (svg) {
      return stacked(svg, data.gates, ["pass", "fail", "error", "harness-error", "skip"], function (r) {
        var failing = r.fail + r.error + r["harness-error"];
        return pct(r.failure_rate) + " failing (" + failing + "/" + (r.total - r.skip) + ")";
      });
    },
    categories: function (svg) {
      var rows = data.categories.map(function (c) { return {name: c.name, count: c.count}; });
      return stacked(svg, rows, ["count"], function (r) { return String(r.count); });
    },
    ops: function (svg) {
      return stacked(svg, data.ops, ["pass", "unsafe", "fail", "error", "incomplete"], function (r) {
        return r.pass + "/" + r.kernels + " pass";
      });
    },
    speedup: function (svg) {
      return histogram(svg, data.speedup, "timed kernels", function (x) { return x.toFixed(2) + "\u00d7"; });
    },
    utilization: function (svg) { return histogram(svg, data.utilization, "timed kernels", pct); }
  };
  var done = 0;
  Array.prototype.forEach.call(document.querySelectorAll("svg.plot"), function (svg) {
    var draw = plots[svg.getAttribute("data-plot")];
    if (!draw) return;
    svg.setAttribute("data-drawn", String(draw(svg)));
    done++;
  });
  document.body.setAttribute("data-plots-drawn", String(done));

  // The kernel table's filters: verdict, op, and free text over the row.
  var rows = Array.prototype.slice.call(document.querySelectorAll("#kernels tbody tr"));
  var fv = document.getElementById("filter-verdict"), fo = document.getElementById("filter-op");
  var fq = document.getElementById("filter-text"), shown = document.getElementById("filter-count");
  data.ops.forEach(function (o) {
    var opt = document.createElement("option");
    opt.value = o.name;
    opt.textContent = o.name + " (" + o.kernels + ")";
    fo.appendChild(opt);
  });
  function apply() {
    var v = fv.value, o = fo.value, q = fq.value.toLowerCase(), n = 0;
    rows.forEach(function (row) {
      var verdict = row.getAttribute("data-verdict");
      var ok = (v === "all" || (v === "failing" ? verdict !== "pass" : verdict === v)) &&
               (o === "all" || row.getAttribute("data-op") === o) &&
               (!q || row.textContent.toLowerCase().indexOf(q) >= 0);
      row.hidden = !ok;
      n += ok ? 1 : 0;
    });
    shown.textContent = n + " of " + rows.length + " kernels shown";
  }
  [fv, fo].forEach(function (e) { e.addEventListener("change", apply); });
  fq.addEventListener("input", apply);
  apply();
})();
)JS";

}  // namespace gauntlet::html_assets
