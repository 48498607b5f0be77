#!/usr/bin/env python3
"""The architecture ablation of issue 14 at equal compute: GQA with sliding
windows (the lab's choice), GQA global, multi-head latent attention global
(DeepSeek's) and with sliding windows, and a gated-delta hybrid (three linear
layers to one global), each trained as the ladder configs/ladder/arch-ablation.toml
(two widths, budgets in model FLOPs), then tabled with each variant's
inference cost from `moetrain plan` (KV cache, recurrent state) at a long
context.

    scripts/arch_ablation.py run    [--moetrain build/src/moetrain] [--out runs/arch-ablation] [--jobs 2]
    scripts/arch_ablation.py report [--out runs/arch-ablation] [--json docs/architectures-ablation.json]
                                    [--svg docs/architectures-ablation.svg]

`run` trains every variant's ladder not finished yet (a killed run resumes:
the ladder runner skips what results.jsonl lists); `report` reads the
results, asks the planner for the inference cost of each variant's widest
rung, writes a JSON summary and an SVG, and prints the Markdown table.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LADDER = os.path.join(ROOT, "configs/ladder/arch-ablation.toml")
CONTEXT = 32768  # the context at which the inference cost is compared
SEEDS = [1, 2]   # train.seed: initialisation and data order

# MLA sizes are DeepSeek-V2's ratios to a head dim of 16: Dc = 2 Dh, Dr = Dh / 2, Dn = Dv = Dh, no
# query latent (V2-Lite); fixed across widths like the head dim.
MLA = ["model.attention=\"mla\"", "model.q_lora_rank=0", "model.kv_lora_rank=32", "model.qk_nope_head_dim=16",
       "model.qk_rope_head_dim=8", "model.v_head_dim=16"]
VARIANTS = {
    "gqa-swa": {"label": "GQA, sliding window (LLLG)", "sets": ["model.layer_pattern=\"LLLG\""]},
    "gqa-global": {"label": "GQA, global (G)", "sets": ["model.layer_pattern=\"G\""]},
    "mla-global": {"label": "MLA, global (G)", "sets": MLA + ["model.layer_pattern=\"G\""]},
    "mla-swa": {"label": "MLA, sliding window (LLLG)", "sets": MLA + ["model.layer_pattern=\"LLLG\""]},
    "hybrid": {"label": "gated delta + global (DDDG)", "sets": ["model.layer_pattern=\"DDDG\""]},
}
COLORS = {"gqa-swa": "#1f77b4", "gqa-global": "#7f7f7f", "mla-global": "#d62728", "mla-swa": "#ff7f0e",
          "hybrid": "#2ca02c"}


def base_sets():
    with open(LADDER, "rb") as f:
        return tomllib.load(f)["ladder"]["set"]


def variant_dir(out, name, seed):
    return os.path.join(out, name if seed == 1 else f"{name}-seed{seed}")


def cmd_run(a):
    for name, v in VARIANTS.items():
        d = variant_dir(a.out, name, a.seed)
        argv = [a.moetrain, "ladder", "run", LADDER, "--out", d, "--jobs", str(a.jobs), "--no-progress",
                "--set", "ladder.set=" + json.dumps(base_sets() + v["sets"] + [f"train.seed={a.seed}"])]
        print("#", " ".join(argv), flush=True)
        if subprocess.run(argv).returncode != 0:
            sys.exit(f"{d}: ladder run failed")


def tokens_per_s(run_dir):
    """Median training tokens/s over the run's steps (metrics.jsonl)."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return float("nan")
    xs = sorted(json.loads(l)["tokens_per_s"] for l in open(path) if '"tokens_per_s"' in l)
    return xs[len(xs) // 2] if xs else float("nan")


def inference_cost(moetrain, run_dir):
    """KV cache and recurrent state per sequence of CONTEXT tokens, bf16 (the planner's figures)."""
    argv = [moetrain, "plan", "--model", os.path.join(run_dir, "config.toml"), "--cluster", "cpu", "--layout", "cpu",
            "--tokens", "1e9", "--json", "--search", "none", "--no-sweep", "--set", f"train.seq_len={CONTEXT}"]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"plan failed for {run_dir}: {r.stderr}")
    inf = json.loads(r.stdout)["inference"]
    return {"kv_bytes_per_token": inf["kv_cache_bytes_per_token"],
            "kv_bytes_per_sequence": inf["kv_cache_bytes_per_sequence"],
            "state_bytes_per_sequence": inf.get("recurrent_state_bytes_per_sequence", 0.0),
            "decode_flops_per_token": inf.get("decode_flops_per_token", float("nan"))}


def read(a):
    rows = []
    for name in VARIANTS:
        for seed in SEEDS:
            d = variant_dir(a.out, name, seed)
            path = os.path.join(d, "results.jsonl")
            if not os.path.exists(path):
                continue
            for line in open(path):
                r = json.loads(line)
                run_dir = os.path.join(d, r["name"])
                rows.append({"variant": name, "seed": seed, "rung": r["name"], "loss": r["loss"],
                             "tokens": r["tokens"], "flops": r["flops"], "active_params": r["active_params"],
                             "tokens_per_s": tokens_per_s(run_dir), **inference_cost(a.moetrain, run_dir)})
    return rows


