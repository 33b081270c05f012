// trace_html.h — a chanflow trace as one self-contained HTML page: a timeline (a track per
// worker, executor and GoMachine lane; run slices coloured per green thread with their park reason
// on hover; wake arrows; counters as small line charts; global marks) above the summary's tables.
//
//   Trace t = read_trace("t.json");
//   std::ofstream("report.html") << trace_to_html(t, summarize(t));
//
// The page loads nothing from the network: its CSS and script are inline and the timeline's data
// is a JSON object in a <script type="application/json" id="trace-data"> element (every '<' in it
// written as \u003c, so no "</script>" in a name can end the element). Once its script ran, the
// element #timeline carries data-tracks, data-slices and data-drawn-slices (how many slices the
// first frame drew) and data-draw-ms (how long that frame took), which the headless-browser test
// reads.
#pragma once

#include <cstddef>
#include <string>

#include "trace_summary.h"

namespace chanflow::tools {

// The report for `t`, whose summary is `s`; the channel table lists at most `top_channels`.
std::string trace_to_html(const Trace& t, const Summary& s, size_t top_channels = 10);

}  // namespace chanflow::tools
