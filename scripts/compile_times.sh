#!/usr/bin/env bash
# Compile time and peak compiler memory of each translation unit, one at a time (so no unit
# competes with another for cores, caches or memory), sorted slowest first.
#
#   bash scripts/compile_times.sh                 # every unit of the default build
#   bash scripts/compile_times.sh 'examples/'     # the units whose source path matches a regex
#
# Units are compiled with the build's own commands (compile_commands.json of a Release build in
# build-times/, -O3 -march=native as the tests and examples use), into a scratch directory, so the
# build tree is not touched. Prints: seconds (wall), peak resident memory of the compiler (MB),
# source.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
filter="${1:-.}"
build=build-times
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCTFLOW_BUILD_BENCHMARKS=OFF -DCTFLOW_BUILD_FUZZERS=OFF >/dev/null
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# One line per unit: the directory, the command (its output redirected to the scratch directory)
# and the source, from CMake's compilation database.
python3 - "$build/compile_commands.json" "$filter" "$scratch" >"$scratch/units" <<'EOF'
import json, re, shlex, sys
units, pattern, scratch = json.load(open(sys.argv[1])), re.compile(sys.argv[2]), sys.argv[3]
for i, u in enumerate(units):
    if "/headers/" in u["file"] or not pattern.search(u["file"]):
        continue
    args = shlex.split(u["command"])
    out = args.index("-o")
    args[out + 1] = f"{scratch}/{i}.o"
    args = [a for a in args if a not in ("-MD",)]
    for flag in ("-MT", "-MF"):
        while flag in args:
            j = args.index(flag)
            del args[j:j + 2]
    print(u["directory"], shlex.join(args), u["file"], sep="\t")
EOF
while IFS=$'\t' read -r dir command file; do
  (cd "$dir" && /usr/bin/time -f '%e %M' -o "$scratch/time" sh -c "$command" >/dev/null 2>"$scratch/err") ||
    { echo "failed: $file" >&2; cat "$scratch/err" >&2; exit 1; }
  read -r seconds kb <"$scratch/time"
  printf '%8.1f %7d  %s\n' "$seconds" $((kb / 1024)) "${file#"$PWD"/}"
done <"$scratch/units" | sort -rn | { printf '%8s %7s  %s\n' seconds 'peak MB' unit; cat; }
