// trace_html.cc — the HTML report (trace_html.h).
//
// The timeline is drawn on a <canvas>, not as SVG: a trace holds up to ~100k slices, and as many
// SVG elements make the page slow to lay out, to zoom and to hold in memory, while a canvas
// redraws only what is visible (slices narrower than a pixel that fall on an already painted
// pixel are skipped) in a few milliseconds. The data goes in as flat number arrays with a string
// table (8 numbers a slice) rather than the trace's own event objects: a third of the size and
// no per-event object for the browser to build. The summary tables are plain HTML written here, so
// they read the same with scripts off.
#include "trace_html.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace chanflow::tools {
namespace {

using Json = nlohmann::json;

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

// JSON text safe inside <script>: '<' only occurs in JSON strings, where \u003c means the same.
std::string script_json(const Json& j) {
  const std::string text = j.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
  std::string o;
  o.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      o += "\\u003c";
    } else {
      o += c;
    }
  }
  return o;
}

class Strings {
 public:
  int64_t operator()(const std::string& s) {
    auto [it, added] = index_.emplace(s, static_cast<int64_t>(list_.size()));
    if (added) list_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& list() const { return list_; }

 private:
  std::unordered_map<std::string, int64_t> index_;
  std::vector<std::string> list_;
};

std::string wait_text(const Json& wait) {
  std::string w = wait_label(wait.value("kind", ""), wait.value("obj", ""));
  if (auto cases = wait.find("cases"); cases != wait.end() && cases->is_array()) {
    w += " [";
    for (size_t i = 0; i < cases->size(); ++i) {
      const Json& c = (*cases)[i];
      w += (i ? ", " : "") + wait_label(c.value("kind", ""), c.value("obj", ""));
    }
    w += "]";
  }
  return w;
}

// Whether `e` is drawn on its thread's track; a global or process instant spans every track.
bool on_track(const TraceEvent& e) {
  return e.has_tid && e.ph != 'M' && e.ph != 'C' &&
         !(e.ph == 'i' && e.scope != 0 && e.scope != 't');
}

// The timeline's data (the object trace_html.h's page script reads).
Json timeline_data(const Trace& t, const Summary& s) {
  const int64_t t0 = s.start_ns;
  Strings str;
  std::map<std::pair<int64_t, int64_t>, int64_t> track_of;  // (pid, tid) -> track; ordered below
  for (const TraceEvent& e : t.events) {
    if (on_track(e)) track_of.emplace(std::make_pair(e.pid, e.tid), 0);
  }
  Json tracks = Json::array();
  for (auto& [key, idx] : track_of) {
    idx = static_cast<int64_t>(tracks.size());
    auto p = t.process_names.find(key.first);
    auto th = t.thread_names.find(key);
    tracks.push_back(
        (p == t.process_names.end() ? "pid " + std::to_string(key.first) : p->second) + " / " +
        (th == t.thread_names.end() ? "tid " + std::to_string(key.second) : th->second));
  }
  struct Slice {
    int64_t track, ts, dur, name, cat, g, end, wait;
  };
  std::vector<Slice> slices;
  std::map<std::string, std::pair<const TraceEvent*, const TraceEvent*>> flows;  // id -> (s, f)
  Json instants = Json::array();
  std::map<std::pair<int64_t, std::string>, std::vector<const TraceEvent*>> counters;
  for (const TraceEvent& e : t.events) {
    const int64_t track = on_track(e) ? track_of[{e.pid, e.tid}] : -1;
    if (e.ph == 'X' && track >= 0) {
      Slice sl{track, e.ts - t0, e.dur, str(e.name), str(e.cat), -1, -1, -1};
      if (e.cat == "run") {
        sl.g = e.args["g"].get<int64_t>();
        sl.end = str(e.args["end"].get<std::string>());
        if (auto w = e.args.find("wait"); w != e.args.end()) sl.wait = str(wait_text(*w));
      } else if (e.cat == "wait") {  // an OS thread's blocking wait
        if (auto w = e.args.find("wait"); w != e.args.end()) sl.wait = str(wait_text(*w));
      }
      slices.push_back(sl);
    } else if ((e.ph == 's' || e.ph == 'f') && track >= 0) {
      auto& pair = flows[e.cat + "\x1f" + e.id];
      (e.ph == 's' ? pair.first : pair.second) = &e;
    } else if (e.ph == 'i' || e.ph == 'I') {
      std::string label = e.name;
      if (e.cat == "gthread" && e.args.contains("gname") && e.args["gname"].is_string()) {
        label += " " + e.args["gname"].get<std::string>();
      }
      instants.push_back(track);
      instants.push_back(e.ts - t0);
      instants.push_back(str(label));
    } else if (e.ph == 'C') {
      counters[{e.pid, e.name}].push_back(&e);
    }
  }
  std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    return std::tie(a.track, a.ts, b.dur) < std::tie(b.track, b.ts, a.dur);
  });
  Json flat = Json::array();
  for (const Slice& sl : slices) {
    for (int64_t v : {sl.track, sl.ts, sl.dur, sl.name, sl.cat, sl.g, sl.end, sl.wait}) {
      flat.push_back(v);
    }
  }
  Json arrows = Json::array();
  for (const auto& [id, pair] : flows) {
    if (pair.first == nullptr || pair.second == nullptr) continue;
    arrows.push_back(track_of[{pair.first->pid, pair.first->tid}]);
    arrows.push_back(pair.first->ts - t0);
    arrows.push_back(track_of[{pair.second->pid, pair.second->tid}]);
    arrows.push_back(pair.second->ts - t0);
  }
  Json charts = Json::array();
  for (auto& [key, events] : counters) {
    std::stable_sort(events.begin(), events.end(),
                     [](const TraceEvent* a, const TraceEvent* b) { return a->ts < b->ts; });
    std::map<std::string, Json> series;
    for (const TraceEvent* e : events) {
      for (const auto& [k, v] : e->args.items()) {
        if (!v.is_number()) continue;
        Json& pts = series[k];
        pts.push_back(e->ts - t0);
        pts.push_back(v.get<double>());
      }
    }
    auto p = t.process_names.find(key.first);
    Json sj = Json::object();
    for (auto& [k, pts] : series) sj[k] = std::move(pts);
    charts.push_back(
        {{"name", (p == t.process_names.end() ? "pid " + std::to_string(key.first) : p->second) +
                      " / " + key.second},
         {"series", sj}});
  }
  Json gnames = Json::object();
  for (const GreenThreadSummary& g : s.gthreads) gnames[std::to_string(g.g)] = g.name;
  return {{"t0", t0},
          {"span", s.end_ns - s.start_ns},
          {"strings", str.list()},
          {"tracks", tracks},
          {"slices", flat},
          {"flows", arrows},
          {"instants", instants},
          {"counters", charts},
          {"gnames", gnames}};
}

