#!/usr/bin/env python3
"""Sparse weight streaming: bytes saved against loss (docs/streaming.md).

    scripts/sparse_stream_sweep.py [--moetrain build/src/moetrain] [--out runs/sparse-stream]
                                   [--json docs/streaming-sparse.json]

Trains the same MoE with stream.expert_density in DENSITIES (1 = dense
streaming, bit-identical to in place) and two seeds, then prints a Markdown
table: the routed-expert bytes per step on the sparse wire against dense,
and the held-out loss at the end (byte tokens of Debian's libstdc++ 12
headers, 5% held out, as in configs/ladder/optim-sweep.toml), the mean of
the seeds with their spread. A finished run (metrics with the last step)
is not trained again.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

DENSITIES = [1.0, 0.75, 0.5, 0.25, 0.1]
SEEDS = [1, 2]
STEPS = 300
# tiny-test widened to 4 layers of 8 experts, on real text.
SETS = ["model.n_layers=4", "model.n_experts=8", "model.d_expert=128", "train.steps=%d" % STEPS,
        "train.batch_size=8", "train.log_every=1", "train.eval_every=%d" % STEPS, "train.eval_batches=8",
        "data.path=/usr/include/c++/12", "data.max_bytes=3000000", "data.eval_frac=0.05", "stream.enabled=true"]


def run(moetrain, out, density, seed):
    d = os.path.join(out, "d%g_s%d" % (density, seed))
    metrics = os.path.join(d, "metrics.jsonl")
    if os.path.exists(metrics):
        rows = [json.loads(l) for l in open(metrics) if l.strip()]
        if rows and rows[-1].get("step") == STEPS:
            return rows
    args = [moetrain, "train", "--no-progress", "--preset", "tiny-test", "--run-dir", d, "--move-aside"]
    for s in SETS + ["stream.expert_density=%g" % density, "train.seed=%d" % seed]:
        args += ["--set", s]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return [json.loads(l) for l in open(metrics) if l.strip()]


def mean(xs):
    return sum(xs) / len(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moetrain", default=os.path.join(ROOT, "build/src/moetrain"))
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/sparse-stream"))
    ap.add_argument("--json", default=os.path.join(ROOT, "docs/streaming-sparse.json"))
    a = ap.parse_args()
    table = []
    for density in DENSITIES:
        loss, wire = [], None
        for seed in SEEDS:
            rows = run(a.moetrain, a.out, density, seed)
            loss.append(rows[-1]["eval_loss"])
            sp = rows[-1]["stream"].get("sparse")
            wire = sp["wire_bytes"] / sp["dense_bytes"] if sp else 1.0
        table.append({"expert_density": density, "wire_over_dense": wire, "eval_loss": mean(loss),
                      "loss_spread": max(loss) - min(loss), "loss_by_seed": loss})
    with open(a.json, "w") as f:
        json.dump({"steps": STEPS, "seeds": SEEDS, "sets": SETS, "rows": table}, f, indent=1)
    base = table[0]["eval_loss"]
    print("| expert density | expert bytes on the wire | saved | held-out loss | vs dense |")
    print("|---|---|---|---|---|")
    for r in table:
        print("| %g | %.3f of dense | %.0f%% | %.4f ± %.4f | %+.4f |" % (
            r["expert_density"], r["wire_over_dense"], 100 * (1 - r["wire_over_dense"]), r["eval_loss"],
            r["loss_spread"] / 2, r["eval_loss"] - base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
