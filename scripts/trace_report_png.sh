#!/usr/bin/env bash
# trace_report_png.sh — a picture of `chanflow trace html`'s report, taken by headless Chromium.
#
#   scripts/trace_report_png.sh TRACE.json OUT.png          # writes the report next to OUT.png
#   scripts/trace_report_png.sh REPORT.html OUT.png         # an existing report
#   CHANFLOW=path/to/chanflow CHANFLOW_PNG_SIZE=1400,900 scripts/trace_report_png.sh ...
#
# A .json input is made into OUT.html with `chanflow trace html` (CHANFLOW, default the release
# build's build/release/tools/chanflow). The screenshot is the top CHANFLOW_PNG_SIZE (width,height;
# default 1400,900) of the page once its script drew the timeline. Needs Debian's chromium
# (scripts/bootstrap.sh installs it). Exit status: non-zero when a step fails.
set -euo pipefail

if [[ $# -ne 2 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  [[ $# -eq 2 ]] && exit 0 || exit 2
fi
input=$1
png=$2
root="$(cd "$(dirname "$0")/.." && pwd)"
chanflow=${CHANFLOW:-$root/build/release/tools/chanflow}
size=${CHANFLOW_PNG_SIZE:-1400,900}

browser=""
for name in chromium chromium-browser; do
  if command -v "$name" >/dev/null 2>&1; then browser=$(command -v "$name"); break; fi
done
if [[ -z "$browser" ]]; then
  echo "trace_report_png: error: no chromium (scripts/bootstrap.sh installs Debian's)" >&2
  exit 1
fi

case "$input" in
  *.html) report=$input ;;
  *)
    if [[ ! -x "$chanflow" ]]; then
      echo "trace_report_png: error: no chanflow at $chanflow (build it, or set CHANFLOW)" >&2
      exit 1
    fi
    report="${png%.png}.html"
    "$chanflow" trace html "$input" -o "$report"
    ;;
esac

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# --virtual-time-budget: the page's script runs to completion before the picture is taken.
timeout 120 "$browser" --headless --disable-gpu --no-sandbox --no-first-run --hide-scrollbars \
  --user-data-dir="$profile" --virtual-time-budget=10000 --window-size="$size" \
  --screenshot="$(realpath -m "$png")" "file://$(realpath "$report")" >/dev/null 2>&1
if [[ ! -s "$png" ]]; then
  echo "trace_report_png: error: chromium wrote no $png" >&2
  exit 1
fi
echo "trace_report_png: $png ($size) from $report"