void summary_tables(std::ostringstream& o, const Summary& s, size_t top) {
  auto td = [](const std::string& v, bool num = false) {
    return std::string(num ? "<td class=n>" : "<td>") + esc(v) + "</td>";
  };
  o << "<section id=summary><h2>Summary</h2>\n<table class=kv>"
    << "<tr><th>file</th>" << td(s.file) << "</tr>"
    << "<tr><th>state</th>"
    << td(std::string(s.complete ? "complete" : "INCOMPLETE") +
          (s.truncated ? " (file cut short; events up to the last complete one)" : ""))
    << "</tr><tr><th>span</th>"
    << td(human_duration(s.start_ns) + " .. " + human_duration(s.end_ns) + " (" +
          human_duration(s.end_ns - s.start_ns) + ")")
    << "</tr><tr><th>events</th>" << td(std::to_string(s.events)) << "</tr>"
    << "<tr><th>dropped events</th>" << td(std::to_string(s.dropped_events)) << "</tr>";
  std::string cats;
  for (const auto& [cat, n] : s.events_by_cat) {
    cats += (cats.empty() ? "" : ", ") + (cat.empty() ? std::string("(none)") : cat) + " " +
            std::to_string(n);
  }
  o << "<tr><th>by cat</th>" << td(cats) << "</tr></table>\n";

  o << "<h3>Green threads (" << s.gthreads.size() << ")</h3>\n<table id=gthreads><tr><th>g</th>"
    << "<th>name</th><th>running</th><th>runnable</th><th>blocked</th><th>slices</th>"
    << "<th>state</th><th>blocked on</th></tr>\n";
  // What a thread waited on, one <div> per (kind, object); `noun` counts the waits.
  auto blocked_on = [](const std::vector<BlockedOn>& list, const std::string& noun) {
    std::string on;
    for (const BlockedOn& b : list) {
      std::string label = wait_label(b.kind, b.obj);
      if (!b.cases.empty()) {
        label += " [";
        for (size_t i = 0; i < b.cases.size(); ++i) label += (i ? ", " : "") + b.cases[i];
        label += "]";
      }
      on += "<div>" + esc(label) + ": " + esc(human_duration(b.ns)) + " (" +
            std::to_string(b.count) + " " + noun + (b.count == 1 ? "" : "s") + ")</div>";
    }
    return on;
  };
  for (const GreenThreadSummary& g : s.gthreads) {
    o << "<tr>" << td(std::to_string(g.g), true) << td(g.name)
      << td(human_duration(g.running_ns), true) << td(human_duration(g.runnable_ns), true)
      << td(human_duration(g.blocked_ns), true) << td(std::to_string(g.slices), true)
      << td(g.exited ? "exited" : "live") << "<td>" << blocked_on(g.blocked_on, "park")
      << "</td></tr>\n";
  }
  o << "</table>\n";
  if (!s.os_threads.empty()) {
    o << "<h3>OS threads that blocked (" << s.os_threads.size() << ")</h3>\n<table id=osthreads>"
      << "<tr><th>tid</th><th>name</th><th>blocked</th><th>waits</th><th>blocked on</th></tr>\n";
    for (const OsThreadSummary& t : s.os_threads) {
      o << "<tr>" << td(std::to_string(t.tid), true) << td(t.name)
        << td(human_duration(t.blocked_ns), true) << td(std::to_string(t.waits), true) << "<td>"
        << blocked_on(t.blocked_on, "wait") << "</td></tr>\n";
    }
    o << "</table>\n";
  }

  const size_t shown = std::min(top, s.channels.size());
  o << "<h3>Top channels by blocked time (" << shown << " of " << s.channels.size()
    << ")</h3>\n<table id=channels><tr><th>channel</th><th>total</th><th>send</th><th>recv</th>"
    << "<th>select</th></tr>\n";
  for (size_t i = 0; i < shown; ++i) {
    const ChannelSummary& c = s.channels[i];
    o << "<tr>" << td(c.name) << td(human_duration(c.total_ns()), true)
      << td(human_duration(c.send_ns), true) << td(human_duration(c.recv_ns), true)
      << td(human_duration(c.select_ns), true) << "</tr>\n";
  }
  o << "</table>\n";
  for (size_t first = 0, next; first < s.critical_paths.size(); first = next) {
    for (next = first + 1; next < s.critical_paths.size() &&
                           s.critical_paths[next].pid == s.critical_paths[first].pid;
         ++next) {
    }
    const CriticalPath& p = s.critical_paths[first];
    o << "<h3>Critical path of " << esc(p.process) << " (pid " << p.pid << ")";
    if (p.run >= 0) {
      o << ", run " << p.run;
      if (next - first > 1) o << " (the longest of " << next - first << " runs)";
    }
    o << ": " << p.steps.size() << " nodes, " << esc(human_duration(p.total_ns))
      << "</h3>\n<table class=critical><tr>"
      << "<th>node</th><th>name</th><th>start</th><th>duration</th><th>wait</th></tr>\n";
    for (const CriticalStep& st : p.steps) {
      o << "<tr>" << td(std::to_string(st.node), true) << td(st.name)
        << td(human_duration(st.start_ns), true) << td(human_duration(st.dur_ns), true)
        << td(human_duration(st.wait_ns), true) << "</tr>\n";
    }
    o << "</table>\n";
    if (next - first > 1) {
      const size_t runs_shown = std::min(next - first - 1, top);
      o << "<table class=runs><tr><th>other runs (" << runs_shown << " of " << next - first - 1
        << ")</th><th>nodes</th><th>critical path</th></tr>\n";
      for (size_t k = first + 1; k < first + 1 + runs_shown; ++k) {
        const CriticalPath& r = s.critical_paths[k];
        o << "<tr>" << td("run " + std::to_string(r.run))
          << td(std::to_string(r.steps.size()), true) << td(human_duration(r.total_ns), true)
          << "</tr>\n";
      }
      o << "</table>\n";
    }
  }
  o << "</section>\n";
}

