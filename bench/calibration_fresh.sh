#!/usr/bin/env bash
# Is the simulator's calibration still about this code? fixtures/sim-calibration.json
# records the commit the real server was measured on and the code paths its figures
# model; once a later commit changes one of those paths, this fails and names the
# command that measures again (bench/calibrate.sh). Cheap: it reads git history and
# times nothing. Without git history to read (no git, an export, a shallow clone that
# lacks the recorded commit) it says it skipped the check and passes.
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=fixtures/sim-calibration.json
read -r commit command paths < <(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
print(c["measured_on"], c["command"], " ".join(c["paths"]))' "$FILE")
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "calibration freshness: skipped (no git history here)"
  exit 0
fi
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
  if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
    echo "calibration freshness: skipped (a shallow clone without the measured commit ${commit:0:12})"
    exit 0
  fi
  echo "calibration freshness: $FILE names commit $commit, which is not in this history: run $command"
  exit 1
fi
# shellcheck disable=SC2086 # the paths are words
changed=$(git log --format='%h %s' "$commit..HEAD" -- $paths)
if [ -n "$changed" ]; then
  echo "calibration freshness: the simulator's cost figures were measured on ${commit:0:12}, and these later commits change the code they model ($paths):"
  printf '%s\n' "$changed" | head -20
  n=$(printf '%s\n' "$changed" | wc -l)
  [ "$n" -le 20 ] || echo "... and $((n - 20)) more"
  echo "measure again on a quiet machine: $command (it rewrites $FILE), then cargo run -p wizard-sim -- calibration-doc --write"
  exit 1
fi
echo "calibration freshness: $FILE measured on ${commit:0:12}; nothing it models changed since"
