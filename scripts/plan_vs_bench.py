#!/usr/bin/env python3
"""`moetrain plan` on this machine's measured cluster file against `moetrain
bench` (issue 41, item 5): measures the CPU once with `moetrain doctor
--write-cluster`, then for each bench preset and precision asks the planner
for the step time and peak memory (layouts cpu / cpu-bf16) and runs the bench
(balanced routing, the default), presets interleaved round by round, and
prints a Markdown table: predicted vs measured step time (median over rounds)
and peak memory, their ratios and whether each is within 10%.

    scripts/plan_vs_bench.py [--moetrain build/src/moetrain] [--cluster /tmp/this-cpu.toml]
                             [--rounds 1] [--steps 4] [--json OUT.json]

Nothing is fitted to the bench's steps: the cluster file holds kernel-level
figures only (docs/planner.md, "A measured CPU"). On a shared host the
neighbours' load moves every rate; the "load" column is the bench's 2048^3
reference over the one measured when the cluster file was written (1 = the
same load), and "x load" the measured step time scaled by it, so a miss that
is only a change of load shows as such.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PRESETS = [("moe-512", "fp32"), ("moe-512", "bf16"), ("moe-512-mla", "fp32"), ("moe-512-mla", "bf16"),
           ("moe-512-mtp", "fp32"), ("moe-512-mtp", "bf16"), ("moe-512-hybrid", "fp32"), ("moe-512-hybrid", "bf16")]


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--moetrain", default=os.path.join(ROOT, "build/src/moetrain"))
    ap.add_argument("--cluster", default="/tmp/this-cpu.toml", help="where doctor writes the cluster file")
    ap.add_argument("--rounds", type=int, default=1, help="bench runs per preset, interleaved")
    ap.add_argument("--steps", type=int, default=4, help="bench --steps")
    ap.add_argument("--only", default="", help="comma-separated preset:precision pairs (default: all)")
    ap.add_argument("--json", default="", help="also write the rows here")
    a = ap.parse_args()
    presets = PRESETS if not a.only else [tuple(x.split(":")) for x in a.only.split(",")]
    mt = a.moetrain
    subprocess.run([mt, "doctor", "--write-cluster", a.cluster], check=True)
    with open(a.cluster, "rb") as f:
        cluster = tomllib.load(f)
    cpu_name = cluster["cluster"]["name"]
    plans = {}
    for preset, prec in presets:
        layout = os.path.join(ROOT, "configs/layouts", "cpu.toml" if prec == "fp32" else "cpu-bf16.toml")
        j = run_json([mt, "plan", "--model", os.path.join(ROOT, f"configs/bench/{preset}.toml"), "--cluster",
                      a.cluster, "--layout", layout, "--tokens", "1e9", "--no-sweep", "--search", "none", "--json"])
        plans[(preset, prec)] = j
    benches = {p: [] for p in presets}
    for r in range(a.rounds):
        for preset, prec in presets:
            j = run_json([mt, "bench", "--preset", preset, "--precision", prec, "--steps", str(a.steps), "--json"])
            benches[(preset, prec)].append(j)
            print(f"round {r + 1}: {preset} {prec}: {j['step_time_s']:.3f} s", file=sys.stderr)
    rows = []
    for key in presets:
        preset, prec = key
        p, bs = plans[key], benches[key]
        measured = statistics.median(b["step_time_s"] for b in bs)
        rss = statistics.median(b["peak_rss_bytes"] for b in bs)
        ref = statistics.median(b["gemm_best_gflops_per_s"] for b in bs)
        load = ref / cluster["cpu"][f"gemm_{prec}_gflops"]
        rows.append({"preset": preset, "precision": prec, "plan_s": p["step_time_s"], "bench_s": measured,
                     "load": load, "plan_bytes": p["memory"]["total"], "rss_bytes": rss,
                     "bench_runs": [b["step_time_s"] for b in bs],
                     "tokens_per_s": statistics.median(b["tokens_per_s"] for b in bs),
                     "vs_gemm_best": statistics.median(b["mfu_vs_gemm_best"] for b in bs),
                     "vs_gemm_interleaved": statistics.median(b["mfu_vs_gemm_interleaved"] for b in bs),
                     "mfu": statistics.median(b["mfu"] for b in bs), "peak_kind": bs[0]["peak_kind"]})
    print(f"\nCPU: {cpu_name}\n")
    print("| preset | precision | plan s | bench s | plan / bench | within 10% | load | plan / (bench x load) "
          "| plan MiB | peak RSS MiB | plan / RSS | within 10% |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        t = r["plan_s"] / r["bench_s"]
        tl = r["plan_s"] / (r["bench_s"] * r["load"])
        m = r["plan_bytes"] / r["rss_bytes"]
        print(f"| {r['preset']} | {r['precision']} | {r['plan_s']:.3f} | {r['bench_s']:.3f} | {t:.3f} | "
              f"{'yes' if abs(t - 1) <= 0.1 else 'no'} | {r['load']:.2f} | {tl:.3f} | "
              f"{r['plan_bytes'] / 2**20:,.0f} | {r['rss_bytes'] / 2**20:,.0f} | {m:.3f} | "
              f"{'yes' if abs(m - 1) <= 0.1 else 'no'} |")
    # The throughput targets are these ratios: the step's model FLOP rate over the same run's best
    # GEMM of its precision (measured before the steps, and after each step), and over the measured peak.
    print("\n| preset | precision | tokens/s | vs best GEMM | vs GEMM after each step | MFU (vs peak) | peak |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['preset']} | {r['precision']} | {r['tokens_per_s']:,.0f} | {r['vs_gemm_best']:.3f} | "
              f"{r['vs_gemm_interleaved']:.3f} | {100 * r['mfu']:.1f}% | {r['peak_kind']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_name, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