def mean_by_rung(rows, name):
    """{rung: (flops, mean loss over seeds)} of one variant (flops: seed 1's, budgets are equal)."""
    out = {}
    for rung in {r["rung"] for r in rows if r["variant"] == name}:
        mine = [r for r in rows if r["variant"] == name and r["rung"] == rung and math.isfinite(r["loss"])]
        if mine:
            out[rung] = (mine[0]["flops"], sum(r["loss"] for r in mine) / len(mine))
    return out


def svg(rows, path):
    rungs = sorted({r["rung"] for r in rows}, key=lambda n: int("".join(c for c in n if c.isdigit())))
    W, H, x0, y0, pw, ph = 640, 360, 70, 30, 360, 260
    fl = [r["flops"] for r in rows]
    ls = [r["loss"] for r in rows if math.isfinite(r["loss"])]
    lx0, lx1 = math.log(min(fl)) - 0.3, math.log(max(fl)) + 0.3
    lo, hi = math.floor(min(ls) * 20) / 20, math.ceil(max(ls) * 20) / 20
    X = lambda f: x0 + (math.log(f) - lx0) / (lx1 - lx0) * pw
    Y = lambda l: y0 + ph - (l - lo) / (hi - lo) * ph
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    t = lo
    while t <= hi + 1e-9:
        out.append(f'<line x1="{x0}" y1="{Y(t):.1f}" x2="{x0 + pw}" y2="{Y(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:.2f}</text>')
        t += 0.05
    for f in sorted(set(fl)):
        out.append(f'<text x="{X(f):.1f}" y="{y0 + ph + 16}" text-anchor="middle">{f:.1e}</text>')
    out.append(f'<text x="{x0 + pw / 2}" y="{y0 + ph + 34}" text-anchor="middle">training compute, model FLOPs (log)</text>')
    out.append(f'<text x="16" y="{y0 + ph / 2}" transform="rotate(-90 16 {y0 + ph / 2})" text-anchor="middle">'
               'held-out loss (nats/byte)</text>')
    for j, (name, v) in enumerate(VARIANTS.items()):
        pts = sorted(mean_by_rung(rows, name).values())
        if not pts:
            continue
        c = COLORS[name]
        out.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
            c, " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts)))
        for x, y in pts:
            out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="4" fill="{c}"/>')
        out.append(f'<text x="{x0 + pw + 14}" y="{y0 + 14 + 16 * j}" fill="{c}">{v["label"]}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def cmd_report(a):
    rows = read(a)
    if not rows:
        sys.exit(f"no results under {a.out}")
    with open(a.json, "w") as f:
        json.dump({"context": CONTEXT, "ladder": os.path.relpath(LADDER, ROOT), "rows": rows}, f, indent=1)
    svg(rows, a.svg)
    rungs = sorted({r["rung"] for r in rows}, key=lambda n: int("".join(c for c in n if c.isdigit())))
    print("| variant | " + " | ".join(f"{r}: loss (seeds), tokens" for r in rungs) +
          f" | KV cache per token | KV + state per {CONTEXT // 1024}K sequence | train tokens/s ({rungs[-1]}) |")
    print("|---" * (len(rungs) + 4) + "|")
    for name, v in VARIANTS.items():
        mine = {r["rung"]: r for r in rows if r["variant"] == name and r["seed"] == 1}
        if not mine:
            continue
        top = mine[rungs[-1]] if rungs[-1] in mine else next(iter(mine.values()))

        def cell(rung):
            ls = [r["loss"] for r in rows if r["variant"] == name and r["rung"] == rung]
            if not ls:
                return ""
            spread = f" ({', '.join(f'{x:.3f}' for x in ls)})" if len(ls) > 1 else ""
            return f"**{sum(ls) / len(ls):.3f}**{spread}, {mine[rung]['tokens'] / 1e3:.0f}K"
        cells = [cell(r) for r in rungs]
        kv = top["kv_bytes_per_sequence"] + top["state_bytes_per_sequence"]
        print(f"| {v['label']} | " + " | ".join(cells) + f" | {top['kv_bytes_per_token']:.0f} B | "
              f"{kv / 2**20:.2f} MiB | {top['tokens_per_s']:.0f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--seed", type=int, default=1, help="train.seed (1 or 2: the seeds the report reads)")
    s = sub.add_parser("report")
    s.add_argument("--json", default=os.path.join(ROOT, "docs/architectures-ablation.json"))
    s.add_argument("--svg", default=os.path.join(ROOT, "docs/architectures-ablation.svg"))
    for q in (r, s):
        q.add_argument("--moetrain", default=os.path.join(ROOT, "build/src/moetrain"))
        q.add_argument("--out", default=os.path.join(ROOT, "runs/arch-ablation"))
    a = p.parse_args()
    cmd_run(a) if a.cmd == "run" else cmd_report(a)


if __name__ == "__main__":
    main()
