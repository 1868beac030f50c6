#!/usr/bin/env bash
# Remake the variants and the reference profiler's answers on them (README.md).
#   tests/golden/autotuner-variants/regen.sh [SHARED_DIR]      (default: ../shared of the repo)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${1:-$here/../../../../shared}
rm -rf "$here/logs" && mkdir -p "$here/logs"
python3 "$here/make_variants.py" \
  "$shared/datasets/rapids-tools/spark-events-profiling/eventlog_minimal_events" "$here/logs" \
  > "$here/logs/INDEX.tsv"
out=$(mktemp -d)
"$shared/tools/anchor/profile.sh" "$out" "$here"/logs/*.zstd > "$out/run.log" 2>&1 \
  || { cat "$out/run.log" >&2; exit 1; }
prof=$(echo "$out"/prof_*)
cp "$prof/tuning_summary.log" "$here/tuning_summary.log"
# the rules' inputs as the reference saw them, per app
rm -rf "$here/signals" && mkdir -p "$here/signals"
for d in "$prof"/rapids_4_spark_profile/*/; do
  app=$(basename "$d")
  [ -f "$d/app_level_recommendation_signals.csv" ] \
    && cp "$d/app_level_recommendation_signals.csv" "$here/signals/$app.csv"
done
grep -h 'build.version' "$prof"/rapids_4_spark_profile/runtime.properties 2>/dev/null | head -1 \
  > "$here/REFERENCE_VERSION" || true
rm -rf "$out"
echo "wrote $(ls "$here"/logs/*.zstd | wc -l) variants and the reference's tuning_summary.log"
