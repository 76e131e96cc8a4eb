#!/bin/bash
# Launch-cost benchmarks (docs/cuda.md "Launch cost"): two e2e/cudagpu test
# binaries, cudagpu-old.test (the base) and cudagpu.test (the change), run
# interleaved after one warm-up invocation, and a table of medians and of
# each arm minus the same invocation's LaunchRaw. Build here, then copy the
# folder to the GPU machine with the gelu_tanh and rms_norm fatbins in
# fatbins/ (kgen cuda --out):
#   CGO_ENABLED=0 go test -c -o DIR/cudagpu.test ./e2e/cudagpu
# Run: bench/cuda/launch_h200.sh DIR   (logs in $OUT or /tmp)
cd "${1:?usage: launch_h200.sh DIR}"
export KGEN_CUDA_FATBIN_DIR=$PWD/fatbins
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $O/gpu.txt 2>&1
B='LaunchRaw$|LaunchRawFrame|LaunchCUDA|LaunchTyped'
TS=""; command -v taskset >/dev/null && TS="taskset -c 2-5"
run() { $TS ./$1 -test.run XXX -test.bench "$B" -test.benchmem -test.benchtime 100000x -test.count 1 2>&1; }
run cudagpu.test > $O/warmup.txt   # clocks up, discarded
for r in 1 2 3 4 5 6 7 8; do
  if [ $((r % 2)) = 1 ]; then run cudagpu.test >> $O/new.txt; run cudagpu-old.test >> $O/old.txt
  else run cudagpu-old.test >> $O/old.txt; run cudagpu.test >> $O/new.txt; fi
done
nvidia-smi --query-gpu=clocks.sm --format=csv >> $O/gpu.txt 2>&1
cat $O/gpu.txt; grep -h -E "FAIL|panic|skip" $O/new.txt $O/old.txt | head
python3 - $O <<'PY'
import sys, re, statistics as st, collections
d = collections.defaultdict(list)
for arm in ("old", "new"):
    for line in open(f"{sys.argv[1]}/{arm}.txt"):
        m = re.match(r"Benchmark(\S+?)-\d+\s+\d+\s+([\d.]+) ns/op\s+(\d+) B/op\s+(\d+) allocs/op", line)
        if m: d[(m[1], arm)].append((float(m[2]), int(m[3]), int(m[4])))
names = sorted({k[0] for k in d}, key=lambda n: ["LaunchRaw","LaunchRawFrame","LaunchCUDA","LaunchTyped","LaunchTypedRows"].index(n) if n in ["LaunchRaw","LaunchRawFrame","LaunchCUDA","LaunchTyped","LaunchTypedRows"] else 9)
print("| benchmark | old ns/op (runs) | old B, allocs | new ns/op (runs) | new B, allocs |")
for n in names:
    row = [n]
    for arm in ("old", "new"):
        v = d.get((n, arm))
        if not v: row += ["—", "—"]; continue
        ns = [x[0] for x in v]
        row += [f"{st.median(ns):.0f} ({min(ns):.0f}–{max(ns):.0f}, n={len(ns)})", f"{v[0][1]} B, {v[0][2]}"]
    print("| " + " | ".join(row) + " |")
# paired: each invocation's typed arms minus its own raw arms
for arm in ("old", "new"):
    runs, cur = [], {}
    for line in open(f"{sys.argv[1]}/{arm}.txt"):
        if line.startswith("goos:") and cur: runs.append(cur); cur = {}
        m = re.match(r"Benchmark(\S+?)-\d+\s+\d+\s+([\d.]+) ns/op", line)
        if m: cur[m[1]] = float(m[2])
    if cur: runs.append(cur)
    for a in ("LaunchCUDA", "LaunchTyped", "LaunchTypedRows"):
        for base in ("LaunchRaw", "LaunchRawFrame"):
            ds = [r[a] - r[base] for r in runs if a in r and base in r]
            if ds: print(f"{arm}: {a} - {base}: median {st.median(ds):.0f} ns over {len(ds)} invocations ({min(ds):.0f} to {max(ds):.0f})")
PY
