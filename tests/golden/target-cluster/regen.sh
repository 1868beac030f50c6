#!/usr/bin/env bash
# Remake the reference profiler's answers for each target cluster here (README.md).
#   tests/golden/target-cluster/regen.sh [SHARED_DIR]      (default: ../shared of the repo)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${1:-$here/../../../../shared}
mapfile -t logs < <(sed -n '/^# GPU event logs/,/^# Left out/p' "$shared/anchor/golden/profile-dev/INPUTS.txt" \
  | grep -v '^#' | sed "s|^|$shared/datasets/|")
for t in "$here"/*.yaml; do
  name=$(basename "$t" .yaml)
  out=$(mktemp -d)
  AETHER_PROFILE_ARGS="--target_cluster_info $t" "$shared/tools/anchor/profile.sh" "$out" "${logs[@]}" \
    > "$out/run.log" 2>&1 || { cat "$out/run.log" >&2; exit 1; }
  cp "$out"/prof_*/tuning_summary.log "$here/$name.tuning_summary.log"
  grep -h 'build.version' "$out"/prof_*/rapids_4_spark_profile/runtime.properties | head -1 \
    > "$here/REFERENCE_VERSION"
  rm -rf "$out"
done
echo "wrote the reference's tuning_summary.log for $(ls "$here"/*.yaml | wc -l) targets"
