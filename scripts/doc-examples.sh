#!/usr/bin/env bash
# Regenerates the worked examples the docs quote from runs, into
# docs/examples/ (tests/golden/docs_examples_test.cpp fails when a doc stops
# quoting them): the quickstart model's `moetrain eval` (after
# scripts/quickstart.sh has trained runs/quickstart) and the downstream-
# accuracy ladder of docs/ladder.md (docs/examples/ladder/, trained here in
# runs/doc-ladder). Figures of trained runs depend on the CPU's kernels:
# docs/examples/PROVENANCE.txt records the commit and the CPU they came from.
# After running it, paste the changed outputs into the docs.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/src/moetrain
ex=docs/examples
[[ -d runs/quickstart/checkpoints ]] || { echo "doc-examples: run scripts/quickstart.sh first" >&2; exit 2; }

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

dirty=$(git diff --quiet -- . ':!docs/examples' || echo ' (with uncommitted changes)')
{
  echo "commit: $(git rev-parse --short HEAD)$dirty"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), $(grep -o -w 'avx512f\|avx512_bf16\|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "date: $(date -u +%Y-%m-%d)"
} > $ex/PROVENANCE.txt
echo "doc-examples: wrote $(ls $ex | tr '\n' ' ')" >&2
