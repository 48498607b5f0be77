#!/usr/bin/env bash
# Regenerates the worked examples the docs quote from runs, into
# docs/examples/ (tests/golden/docs_examples_test.cpp fails when a doc stops
# quoting them): the quickstart corpus's decontamination report, the
# quickstart model's `moetrain eval` (after
# scripts/quickstart.sh has trained runs/quickstart) and the downstream-
# accuracy ladder of docs/ladder.md (docs/examples/ladder/, trained here in
# runs/doc-ladder), docs/mix.md's eval-target example and measured
# quickstart search (runs/doc-mix-eval, runs/mix-quickstart; about ten
# minutes on two cores), and docs/training.md's annealing comparison
# (runs/doc-anneal*, four 300-step runs; twenty more). Figures of trained runs depend on the CPU's kernels:
# docs/examples/PROVENANCE.txt records the commit and the CPU they came from.
# After running it, paste the changed outputs into the docs.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/src/moetrain
ex=docs/examples
[[ -d runs/quickstart/checkpoints ]] || { echo "doc-examples: run scripts/quickstart.sh first" >&2; exit 2; }

# docs/data.md: the quickstart corpus decontaminated against the task files the
# repository ships (runs/quickstart-data-decon is derived data, rewritten each time).
rm -rf runs/quickstart-data-decon
"$bin" data decontaminate runs/quickstart-data --tasks $ex/mix/toy.jsonl $ex/ladder/toy.jsonl \
  --out runs/quickstart-data-decon --quiet > $ex/quickstart-decontaminate.txt

# docs/inference.md: the quickstart model on two questions.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tasks=$tmp/toy.jsonl  # the task is named by its file stem
cat > "$tasks" <<'JSONL'
{"context": "#include <", "choices": ["stdio.h>", "zebra crossing"], "answer": 0}
{"context": "Permission is hereby granted, free of", "choices": [" charge", " the moon"], "answer": 0}
JSONL
"$bin" eval --ckpt runs/quickstart --tasks "$tasks" --no-progress > $ex/quickstart-eval.txt

# docs/ladder.md: three tiny-test rungs with a cooldown branch each, scored on a toy task.
"$bin" ladder run $ex/ladder/ladder.toml --out runs/doc-ladder --jobs 2 --move-aside --no-progress
head -1 runs/doc-ladder/results.jsonl > $ex/ladder-first-result.jsonl
"$bin" eval --ckpt runs/doc-ladder/r1 --tasks $ex/ladder/toy.jsonl --threads 1 --no-progress | grep '^task ' \
  > $ex/ladder-eval-r1.txt
"$bin" ladder fit runs/doc-ladder/results.jsonl --chance toy=0.33 > $ex/ladder-fit.txt

# docs/mix.md: the worked example with an eval target, and the measured
# quickstart search (32 proxies, the natural and chosen mixtures trained, 16
# proxies and both mixtures again at 4x the tokens).
"$bin" mix search $ex/mix/eval-example.toml --out runs/doc-mix-eval --jobs 2 --move-aside --no-progress \
  2> "$tmp/mix-eval.err" || { cat "$tmp/mix-eval.err" >&2; exit 1; }
grep '^# held-out rank\|^# regressor' "$tmp/mix-eval.err" > $ex/mix-eval-example.txt
"$bin" eval --ckpt runs/doc-mix-eval/p003 --tasks $ex/mix/toy.jsonl --threads 1 --no-progress | grep 'code/q0\|^task ' \
  > $ex/mix-eval-p003.txt
python3 - runs/doc-mix-eval $ex/mix-eval-example.json <<'PY'
import json, sys
run, out = sys.argv[1], sys.argv[2]
s = json.load(open(run + "/search.json"))
proxies = [json.loads(l) for l in open(run + "/proxies.jsonl")]
json.dump({"target": s["target"], "proxies": proxies}, open(out, "w"), indent=1, sort_keys=True)
PY
"$bin" mix search configs/mix/quickstart.toml --out runs/mix-quickstart --jobs 2 --move-aside --no-progress \
  2> "$tmp/mix-quickstart.err" || { cat "$tmp/mix-quickstart.err" >&2; exit 1; }
grep '^# held-out rank\|^# seed noise\|^# regressor\|^# choice\|^# trained\|^# scale transfer' "$tmp/mix-quickstart.err" \
  > $ex/mix-quickstart.txt
python3 scripts/mix_search_record.py runs/mix-quickstart $ex/mix-quickstart.json

# docs/training.md: the quickstart run annealed on upweighted quality, and on
# natural shares (two 300-step runs, about ten minutes on two cores).
"$bin" data plan runs/quickstart-data --config configs/quickstart-anneal.toml | sed -n '/tokens per bucket and phase/,$p' \
  > $ex/anneal-plan-phases.txt
"$bin" train --config configs/quickstart-anneal.toml --run-dir runs/doc-anneal --move-aside --no-progress 2>/dev/null
"$bin" train --config configs/quickstart-anneal.toml --run-dir runs/doc-anneal-natural --move-aside --no-progress \
  --set 'phase[1].mixture="configs/data/quickstart-anneal-natural.toml"' 2>/dev/null
"$bin" eval --ckpt runs/doc-anneal --no-progress > $ex/anneal-eval.txt
"$bin" eval --ckpt runs/doc-anneal-natural --no-progress > $ex/anneal-natural-eval.txt
# ... and a second seed of the parameters, for the noise.
"$bin" train --config configs/quickstart-anneal.toml --run-dir runs/doc-anneal-s2 --move-aside --no-progress \
  --set train.seed=2 2>/dev/null
"$bin" train --config configs/quickstart-anneal.toml --run-dir runs/doc-anneal-natural-s2 --move-aside --no-progress \
  --set train.seed=2 --set 'phase[1].mixture="configs/data/quickstart-anneal-natural.toml"' 2>/dev/null
"$bin" eval --ckpt runs/doc-anneal-s2 --no-progress > $ex/anneal-eval-seed2.txt
"$bin" eval --ckpt runs/doc-anneal-natural-s2 --no-progress > $ex/anneal-natural-eval-seed2.txt

dirty=$(git diff --quiet -- . ':!docs/examples' || echo ' (with uncommitted changes)')
{
  echo "commit: $(git rev-parse --short HEAD)$dirty"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), $(grep -o -w 'avx512f\|avx512_bf16\|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "date: $(date -u +%Y-%m-%d)"
} > $ex/PROVENANCE.txt
echo "doc-examples: wrote $(ls $ex | tr '\n' ' ')" >&2
