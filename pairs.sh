#!/usr/bin/env bash
# pairs.sh ROUNDS MODE CLIENTS NAME=BINARY...: compares builds of the server over HTTP against
# rawhttp, as ../shared/bench/limits.sh does for the current one: in each round rawhttp, then
# every build, each a fresh process driven for 1 s by httpbench (MODE stateless or session, CLIENTS
# connections). It prints, per build, the median over the rounds of its rate over rawhttp's in the
# same round (with CLIENTS=1, of its median latency over rawhttp's), each round's ratio, and its
# median CPU per call. Build each BINARY first, e.g. `go build -o /tmp/new .`, and for an older
# commit `git worktree add /tmp/old COMMIT && (cd /tmp/old && go build -o /tmp/old.bin .)`.
# Example (from the project's root): ./pairs.sh 12 stateless 16 before=/tmp/old.bin after=/tmp/new
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 ROUNDS MODE CLIENTS NAME=BINARY..." >&2; exit 2; }
rounds=$1 mode=$2 clients=$3
shift 3
bench=$(cd "$(dirname "$0")/../shared/bench" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pairs.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$bench" && go build -o "$work/" ./rawhttp ./httpbench)
out=$work/runs.jsonl
run() { # run LABEL ROUND CMD...
  local label=$1 round=$2
  shift 2
  "$work/httpbench" -label "$label $round" -mode "$mode" -c "$clients" -d 1s -warmup 300ms -- "$@" >>"$out" 2>/dev/null || true
}
for i in $(seq 1 "$rounds"); do
  run rawhttp "$i" "$work/rawhttp" -addr-file {addrfile}
  for build in "$@"; do
    run "${build%%=*}" "$i" "${build#*=}" -http 127.0.0.1:0 -http-addr-file {addrfile}
  done
done
python3 - "$out" "$clients" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("error"):
        continue
    name, i = r["label"].split()
    runs[(name, i)] = r
field = "p50_us" if sys.argv[2] == "1" else "rps"
print("%s over rawhttp's, per round; median CPU per call" % ("p50" if field == "p50_us" else "rate"))
names = sorted({n for n, _ in runs if n != "rawhttp"})
for name in names:
    ratios = sorted(r[field] / runs[("rawhttp", i)][field] for (n, i), r in runs.items() if n == name and ("rawhttp", i) in runs)
    cpu = [r["cpu_us_per_call"] for (n, _), r in runs.items() if n == name]
    if ratios:
        print("%-10s median %.3f  (%s)  %.1f us" % (name, statistics.median(ratios), " ".join("%.2f" % x for x in ratios), statistics.median(cpu)))
raw = [r["cpu_us_per_call"] for (n, _), r in runs.items() if n == "rawhttp"]
if raw:
    print("%-10s %.1f us" % ("rawhttp", statistics.median(raw)))
PY
