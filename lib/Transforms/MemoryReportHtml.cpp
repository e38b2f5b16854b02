//===- MemoryReportHtml.cpp - The memory plan as one HTML page -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What `infir2-compile --report-memory=html -o FILE` writes: one
// self-contained page (no network: the data as JSON in the page, the chart
// drawn by its own script as SVG) with the training step's memory over its
// ops by category, the peak and what is live at it, every GEMM's precision
// decision, what was recomputed and why, and the predicted step time.
//
//===----------------------------------------------------------------------===//

#include "infir2/Transforms/MemoryPlan.h"

#include "infir2/Dialect/FP8/IR/FP8Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"
#include "infir2/Transforms/StepTime.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace infir2;
namespace json = llvm::json;

namespace {

/// "model.layers.0.mlp.gate_proj" for a named location, "model.mlir:12"
/// for a file's, else the location printed.
std::string whereOf(Location loc) {
  if (auto named = dyn_cast<NameLoc>(loc))
    return named.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (llvm::sys::path::filename(file.getFilename().getValue()) + ":" +
            Twine(file.getLine()))
        .str();
  if (auto fused = dyn_cast<FusedLoc>(loc);
      fused && !fused.getLocations().empty())
    return whereOf(fused.getLocations().front());
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

std::string typeText(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

json::Array bytesArray(const std::array<int64_t, kNumMemoryCategories> &a) {
  json::Array out;
  for (int64_t b : a)
    out.push_back(b);
  return out;
}

/// Every GEMM of the step with its precision decision.
json::Array gemmsOf(func::FuncOp step) {
  json::Array out;
  step.walk([&](Operation *op) {
    auto gemm = dyn_cast<GemmOpInterface>(op);
    bool scaled = op->getName().getStringRef() == "fp8.scaled_matmul";
    if (!gemm && !scaled)
      return;
    json::Object row{
        {"op", op->getName().getStringRef().str()},
        {"where", whereOf(op->getLoc())},
        {"result", typeText(op->getResult(0).getType())},
        {"recomputed", op->hasAttr(Infir2Dialect::getRecomputeAttrName())}};
    if (auto d = op->getAttrOfType<fp8::DecisionAttr>("fp8.decision")) {
      row["precision"] = fp8::stringifyPrecision(d.getPrecision()).str();
      row["role"] = fp8::stringifyGemmRole(d.getRole()).str();
      row["reason"] = d.getReason().str();
    } else {
      row["precision"] = scaled ? "fp8" : "high";
      if (auto role = op->getAttrOfType<StringAttr>(
              Infir2Dialect::getGemmRoleAttrName()))
        row["role"] = role.getValue().str();
      else
        row["role"] = "fprop";
      row["reason"] = "";
    }
    out.push_back(std::move(row));
  });
  return out;
}

const char *kPage = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>InfiR2 memory plan</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; font-size: 12px; }
td, th { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
#legend span { display: inline-block; margin-right: 14px; }
#legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
#peak { font-size: 16px; font-weight: 600; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; }
</style></head><body>
<h1 id="title">InfiR2 memory plan</h1>
<p id="peak"></p>
<div id="legend"></div>
<svg id="chart" width="1150" height="380" role="img" aria-label="memory over the step"></svg>
<h2>The step's own memory (the scratch arena, without the state)</h2>
<svg id="scratch" width="1150" height="380" role="img" aria-label="scratch memory over the step"></svg>
<h2>Live at the peak (the largest scratch buffers)</h2>
<table id="live"><tr><th>op</th><th>where</th><th>type</th><th>category</th><th>MiB</th></tr></table>
<h2>GEMMs and their precision</h2>
<p id="gemm-summary"></p>
<table id="gemms"><tr><th>op</th><th>where</th><th>role</th><th>precision</th><th>result</th><th>reason</th></tr></table>
<h2>Recomputed for the backward pass</h2>
<table id="recomputed"><tr><th>op</th><th>where</th><th>why</th></tr></table>
<h2>Predicted step time</h2>
<pre id="time"></pre>
<script type="application/json" id="plan">@DATA@</script>
<script>
"use strict";
const plan = JSON.parse(document.getElementById("plan").textContent);
const GiB = 1024 * 1024 * 1024, MiB = 1024 * 1024;
const colors = ["#4e79a7", "#a0cbe8", "#f28e2b", "#ffbe7d", "#59a14f",
                "#8cd17d", "#e15759", "#b07aa1", "#bab0ac", "#d37295"];
const el = (tag, attrs, text) => {
  const e = document.createElementNS(tag === "svg" || attrs.svg ?
      "http://www.w3.org/2000/svg" : "http://www.w3.org/1999/xhtml", tag);
  for (const [k, v] of Object.entries(attrs)) if (k !== "svg") e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};
const row = (table, cells, numeric) => {
  const tr = document.createElement("tr");
  cells.forEach((c, i) => { const td = document.createElement("td");
    td.textContent = c; if (numeric && numeric.includes(i)) td.className = "n";
    tr.appendChild(td); });
  document.getElementById(table).appendChild(tr);
};
const stateTotal = plan.state.reduce((a, b) => a + b, 0);
const totals = plan.timeline.map(t => stateTotal + t.reduce((a, b) => a + b, 0));
const peak = totals.length ? Math.max(...totals) : stateTotal;
const peakOp = plan.ops[plan.peakAt] || {name: "", where: ""};
document.getElementById("title").textContent =
  `InfiR2 memory plan: ${plan.batch} x ${plan.seq} tokens, vocabulary ${plan.vocab}` +
  (plan.zero1 ? `, per rank of ${plan.zero1} (ZeRO-1)` : "");
document.getElementById("peak").textContent =
  `Peak: ${(peak / GiB).toFixed(3)} GiB (state ${(stateTotal / GiB).toFixed(3)} + scratch ` +
  `${((peak - stateTotal) / GiB).toFixed(3)}) at op #${plan.peakAt}, ${peakOp.name} ` +
  `(${peakOp.where}); the trainer allocates ${(plan.allocated / GiB).toFixed(3)} GiB.`;
const legend = document.getElementById("legend");
plan.categories.forEach((name, c) => {
  const total = plan.state[c] + Math.max(0, ...plan.timeline.map(t => t[c]));
  if (total === 0) return;
  const s = document.createElement("span");
  const i = document.createElement("i"); i.style.background = colors[c];
  s.appendChild(i); s.appendChild(document.createTextNode(name));
  legend.appendChild(s);
});
// A stacked chart of the categories over the step's ops into the SVG `id`;
// with `withState` the state region lies under the step's scratch.
const chart = (id, withState) => {
  const svg = document.getElementById(id);
  const W = 1150, H = 380, L = 70, B = 30, T = 10;
  const n = Math.max(plan.timeline.length, 1);
  const at = (i, c) => (withState ? plan.state[c] : 0) +
      (plan.timeline.length ? plan.timeline[Math.min(i, n - 1)][c] : 0);
  let top = 0;
  for (let i = 0; i < n; ++i)
    top = Math.max(top, plan.categories.reduce((a, _, c) => a + at(i, c), 0));
  const x = i => L + (W - L - 10) * i / n, y = b => H - B - (H - B - T) * b / (top || 1);
  const base = new Array(n + 1).fill(0);
  plan.categories.forEach((name, c) => {
    const upper = base.map((v, i) => v + at(i, c));
    if (upper.every((v, i) => v === base[i])) return;
    let d = `M ${x(0)} ${y(base[0])}`;
    for (let i = 0; i <= n; ++i) d += ` L ${x(i)} ${y(upper[i])}`;
    for (let i = n; i >= 0; --i) d += ` L ${x(i)} ${y(base[i])}`;
    const p = el("path", {svg: 1, d: d + " Z", fill: colors[c], stroke: "none"});
    p.appendChild(el("title", {svg: 1}, name));
    svg.appendChild(p);
    for (let i = 0; i <= n; ++i) base[i] = upper[i];
  });
  const unit = top >= GiB ? [GiB, "GiB", 1] : [MiB, "MiB", 0];
  for (let g = 0; g <= 4; ++g) {
    const b = top * g / 4;
    svg.appendChild(el("text", {svg: 1, x: 4, y: y(b) + 4, "font-size": 11},
                        `${(b / unit[0]).toFixed(unit[2])} ${unit[1]}`));
  }
  const mark = (i, label, color) => {
    svg.appendChild(el("line", {svg: 1, x1: x(i), x2: x(i), y1: T, y2: H - B,
                                 stroke: color, "stroke-dasharray": "4 3"}));
    svg.appendChild(el("text", {svg: 1, x: x(i) + 4, y: H - 12, "font-size": 11,
                                 fill: color}, label));
  };
  if (plan.lossAt >= 0) mark(plan.lossAt, "loss: the backward pass starts", "#555");
  const shown = withState ? peak : peak - stateTotal;
  mark(plan.peakAt, `peak ${(shown / unit[0]).toFixed(unit[2] + 2)} ${unit[1]}`, "#c00");
  svg.appendChild(el("text", {svg: 1, x: L, y: H - 1, "font-size": 11},
                      `the training step's ${n} ops, in the order they run`));
};
chart("chart", true);
chart("scratch", false);
plan.atPeak.forEach(b => row("live", [b.op, b.where, b.type, b.category,
                                      (b.bytes / MiB).toFixed(1)], [4]));
const counts = {};
plan.gemms.forEach(g => {
  counts[g.precision] = (counts[g.precision] || 0) + 1;
  row("gemms", [g.op + (g.recomputed ? " (recomputed)" : ""), g.where, g.role,
                g.precision, g.result, g.reason]);
});
document.getElementById("gemm-summary").textContent =
  `${plan.gemms.length} GEMMs: ` + Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(", ");
if (!plan.recomputed.length) row("recomputed", ["(nothing recomputed)", "", ""]);
plan.recomputed.forEach(r => row("recomputed", [r.op, r.where, r.why]));
document.getElementById("time").textContent = plan.stepTime;
</script></body></html>
)html";

} // namespace

void infir2::printMemoryReportHtml(const ModelPlan &plan, ModuleOp module,
                                   const StepTimeTarget &target,
                                   llvm::raw_ostream &os) {
  const FunctionPlan *train = nullptr;
  for (const FunctionPlan &f : plan.functions)
    if (f.symbol == rtir::RuntimeDialect::getStepSymbols()[0])
      train = &f;
  json::Array categories, timeline, ops, atPeak, recomputed;
  for (int c = 0; c < kNumMemoryCategories; ++c)
    categories.push_back(
        memoryCategoryName(static_cast<MemoryCategory>(c)).str());
  if (train) {
    for (const auto &t : train->timeline)
      timeline.push_back(bytesArray(t));
    for (Operation *op : train->schedule)
      ops.push_back(json::Object{{"name", op->getName().getStringRef().str()},
                                 {"where", whereOf(op->getLoc())}});
    for (const FunctionPlan::LiveBuffer &b : train->atPeak) {
      if (atPeak.size() == 30)
        break;
      Operation *def = b.value.getDefiningOp();
      atPeak.push_back(json::Object{
          {"op", def ? def->getName().getStringRef().str() : "argument"},
          {"where", whereOf(b.value.getLoc())},
          {"type", typeText(b.value.getType())},
          {"category", memoryCategoryName(b.category).str()},
          {"bytes", b.bytes}});
    }
  }
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  json::Array gemms = step ? gemmsOf(step) : json::Array();
  if (step)
    step.walk([&](Operation *op) {
      if (auto why = op->getAttrOfType<StringAttr>(
              Infir2Dialect::getRecomputeAttrName()))
        recomputed.push_back(
            json::Object{{"op", op->getName().getStringRef().str()},
                         {"where", whereOf(op->getLoc())},
                         {"why", why.getValue().str()}});
    });
  std::string stepTime;
  llvm::raw_string_ostream time(stepTime);
  printStepTimeReport(module, target, time);
  json::Object data{{"batch", plan.batch},
                    {"seq", plan.seqLen},
                    {"vocab", plan.vocab},
                    {"zero1", plan.zero1WorldSize},
                    {"allocated", plan.stateBytes + plan.scratchBytes},
                    {"categories", std::move(categories)},
                    {"state", bytesArray(stateByCategory(plan))},
                    {"timeline", std::move(timeline)},
                    {"ops", std::move(ops)},
                    {"peakAt", train ? train->peakAt : 0},
                    {"lossAt", train ? train->lossAt : -1},
                    {"atPeak", std::move(atPeak)},
                    {"gemms", std::move(gemms)},
                    {"recomputed", std::move(recomputed)},
                    {"stepTime", stepTime}};
  std::string text;
  llvm::raw_string_ostream js(text);
  js << json::Value(std::move(data));
  // Inside <script>: no markup at all ("</script>", "<!--" would end or
  // bend it), so every <, > and & is a JSON escape.
  std::string escaped;
  for (char ch : text)
    escaped += ch == '<'   ? "\\u003c"
               : ch == '>' ? "\\u003e"
               : ch == '&' ? "\\u0026"
                           : std::string(1, ch);
  StringRef page(kPage);
  size_t at = page.find("@DATA@");
  os << page.take_front(at) << escaped << page.drop_front(at + 6);
}
