#!/usr/bin/env bash
# Remake the qualification variants and the reference tool's bootstrap configs for them.
#   tests/golden/qual-variants/regen.sh [SHARED_DIR]      (default: ../shared of the repo)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${1:-$here/../../../../shared}
rm -rf "$here/logs" "$here/tuning" && mkdir -p "$here/logs" "$here/tuning"
python3 "$here/make_variants.py" "$shared/datasets/real-spark-4.3.0/local-1796009671201" \
  "$here/logs" > "$here/logs/INDEX.tsv"
out=$(mktemp -d)
"$shared/tools/anchor/qualify.sh" "$out" "$here"/logs/*.zstd > "$out/run.log" 2>&1 \
  || { cat "$out/run.log" >&2; exit 1; }
cp "$out"/*/qual_core_output/tuning/*-bootstrap.conf "$out"/*/qual_core_output/tuning/*.log \
  "$here/tuning/"
rm -rf "$out"
echo "wrote $(ls "$here"/logs/*.zstd | wc -l) variants and the reference's bootstrap configs"
