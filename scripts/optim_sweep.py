#!/usr/bin/env python3
"""Learning-rate sweeps of AdamW (+ weight decay), Hyperball over AdamW and
Hyperball over Muon at three widths, through the ladder runner
(configs/ladder/optim-sweep.toml: one rung per width), and the plot and
table of docs/optimizers.md.

    scripts/optim_sweep.py run  [--moetrain build/src/moetrain] [--out runs/optim-sweep] [--jobs 2]
    scripts/optim_sweep.py plot [--out runs/optim-sweep] [--svg docs/optimizers-sweep.svg]
                                [--svg-best docs/optimizers-loss.svg] [--json docs/optimizers-sweep.json]

`run` trains every (optimizer, lr) ladder not finished yet (a killed sweep
resumes: the ladder runner skips what results.jsonl lists); `plot` reads the
results.jsonl files and writes two SVGs (held-out loss against lr, one panel
per optimizer, one line per width; the best loss over both lrs against
width) and a JSON summary, and prints the Markdown tables.
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
LADDER = os.path.join(ROOT, "configs/ladder/optim-sweep.toml")

# Grids by factors of 2 around each optimizer's usual value: AdamW's lr;
# Hyperball's lr is the angular step (the update's norm over the weight's),
# ~ sqrt(lr x wd) of the AdamW setting it replaces (Levanter's AdamH/MuonH
# docstrings). Every run also has optim.aux_lr, the lr of the tensors that
# are not hidden matrices (embedding, norms, router): for AdamW it is unset
# (= train.lr) in the plotted baseline, for Hyperball it has to be set (its
# train.lr is an angle). Plotted: the lr sweeps (OPTIMIZERS); tabled too: the
# grid over aux_lr (CHECKS), so that each optimizer's best over both knobs
# can be compared at equal tokens.
HB_LRS = [5e-3, 1e-2, 2e-2, 4e-2, 8e-2, 1.6e-1, 3.2e-1]
MAIN_AUX = "1.6e-2"


def hyperball(base, aux, lrs):
    sets = (["optim.name=muon"] if base == "muon" else []) + ["optim.hyperball=true", f"optim.aux_lr={aux}"]
    return {"family": f"{base}-hyperball", "aux": aux, "sets": sets, "lrs": lrs,
            "label": f"Hyperball over {'Muon' if base == 'muon' else 'AdamW'}, aux_lr {aux}"}


def adamw(aux, lrs):
    return {"family": "adamw", "aux": aux, "lrs": lrs,
            "sets": ["train.weight_decay=0.1"] + ([f"optim.aux_lr={aux}"] if aux else []),
            "label": "AdamW + weight decay 0.1" + (f", aux_lr {aux}" if aux else "")}


OPTIMIZERS = {
    "adamw": adamw(None, [2.5e-4, 5e-4, 1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2]),
    "adamw-aux1.6e-2": adamw("1.6e-2", [5e-4, 1e-3, 2e-3, 4e-3, 8e-3]),
    f"adamw-hyperball-aux{MAIN_AUX}": hyperball("adamw", MAIN_AUX, HB_LRS),
    f"muon-hyperball-aux{MAIN_AUX}": hyperball("muon", MAIN_AUX, HB_LRS),
}
CHECKS = {
    "adamw-aux8e-3": adamw("8e-3", [5e-4, 1e-3, 2e-3, 4e-3, 8e-3]),
    "adamw-aux3.2e-2": adamw("3.2e-2", [1e-3, 2e-3, 4e-3, 8e-3]),
    "adamw-hyperball-aux1e-3": hyperball("adamw", "1e-3", [2e-2, 4e-2]),
    "adamw-hyperball-aux4e-3": hyperball("adamw", "4e-3", HB_LRS[:6]),
    "adamw-hyperball-aux3.2e-2": hyperball("adamw", "3.2e-2", [2e-2, 4e-2, 8e-2]),
    "adamw-hyperball-aux6.4e-2": hyperball("adamw", "6.4e-2", [2e-2, 4e-2, 8e-2]),
    "adamw-hyperball-aux1.28e-1": hyperball("adamw", "1.28e-1", [2e-2, 4e-2, 8e-2]),
    "muon-hyperball-aux1e-3": hyperball("muon", "1e-3", [4e-2, 8e-2]),
    "muon-hyperball-aux4e-3": hyperball("muon", "4e-3", HB_LRS),
    "muon-hyperball-aux3.2e-2": hyperball("muon", "3.2e-2", [1e-2, 2e-2, 4e-2, 8e-2]),
    "muon-hyperball-aux6.4e-2": hyperball("muon", "6.4e-2", [2e-2, 4e-2, 8e-2, 1.6e-1]),
    "muon-hyperball-aux1.28e-1": hyperball("muon", "1.28e-1", [2e-2, 4e-2, 8e-2]),
}
# Noise: the best settings at the widest rung again with another seed (init
# and data order), outside the best-over-both table.
SEEDS = {
    "adamw-aux8e-3-seed2": {**adamw("8e-3", [2e-3]), "family": "seed", "label": "AdamW, aux_lr 8e-3, seed 2"},
    "muon-hyperball-aux3.2e-2-seed2": {**hyperball("muon", "3.2e-2", [2e-2]), "family": "seed",
                                       "label": "Hyperball over Muon, aux_lr 3.2e-2, seed 2"},
}
for v in SEEDS.values():
    v["sets"] = v["sets"] + ["train.seed=2"]
CHECKS.update(SEEDS)
ALL = {**OPTIMIZERS, **CHECKS}


def run_dir(out, opt, lr):
    return os.path.join(out, f"{opt}-lr{lr:g}")


def cmd_run(a):
    with open(LADDER, "rb") as f:
        base_sets = tomllib.load(f)["ladder"]["set"]
    for opt, spec in ALL.items():
        for lr in spec["lrs"]:
            sets = base_sets + spec["sets"] + [f"train.lr={lr:g}"]
            d = run_dir(a.out, opt, lr)
            argv = [a.moetrain, "ladder", "run", LADDER, "--out", d, "--jobs", str(a.jobs), "--no-progress",
                    "--set", "ladder.set=" + json.dumps(sets)]
            print("#", " ".join(argv), flush=True)
            r = subprocess.run(argv)
            if r.returncode != 0:
                sys.exit(f"{d}: ladder run failed ({r.returncode})")


def read_results(out):
    rows = []
    for opt, spec in ALL.items():
        for lr in spec["lrs"]:
            path = os.path.join(run_dir(out, opt, lr), "results.jsonl")
            if not os.path.exists(path):
                continue
            for line in open(path):
                r = json.loads(line)
                rows.append({"optimizer": opt, "lr": lr, "width": r["meta"]["d_model"] if "d_model" in r["meta"] else r["name"],
                             "rung": r["name"], "loss": r["loss"], "tokens": r["tokens"],
                             "train_loss": r["meta"].get("final_train_loss")})
    return rows


COLORS = ["#1f77b4", "#d62728", "#2ca02c"]


def svg_plot(rows, path):
    opts = list(OPTIMIZERS)
    rungs = sorted({r["rung"] for r in rows}, key=lambda n: int("".join(c for c in n if c.isdigit())))
    finite = [r["loss"] for r in rows if math.isfinite(r["loss"])]
    lo, hi = min(finite), max(finite)
    lo, hi = math.floor(lo * 10) / 10, math.ceil(min(hi, lo + 2.0) * 10) / 10
    W, H, pad, pw, ph = 60 + len(opts) * 330, 360, 60, 290, 240
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    for k, opt in enumerate(opts):
        x0, y0 = pad + k * (pw + 40), 40
        lrs = OPTIMIZERS[opt]["lrs"]
        lx0, lx1 = math.log(lrs[0]) - 0.2, math.log(lrs[-1]) + 0.2
        X = lambda lr: x0 + (math.log(lr) - lx0) / (lx1 - lx0) * pw
        Y = lambda l: y0 + ph - (min(max(l, lo), hi) - lo) / (hi - lo) * ph
        out.append(f'<text x="{x0 + pw / 2}" y="{y0 - 14}" text-anchor="middle" font-weight="bold">{OPTIMIZERS[opt]["label"]}</text>')
        out.append(f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
        for lr in lrs:
            out.append(f'<line x1="{X(lr):.1f}" y1="{y0 + ph}" x2="{X(lr):.1f}" y2="{y0 + ph + 4}" stroke="#888"/>')
            out.append(f'<text x="{X(lr):.1f}" y="{y0 + ph + 16}" text-anchor="middle">{lr:g}</text>')
        out.append(f'<text x="{x0 + pw / 2}" y="{y0 + ph + 34}" text-anchor="middle">learning rate (log)</text>')
        t = lo
        while t <= hi + 1e-9:
            out.append(f'<line x1="{x0}" y1="{Y(t):.1f}" x2="{x0 + pw}" y2="{Y(t):.1f}" stroke="#eee"/>')
            if k == 0:
                out.append(f'<text x="{x0 - 6}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:.1f}</text>')
            t += 0.2
        if k == 0:
            out.append(f'<text x="16" y="{y0 + ph / 2}" transform="rotate(-90 16 {y0 + ph / 2})" text-anchor="middle">'
                       'held-out loss (nats/byte)</text>')
        for j, rung in enumerate(rungs):
            pts = sorted((r["lr"], r["loss"]) for r in rows if r["optimizer"] == opt and r["rung"] == rung)
            if not pts:
                continue
            c = COLORS[j % len(COLORS)]
            out.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
                c, " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts if math.isfinite(y))))
            best = min((p for p in pts if math.isfinite(p[1])), key=lambda p: p[1])
            for x, y in pts:
                if math.isfinite(y):
                    r = 5 if (x, y) == best else 3
                    out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="{r}" fill="{c}"/>')
            if k == 0:
                out.append(f'<text x="{x0 + 8}" y="{y0 + 16 + 15 * j}" fill="{c}">d_model {rung.lstrip("w")}</text>')
    out.append(f'<text x="{pad}" y="{H - 8}" fill="#555">Big dot: best lr of the width. Held-out loss at the end of '
               'each run; losses above the top of the axis are drawn at the top.</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def svg_best(best, seeds, path):
    """Best held-out loss over both lrs per optimizer family against width (equal tokens)."""
    fams = [("adamw", "AdamW + wd (lr, aux_lr tuned)", COLORS[0]), ("adamw-hyperball", "Hyperball over AdamW", COLORS[1]),
            ("muon-hyperball", "Hyperball over Muon", COLORS[2])]
    widths = sorted({int(b["rung"].lstrip("w")) for b in best})
    losses = [b["loss"] for b in best] + [r["loss"] for r in seeds]
    lo, hi = math.floor(min(losses) * 10) / 10, math.ceil(max(losses) * 10) / 10
    W, H, x0, y0, pw, ph = 520, 330, 70, 30, 300, 240
    X = lambda w: x0 + (math.log2(w) - math.log2(widths[0]) + 0.3) / (math.log2(widths[-1]) - math.log2(widths[0]) + 0.6) * pw
    Y = lambda l: y0 + ph - (l - lo) / (hi - lo) * ph
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    t = lo
    while t <= hi + 1e-9:
        out.append(f'<line x1="{x0}" y1="{Y(t):.1f}" x2="{x0 + pw}" y2="{Y(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:.1f}</text>')
        t += 0.1
    for w in widths:
        out.append(f'<text x="{X(w):.1f}" y="{y0 + ph + 16}" text-anchor="middle">{w}</text>')
    out.append(f'<text x="{x0 + pw / 2}" y="{y0 + ph + 34}" text-anchor="middle">d_model (153,600 tokens each)</text>')
    out.append(f'<text x="16" y="{y0 + ph / 2}" transform="rotate(-90 16 {y0 + ph / 2})" text-anchor="middle">'
               'best held-out loss (nats/byte)</text>')
    for j, (fam, label, c) in enumerate(fams):
        pts = sorted((int(b["rung"].lstrip("w")), b["loss"]) for b in best if b["family"] == fam)
        out.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
            c, " ".join(f"{X(w):.1f},{Y(l):.1f}" for w, l in pts)))
        for w, l in pts:
            out.append(f'<circle cx="{X(w):.1f}" cy="{Y(l):.1f}" r="4" fill="{c}"/>')
        out.append(f'<text x="{x0 + pw + 10}" y="{y0 + 20 + 16 * j}" fill="{c}">{label}</text>')
    for r in seeds:  # the same settings, another seed: hollow markers
        c = COLORS[0] if r["optimizer"].startswith("adamw") else COLORS[2]
        w = int(r["rung"].lstrip("w"))
        out.append(f'<circle cx="{X(w):.1f}" cy="{Y(r["loss"]):.1f}" r="5" fill="none" stroke="{c}" stroke-width="1.5"/>')
    out.append(f'<text x="{x0 + pw + 10}" y="{y0 + 76}" fill="#555">hollow: best AdamW and</text>')
    out.append(f'<text x="{x0 + pw + 10}" y="{y0 + 90}" fill="#555">Muon-Hyperball settings</text>')
    out.append(f'<text x="{x0 + pw + 10}" y="{y0 + 104}" fill="#555">of d_model 128, seed 2</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def cmd_plot(a):
    rows = read_results(a.out)
    if not rows:
        sys.exit(f"no results under {a.out}")
    svg_plot(rows, a.svg)
    summary = {"rows": rows, "best": []}
    print("| optimizer | width | tokens | best lr | held-out loss at best lr | lr: held-out loss |")
    print("|---|---|---|---|---|---|")
    for opt, spec in ALL.items():
        for rung in sorted({r["rung"] for r in rows}, key=lambda n: int(n.lstrip("w"))):
            pts = sorted((r["lr"], r["loss"], r["tokens"]) for r in rows if r["optimizer"] == opt and r["rung"] == rung)
            if not pts:
                continue
            best = min(pts, key=lambda p: p[1] if math.isfinite(p[1]) else float("inf"))
            summary["best"].append({"optimizer": opt, "rung": rung, "lr": best[0], "loss": best[1], "tokens": best[2]})
            grid = ", ".join(f"{p[0]:g}: {p[1]:.3f}" for p in pts)
            print(f"| {spec['label']} | {rung.lstrip('w')} | {best[2]:.0f} | {best[0]:g} | {best[1]:.4f} | {grid} |")
    print()
    print("| optimizer | width | best lr | best aux_lr | held-out loss |")
    print("|---|---|---|---|---|")
    summary["best_over_both"] = []
    for fam in ["adamw", "adamw-hyperball", "muon-hyperball"]:
        for rung in sorted({r["rung"] for r in rows}, key=lambda n: int(n.lstrip("w"))):
            pts = [(r["loss"], r["lr"], ALL[r["optimizer"]]["aux"]) for r in rows
                   if ALL[r["optimizer"]]["family"] == fam and r["rung"] == rung and math.isfinite(r["loss"])]
            if not pts:
                continue
            loss, lr, aux = min(pts)
            summary["best_over_both"].append({"family": fam, "rung": rung, "lr": lr, "aux_lr": aux, "loss": loss})
            print(f"| {fam} | {rung.lstrip('w')} | {lr:g} | {aux or '= lr'} | {loss:.4f} |")
    svg_best(summary["best_over_both"], [r for r in rows if ALL[r["optimizer"]]["family"] == "seed"], a.svg_best)
    with open(a.json, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--moetrain", default=os.path.join(ROOT, "build/src/moetrain"))
    r.add_argument("--out", default="runs/optim-sweep")
    r.add_argument("--jobs", type=int, default=2)
    q = sub.add_parser("plot")
    q.add_argument("--out", default="runs/optim-sweep")
    q.add_argument("--svg", default=os.path.join(ROOT, "docs/optimizers-sweep.svg"))
    q.add_argument("--svg-best", default=os.path.join(ROOT, "docs/optimizers-loss.svg"))
    q.add_argument("--json", default=os.path.join(ROOT, "docs/optimizers-sweep.json"))
    a = p.parse_args()
    cmd_run(a) if a.cmd == "run" else cmd_plot(a)


if __name__ == "__main__":
    main()
