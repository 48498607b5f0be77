#!/usr/bin/env python3
"""A cost-aware sweep (moetrain sweep) against a learning-rate grid of the
same family on the same data, on one CPU, with seeds for the noise
(docs/sweep.md, issue 40). Two studies:

  optim       the AdamW grid of docs/optimizers.md (configs/ladder/optim-sweep.toml,
              7 rates x 3 widths, libstdc++ headers) against
              configs/sweep/optim-grid.toml (10 runs)
  quickstart  a grid of the quickstart family on the quickstart dataset
              (configs/ladder/quickstart-lr-grid.toml, 7 rates x 3 widths) against
              configs/sweep/quickstart.toml (10 runs)

  scripts/sweep_vs_grid.py optim --out runs/sweep-vs-grid-optim
  scripts/sweep_vs_grid.py quickstart --out runs/sweep-vs-grid-quickstart

Runs what is not finished yet (every step is resumable), then prints the
comparison as a Markdown table and writes OUT/summary.json. At each grid
rung: the grid's best over its rates for each training seed, and each sweep
replicate's best run whose cost is within the rung's (x 1.05). A replicate
is the sweep with another search seed and another training seed.
`--law-runs N` adds a longer sweep (seed 1, N runs) whose front gives the
laws and whose `at_costs` configs are trained (check_at_costs); the largest
is trained again at half and twice its predicted learning rate, and with the
grid's best settings of the largest rung given the same cost in tokens.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STUDIES = {
    "optim": {
        "ladder": "configs/ladder/optim-sweep.toml",
        "grid_sets": ["train.weight_decay=0.1"],
        "lrs": [2.5e-4, 5e-4, 1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2],
        "grid_seeds": [1, 2, 3],
        "sweep": "configs/sweep/optim-grid.toml",
        "sweep_seeds": [1, 2, 3],
    },
    "quickstart": {
        "ladder": "configs/ladder/quickstart-lr-grid.toml",
        "grid_sets": [],
        "lrs": [3.75e-4, 7.5e-4, 1.5e-3, 3e-3, 6e-3, 1.2e-2, 2.4e-2],
        "grid_seeds": [1],          # seed 2 only at each rung's best rate (--noise)
        "sweep": "configs/sweep/quickstart.toml",
        "sweep_seeds": [1, 2],
    },
}


def sh(argv):
    print("#", " ".join(argv), flush=True)
    r = subprocess.run(argv, cwd=ROOT)
    if r.returncode != 0:
        sys.exit(f"{argv[1]} failed ({r.returncode})")


def toml(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return tomllib.load(f)


def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def grid(a, st, lr, seed):
    d = os.path.join(a.out, "grid", f"lr{lr:g}-seed{seed}")
    sets = toml(st["ladder"])["ladder"]["set"] + st["grid_sets"] + [f"train.lr={lr:g}", f"train.seed={seed}"]
    if not os.path.exists(os.path.join(d, "results.jsonl")) or len(jsonl(os.path.join(d, "results.jsonl"))) < 3:
        sh([a.moetrain, "ladder", "run", st["ladder"], "--out", d, "--jobs", str(a.jobs), "--no-progress",
            "--set", "ladder.set=" + json.dumps(sets)])
    return {r["name"]: r for r in jsonl(os.path.join(d, "results.jsonl"))}


def sweep(a, st, seed, runs=None, extra=()):
    name = f"sweep-seed{seed}" if runs is None else f"sweep-law-{runs}"
    d = os.path.join(a.out, name)
    if os.path.exists(os.path.join(d, "front.json")) and runs is not None:
        return d  # finished (written by a binary before sweep.focus_costs existed: its stamp lacks the key)
    sets = toml(st["sweep"])["sweep"]["set"] + ([f"train.seed={seed}"] if seed != 1 else [])
    argv = [a.moetrain, "sweep", st["sweep"], "--out", d, "--jobs", str(a.jobs), "--no-progress",
            "--set", f"sweep.seed={seed}", "--set", "sweep.set=" + json.dumps(sets)]
    if runs is not None:  # the laws need the whole front, not the comparison's costs
        argv += ["--set", f"sweep.runs={runs}", "--set", "sweep.focus_costs=[]"]
    elif seed != 1:  # a replicate measures the search's noise; its at_costs checks would measure nothing new
        argv += ["--set", "sweep.check_at_costs=false"]
    for s in extra:
        argv += ["--set", s]
    sh(argv)
    return d


def train_once(a, name, config, sets):
    d = os.path.join(a.out, "checks", name)
    cfg = toml(config) if not os.path.isabs(config) else tomllib.load(open(config, "rb"))
    steps = cfg["train"]["steps"]
    metrics = os.path.join(d, "metrics.jsonl")
    done = os.path.exists(metrics) and any(
        json.loads(l).get("step") == steps and "eval_loss" in json.loads(l) for l in open(metrics) if l.strip())
    if not done:
        sh([a.moetrain, "train", "--config", config, "--run-dir", d, "--resume", "--no-progress",
            "--set", f"train.eval_every={steps}"] + sum((["--set", s] for s in sets), []))
    last = [json.loads(l) for l in open(metrics) if l.strip()][-1]
    return last["eval_loss"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("study", choices=sorted(STUDIES))
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--law-runs", type=int, default=0)
    p.add_argument("--moetrain", default=os.path.join(ROOT, "build/src/moetrain"))
    a = p.parse_args()
    a.out = os.path.abspath(a.out)
    st = STUDIES[a.study]
    rungs = toml(st["ladder"])["rung"]

    # The grid: every rate at every width, for each grid seed.
    by_seed = {s: {lr: grid(a, st, lr, s) for lr in st["lrs"]} for s in st["grid_seeds"]}
    best = {}  # rung -> [(loss, lr, seed)] best over the rates, one per seed
    for g in rungs:
        n = g["name"]
        for s, runs in by_seed.items():
            loss, lr = min((runs[lr][n]["loss"], lr) for lr in st["lrs"])
            best.setdefault(n, []).append((loss, lr, s))
    # Noise where the grid has one seed: each rung's best rate again with seed 2.
    if len(st["grid_seeds"]) == 1:
        for g in rungs:
            n = g["name"]
            lr = best[n][0][1]
            best[n].append((grid(a, st, lr, 2)[n]["loss"], lr, 2))

    # The sweep, once per replicate.
    reps = {s: jsonl(os.path.join(sweep(a, st, s), "results.jsonl")) for s in st["sweep_seeds"]}
    table, summary = [], {"study": a.study, "rungs": []}
    for g in rungs:
        n, cost = g["name"], g["flops"]
        grid_losses = [b[0] for b in best[n]]
        row = {"rung": n, "cost": cost, "grid_best": best[n][0][0], "grid_lr": best[n][0][1],
               "grid_seeds": grid_losses, "sweep": {}}
        for s, rs in reps.items():
            ok = [r for r in rs if not r["failed"] and r["cost"] <= cost * 1.05]
            if ok:
                r = min(ok, key=lambda r: r["value"])
                row["sweep"][s] = {"value": r["value"], "name": r["name"], "cost": r["cost"], "settings": r["settings"]}
        summary["rungs"].append(row)
        sw = [row["sweep"][s]["value"] for s in reps if s in row["sweep"]]
        table.append("| {} | {:.3g} | {:.4f} ({:g}) | {} | {} | {} |".format(
            n, cost, row["grid_best"], row["grid_lr"], ", ".join(f"{x:.4f}" for x in grid_losses),
            f"{max(grid_losses) - min(grid_losses):.4f}",
            ", ".join(f"{row['sweep'][s]['value']:.4f}" if s in row["sweep"] else "-" for s in reps)))
        row["grid_spread"] = max(grid_losses) - min(grid_losses)
        row["sweep_mean"] = statistics.mean(sw) if sw else None
    summary["runs"] = {"grid": len(st["lrs"]) * len(rungs), "sweep": len(next(iter(reps.values())))}
    print(f"\n| rung | cost (FLOPs) | grid best, seed 1 (lr) | grid best per seed | seed spread | sweep best per replicate |")
    print("|---|---|---|---|---|---|")
    print("\n".join(table))

    if a.law_runs:
        d = sweep(a, st, 1, a.law_runs)
        front = json.load(open(os.path.join(d, "front.json")))
        summary["law"] = {"scaling": front["scaling"], "at_costs": front["at_costs"], "front": front["runs"]}
        print(f"\nLaws over the front of {a.law_runs} runs:")
        for k, s in front["scaling"].items():
            if s["exponent"] is not None:
                print(f"  {k} ~ cost^{s['exponent']:.3f} [{s['interval'][0]:.3f}, {s['interval'][1]:.3f}], R^2 {s['r2']:.2f}")
        for at in front["at_costs"]:
            print(f"  at {at['cost']:.3g}: predicted {at['predicted_value']:.4f} "
                  f"[{at['predicted_interval'][0]:.4f}, {at['predicted_interval'][1]:.4f}], trained {at.get('observed')}"
                  f" {json.dumps(at['resolved'])} lr {at['settings'].get('train.lr', 0):.3g}")
        # The largest: its predicted rate halved and doubled, and the grid's best of the largest rung given its cost.
        top = max(front["at_costs"], key=lambda x: x["cost"])
        cfg = os.path.join(d, top["file"])
        lr = tomllib.load(open(cfg, "rb"))["train"]["lr"]
        checks = {"predicted": top.get("observed"),
                  "lr x 0.5": train_once(a, "half-lr", cfg, [f"train.lr={lr / 2:g}"]),
                  "lr x 2": train_once(a, "double-lr", cfg, [f"train.lr={lr * 2:g}"])}
        g = max(rungs, key=lambda g: g["flops"])
        glr = best[g["name"]][0][1]
        per_token = g["flops"] / by_seed[1][glr][g["name"]]["tokens"]
        tokens_per_step = by_seed[1][glr][g["name"]]["tokens"] / by_seed[1][glr][g["name"]]["meta"]["steps"]
        steps = round(top["cost"] / per_token / tokens_per_step)
        base_cfg = toml(st["ladder"])
        sets = base_cfg["ladder"]["set"] + st["grid_sets"] + [
            f"train.lr={glr:g}", f"model.d_model={g['d_model']}", f"model.n_layers={g['n_layers']}",
            f"model.n_heads={g['d_model'] // base_cfg['ladder']['head_dim']}",
            f"model.d_expert={int(g['d_model'] * base_cfg['ladder'].get('expert_ratio', 1.0))}", f"train.steps={steps}"]
        base = os.path.normpath(os.path.join(os.path.dirname(st["ladder"]), base_cfg["ladder"]["base"]))
        checks[f"grid's {g['name']} settings (lr {glr:g}), {steps} steps"] = train_once(a, "grid-extended", base, sets)
        summary["law"]["checks"] = checks
        print(f"\nAt {top['cost']:.3g} FLOPs (beyond every sweep run):")
        for k, v in checks.items():
            print(f"  {k}: {v:.4f}")

    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
