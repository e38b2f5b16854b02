#!/usr/bin/env bash
# What --fp8-stats-every costs (docs/Fp8Stats.md): the ~110 M model (4 x 256
# tokens), fp8 recipe, STEPS steps on the Brown corpus, one step in two
# logged (--fp8-stats-every 2), every step timed (--log-every 1): the
# median step with statistics against the median without, in one run, and
# what that makes at --fp8-stats-every 100. The first two steps (warm-up)
# are left out.
#
#   bash bench/fp8-stats.sh [STEPS]   (default 12; docs/PERFORMANCE.md)
set -euo pipefail
steps=${1:-12}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$bin/infir2-import" --hf-config "$root/examples/hf-configs/qwen-110m.json" \
  --seq-len 256 --micro-batch 4 -o "$tmp/110m.mlir"
"$bin/infir2-compile" "$tmp/110m.mlir" --recipe=fp8 -o "$tmp/fp8"
"$tmp/fp8" --device cpu --data "$data" --steps "$steps" --log-every 1 \
  --log-jsonl "$tmp/run.jsonl" --fp8-stats-every 2 > /dev/null 2>&1
echo "records: $(wc -l < "$tmp/run.fp8-stats.jsonl") ($(grep -c '"step":2,' "$tmp/run.fp8-stats.jsonl") a logged step)"
python3 - "$tmp/run.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "tokens_per_s" in l]
tokens = 4 * 256
seconds = {r["step"]: tokens / r["tokens_per_s"] for r in rows}
logged = [t for s, t in seconds.items() if s > 2 and s % 2 == 0]
other = [t for s, t in seconds.items() if s > 2 and s % 2 == 1]
a, b = statistics.median(logged), statistics.median(other)
print("step with statistics (median of %d): %.3f s; without (median of %d): %.3f s"
      % (len(logged), a, len(other), b))
print("a logged step costs %.3f s more (%.0f%% of a step); at --fp8-stats-every 100: %.2f%%"
      % (a - b, 100 * (a - b) / b, (a - b) / b))
PY