constexpr const char* kStyle = R"css(
body{font:13px/1.4 system-ui,sans-serif;margin:12px;color:#222}
h1{font-size:18px;margin:0 0 8px}h2{font-size:16px;margin:16px 0 6px}h3{font-size:14px;margin:12px 0 4px}
table{border-collapse:collapse;margin-bottom:8px}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}table.kv th{color:#555;font-weight:normal}
#bar{margin:4px 0}#bar button{margin-right:6px}#status{color:#555;margin-left:8px}
#timeline{position:relative;border:1px solid #ccc;overflow:hidden}
#timeline canvas{display:block}
#tip{position:fixed;display:none;background:#fffbe6;border:1px solid #aa9;padding:4px 6px;
font:12px monospace;white-space:pre;pointer-events:none;z-index:2}
)css";

// The page script: reads #trace-data, draws the timeline on the canvas (label column on the
// left, one row per track, one small chart per counter), zooms with the wheel around the pointer,
// pans by dragging, shows a slice's details on hover, and records what it drew on #timeline.
constexpr const char* kScript = R"js(
(function () {
  'use strict';
  const D = JSON.parse(document.getElementById('trace-data').textContent);
  const S = D.strings, sl = D.slices, N = sl.length / 8;
  const LABEL = 190, ROW = 18, CHART = 34, AXIS = 18;
  const box = document.getElementById('timeline'), tip = document.getElementById('tip');
  const cv = document.createElement('canvas'); box.appendChild(cv);
  const ctx = cv.getContext('2d');
  const rows = [];  // {kind:'track'|'counter', index, y, h}
  let y = AXIS;
  D.tracks.forEach((name, i) => { rows.push({kind: 'track', index: i, name: name, y: y, h: ROW}); y += ROW; });
  D.counters.forEach((c, i) => { rows.push({kind: 'counter', index: i, name: c.name, y: y, h: CHART}); y += CHART; });
  const H = Math.max(y + 4, 60);
  // Per track: [first, last) into the slices, which the writer sorted by track then start.
  const ranges = D.tracks.map(() => [0, 0]);
  for (let i = 0; i < N; i++) {
    const r = ranges[sl[i * 8]];
    if (r[1] === 0) r[0] = i;
    r[1] = i + 1;
  }
  const span = Math.max(D.span, 1);
  let v0 = 0, v1 = span, W = 800;
  const hue = g => (g * 137.508) % 360;
  const colours = new Map();  // g (or -1 - name) -> CSS colour, built once each
  function colour(i) {
    const g = sl[i * 8 + 5], key = g >= 0 ? g : -1 - sl[i * 8 + 3];
    let c = colours.get(key);
    if (c !== undefined) return c;
    if (g >= 0) {
      c = 'hsl(' + hue(g) + ',55%,62%)';
    } else {
      let h = 0; const s = S[sl[i * 8 + 3]];
      for (let k = 0; k < s.length; k++) h = (h * 31 + s.charCodeAt(k)) | 0;
      c = 'hsl(' + (Math.abs(h) % 360) + ',25%,70%)';
    }
    colours.set(key, c);
    return c;
  }
  function human(ns) {
    const a = Math.abs(ns);
    if (a < 1000) return Math.round(ns) + 'ns';
    const u = [[1e3, 'us'], [1e6, 'ms'], [1e9, 's']];
    for (let k = 0; k < u.length; k++) {
      const x = a / u[k][0];
      if (x >= 999.5 && k + 1 < u.length) continue;
      return (ns < 0 ? '-' : '') + x.toFixed(x < 9.995 ? 2 : x < 99.95 ? 1 : 0) + u[k][1];
    }
  }
  const X = t => LABEL + (t - v0) / (v1 - v0) * (W - LABEL);
  const T = x => v0 + (x - LABEL) / (W - LABEL) * (v1 - v0);
  let drawn = 0, arrowsInView = 0;
  const MAX_ARROWS = 2000;
  function draw() {
    W = Math.max(box.clientWidth, 400);
    const dpr = window.devicePixelRatio || 1;
    cv.width = W * dpr; cv.height = H * dpr; cv.style.width = W + 'px'; cv.style.height = H + 'px';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11px sans-serif'; ctx.textBaseline = 'middle';
    drawn = 0;
    // Axis: about 8 ticks at a round step.
    const step = Math.pow(10, Math.floor(Math.log10((v1 - v0) / 8)));
    const st = [1, 2, 5, 10].map(m => m * step).find(s => (v1 - v0) / s <= 10);
    ctx.fillStyle = '#555'; ctx.strokeStyle = '#eee';
    // Ticks at round times of the trace's clock (the summary's), not of the view's start.
    for (let a = Math.ceil((v0 + D.t0) / st) * st; a <= v1 + D.t0; a += st) {
      const x = X(a - D.t0); ctx.beginPath(); ctx.moveTo(x, AXIS); ctx.lineTo(x, H); ctx.stroke();
      if (x + 50 < W) ctx.fillText(human(a), x + 2, AXIS / 2);
    }
    ctx.save(); ctx.beginPath(); ctx.rect(LABEL, 0, W - LABEL, H); ctx.clip();
    for (const r of rows) {
      if (r.kind !== 'track') continue;
      const [a, b] = ranges[r.index];
      let lastPx = -1;
      for (let i = a; i < b; i++) {
        const ts = sl[i * 8 + 1], du = sl[i * 8 + 2];
        if (ts > v1 || ts + du < v0) continue;
        const x0 = X(ts), x1 = Math.max(X(ts + du), x0 + 1);
        if (x1 - x0 <= 1 && Math.floor(x0) === lastPx) continue;  // same pixel already painted
        lastPx = Math.floor(x0);
        ctx.fillStyle = colour(i);
        ctx.fillRect(x0, r.y + 2, x1 - x0, r.h - 4);
        drawn++;
        if (x1 - x0 > 40) {
          ctx.fillStyle = '#111';
          ctx.fillText(S[sl[i * 8 + 3]].slice(0, Math.floor((x1 - x0) / 6.5)), Math.max(x0, LABEL) + 2, r.y + r.h / 2);
        }
      }
    }
    // Counters: a step line per series, scaled to the series' own maximum.
    const pal = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];
    for (const r of rows) {
      if (r.kind !== 'counter') continue;
      const series = D.counters[r.index].series;
      Object.keys(series).forEach((k, si) => {
        const p = series[k]; let mx = 0;
        for (let i = 1; i < p.length; i += 2) mx = Math.max(mx, p[i]);
        mx = mx || 1;
        ctx.strokeStyle = pal[si % pal.length]; ctx.beginPath();
        let py = null;
        for (let i = 0; i < p.length; i += 2) {
          const x = X(p[i]), yy = r.y + r.h - 3 - p[i + 1] / mx * (r.h - 8);
          if (py === null) ctx.moveTo(x, yy); else { ctx.lineTo(x, py); ctx.lineTo(x, yy); }
          py = yy;
        }
        if (py !== null) ctx.lineTo(W, py);
        ctx.stroke();
        ctx.fillStyle = pal[si % pal.length];
        ctx.fillText(k + ' max ' + mx, W - 110 - si * 0, r.y + 8 + si * 10);
      });
    }
    // Wake arrows: from the waker's event to the slice where the woken green thread ran next.
    // More than MAX_ARROWS in view are a red smear that takes seconds to rasterise: then none is
    // drawn and the status line says to zoom in. Lines are stroked 256 to a path.
    arrowsInView = 0;
    if (document.getElementById('arrows').checked) {
      const f = D.flows, rowY = t => rows[t].y + ROW / 2, vis = [];
      for (let i = 0; i < f.length; i += 4) {
        if (Math.max(f[i + 1], f[i + 3]) < v0 || Math.min(f[i + 1], f[i + 3]) > v1) continue;
        if (++arrowsInView <= MAX_ARROWS) vis.push(i);
      }
      if (arrowsInView <= MAX_ARROWS) {
        ctx.strokeStyle = 'rgba(200,30,30,0.6)'; ctx.fillStyle = 'rgba(200,30,30,0.8)';
        for (let k = 0; k < vis.length; k += 256) {
          const lines = new Path2D(), heads = new Path2D();
          for (const i of vis.slice(k, k + 256)) {
            const xa = X(f[i + 1]), ya = rowY(f[i]), xb = X(f[i + 3]), yb = rowY(f[i + 2]);
            lines.moveTo(xa, ya); lines.lineTo(xb, yb);
            const ang = Math.atan2(yb - ya, xb - xa);
            heads.moveTo(xb, yb);
            heads.lineTo(xb - 6 * Math.cos(ang - 0.4), yb - 6 * Math.sin(ang - 0.4));
            heads.lineTo(xb - 6 * Math.cos(ang + 0.4), yb - 6 * Math.sin(ang + 0.4));
            heads.closePath();
          }
          ctx.stroke(lines); ctx.fill(heads);
        }
      }
    }
    // Instants: ticks on their track; global ones (marks) as a line across every track.
    const ins = D.instants;
    for (let i = 0; i < ins.length; i += 3) {
      if (ins[i + 1] < v0 || ins[i + 1] > v1) continue;
      const x = X(ins[i + 1]);
      if (ins[i] < 0) {
        ctx.strokeStyle = '#c00'; ctx.setLineDash([4, 3]);
        ctx.beginPath(); ctx.moveTo(x, AXIS); ctx.lineTo(x, H); ctx.stroke(); ctx.setLineDash([]);
        ctx.fillStyle = '#c00'; ctx.fillText(S[ins[i + 2]], x + 3, AXIS + 6);
      } else {
        const r = rows[ins[i]]; ctx.fillStyle = '#333'; ctx.fillRect(x - 0.5, r.y, 1, 5);
      }
    }
    ctx.restore();
    ctx.fillStyle = '#fff'; ctx.fillRect(0, AXIS, LABEL, H);
    ctx.fillStyle = '#222';
    for (const r of rows) ctx.fillText(r.name.slice(0, 30), 4, r.y + Math.min(r.h, ROW) / 2);
    ctx.strokeStyle = '#ccc'; ctx.beginPath(); ctx.moveTo(LABEL, 0); ctx.lineTo(LABEL, H); ctx.stroke();
    document.getElementById('status').textContent =
      N + ' slices on ' + D.tracks.length + ' tracks, ' + D.flows.length / 4 + ' wake arrows' +
      (arrowsInView > MAX_ARROWS ? ' (' + arrowsInView + ' in view: zoom in to draw them), ' : ', ') +
      D.counters.length + ' counters; showing ' + human(v0 + D.t0) + ' .. ' + human(v1 + D.t0);
  }
  function at(mx, my) {
    const r = rows.find(r => my >= r.y && my < r.y + r.h);
    if (!r || mx < LABEL) return null;
    const t = T(mx), slop = 3 * (v1 - v0) / (W - LABEL);
    if (r.kind === 'counter') {
      const series = D.counters[r.index].series, out = [r.name + ' at ' + human(t + D.t0)];
      for (const k of Object.keys(series)) {
        const p = series[k]; let v = null;
        for (let i = 0; i < p.length && p[i] <= t; i += 2) v = p[i + 1];
        out.push(k + ' = ' + v);
      }
      return out.join('\n');
    }
    const [a, b] = ranges[r.index];
    let lo = a, hi = b;  // the last slice starting at or before t + slop
    while (lo < hi) { const m = (lo + hi) >> 1; if (sl[m * 8 + 1] <= t + slop) lo = m + 1; else hi = m; }
    for (let i = lo - 1; i >= a && i >= lo - 64; i--) {
      const ts = sl[i * 8 + 1], du = sl[i * 8 + 2];
      if (t > ts + du + slop) continue;
      const g = sl[i * 8 + 5], lines = [S[sl[i * 8 + 3]] + '  (' + S[sl[i * 8 + 4]] + ')'];
      if (g >= 0) lines.push('green thread ' + g + ' ' + (D.gnames[g] || ''));
      lines.push('start ' + human(ts + D.t0) + ', duration ' + human(du));
      if (sl[i * 8 + 6] >= 0) lines.push('ended: ' + S[sl[i * 8 + 6]]);
      if (sl[i * 8 + 7] >= 0) lines.push((g >= 0 ? 'parked on: ' : 'blocked on: ') + S[sl[i * 8 + 7]]);
      return lines.join('\n');
    }
    return null;
  }
  cv.addEventListener('mousemove', e => {
    const rc = cv.getBoundingClientRect(), text = at(e.clientX - rc.left, e.clientY - rc.top);
    if (drag) { const dt = (drag.x - e.clientX) / (W - LABEL) * (drag.v1 - drag.v0);
      v0 = drag.v0 + dt; v1 = drag.v1 + dt; draw(); return; }
    if (!text) { tip.style.display = 'none'; return; }
    tip.textContent = text; tip.style.display = 'block';
    tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px';
  });
  cv.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  let drag = null;
  cv.addEventListener('mousedown', e => { drag = {x: e.clientX, v0: v0, v1: v1}; });
  window.addEventListener('mouseup', () => { drag = null; });
  cv.addEventListener('wheel', e => {
    e.preventDefault();
    const rc = cv.getBoundingClientRect(), t = T(e.clientX - rc.left), k = e.deltaY > 0 ? 1.25 : 0.8;
    const n0 = t - (t - v0) * k, n1 = t + (v1 - t) * k;
    if (n1 - n0 < 10) return;
    v0 = n0; v1 = n1; draw();
  }, {passive: false});
  document.getElementById('reset').onclick = () => { v0 = 0; v1 = span; draw(); };
  document.getElementById('arrows').onchange = draw;
  window.addEventListener('resize', draw);
  const t0 = performance.now();
  draw();
  box.setAttribute('data-draw-ms', (performance.now() - t0).toFixed(1));
  box.setAttribute('data-tracks', String(D.tracks.length));
  box.setAttribute('data-slices', String(N));
  box.setAttribute('data-drawn-slices', String(drawn));
  // A link to a point: report.html#at=TRACK,NS shows what is on track TRACK (0 is the first) at
  // NS on the trace's clock, as hovering there would, with a marker on the spot.
  const link = /^#at=(\d+),(-?\d+)$/.exec(location.hash);
  if (link && rows[+link[1]]) {
    const r = rows[+link[1]], t = +link[2] - D.t0, text = at(X(t), r.y + r.h / 2);
    ctx.fillStyle = '#000'; ctx.fillRect(X(t) - 1, r.y, 2, r.h);
    const rc = cv.getBoundingClientRect();
    tip.textContent = text || '(nothing there)'; tip.style.display = 'block';
    tip.style.left = (rc.left + X(t) + 12) + 'px'; tip.style.top = (rc.top + r.y + r.h + 4) + 'px';
  }
})();
)js";

}  // namespace

std::string trace_to_html(const Trace& t, const Summary& s, size_t top_channels) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n<title>chanflow trace: "
    << esc(t.file) << "</title>\n<style>" << kStyle << "</style></head>\n<body>\n"
    << "<h1>chanflow trace: " << esc(t.file) << "</h1>\n"
    << "<div id=bar><button id=reset>reset zoom</button><label><input type=checkbox id=arrows "
       "checked> wake arrows</label><span id=status>(the timeline needs JavaScript)</span></div>\n"
    << "<div id=timeline></div><div id=tip></div>\n"
    << "<p style='color:#666'>Wheel: zoom at the pointer. Drag: pan. Hover a slice for its green "
       "thread and why it stopped (or link to it: #at=TRACK,NS); red arrows run from a wake to the "
       "slice it readied.</p>\n";
  summary_tables(o, s, top_channels);
  o << "<script type=\"application/json\" id=\"trace-data\">" << script_json(timeline_data(t, s))
    << "</script>\n<script>" << kScript << "</script>\n</body></html>\n";
  return o.str();
}

}  // namespace chanflow::tools
