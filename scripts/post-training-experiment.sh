#!/usr/bin/env bash
# The post-training experiments of docs/post-training.md ("Measured"):
#  1. task-family documents (2-digit add, reverse, sort, lineq, strings; one
#     problem per document) built into a dataset, a small MoE pretrained on
#     them (configs/post-training/base.toml);
#  2. RL: `moetrain rl` with GRPO on `reverse`, two seeds;
#  3. OPD: a model with 5.5x the student's active parameters trained on the
#     same data under warmup-stable-decay (configs/post-training/hero.toml),
#     its cooldown branch at 0.8 of the budget as the teacher, then the
#     student distilled on-policy and by the two off-policy baselines at
#     equal student compute, two seeds each;
#  4. an agentic family: calc documents (half of them worked with the
#     calculator), a base pretrained on them, `rl` with calculator episodes.
# Everything goes to runs/post-training. Steps already done (their outputs
# exist) are skipped, so a killed run continues where it stopped. Needs a
# built moetrain (scripts/build.sh). About 2 h on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/src/moetrain
work=runs/post-training
mkdir -p "$work"

# 1. Documents, held-out items, the dataset, the base model.
if [[ ! -d $work/docs ]]; then
  rm -rf "$work/docs.tmp"
  for f in "add --digits 2 --n 5000" "reverse --length 5 --n 20000" "sort --length 5 --n 20000" \
           "lineq --n 20000" "strings --n 20000"; do
    set -- $f
    "$bin" tasks make $f --seed 1 --split train --documents "$work/docs.tmp/$1" --out "$work/$1-train.jsonl"
  done
  mv "$work/docs.tmp" "$work/docs"
fi
for f in "add --digits 2" "reverse --length 5" "sort --length 5" "lineq" "strings"; do
  set -- $f
  [[ -f $work/$1-heldout.jsonl ]] || "$bin" tasks make $f --n 300 --seed 2 --split held-out --out "$work/$1-heldout.jsonl"
done
[[ -f $work/ds/manifest.json ]] || "$bin" data build --config configs/data/post-training.toml --out "$work/ds"
[[ -d $work/base/checkpoints/step_00001310 ]] ||
  "$bin" train --config configs/post-training/base.toml --run-dir "$work/base" --no-progress
for f in add reverse sort lineq strings; do
  "$bin" eval --ckpt "$work/base" --tasks "$work/$f-heldout.jsonl" --no-held-out | grep acc
done

# 2. RL on reverse (the family whose start lies between 5% and 60%).
for seed in 1 2; do
  [[ -d $work/rl-reverse-s$seed/checkpoints/step_00001000 ]] ||
    "$bin" rl --init "$work/base" --tasks "$work/reverse-train.jsonl" --held-out "$work/reverse-heldout.jsonl" \
      --run-dir "$work/rl-reverse-s$seed" --no-progress --set train.seed=$seed --set train.steps=1000 \
      --set train.batch_size=128 --set rl.eval_items=200 --set train.eval_every=100
  "$bin" eval --ckpt "$work/rl-reverse-s$seed" --tasks "$work/reverse-heldout.jsonl" --no-held-out | grep acc
done

# 3. The teacher: the hero run stopped where its 0.8 cooldown branch decays
#    (0.8 x 1250 x (1 - 0.2) = step 800), branched and decayed to step 1000.
[[ -d $work/hero/checkpoints/step_00000800 ]] ||
  "$bin" train --config configs/post-training/hero.toml --run-dir "$work/hero" --no-progress --stop-at 800
if [[ ! -d $work/teacher-cd80/checkpoints/step_00001000 ]]; then
  [[ -d $work/teacher-cd80 ]] || "$bin" ckpt branch "$work/hero/checkpoints/step_00000800" "$work/teacher-cd80"
  "$bin" train --run-dir "$work/teacher-cd80" --resume --no-progress --set train.steps=1000
fi
"$bin" eval --ckpt "$work/teacher-cd80" --tasks "$work/reverse-heldout.jsonl" --no-held-out | grep acc
for mode in on_policy forward_kl sft; do
  for seed in 1 2; do
    run=$work/opd-$mode-s$seed
    [[ -d $run/checkpoints/step_00000400 ]] ||
      "$bin" distill --init "$work/base" --teacher "$work/teacher-cd80" --mode $mode \
        --tasks "$work/reverse-train.jsonl" --held-out "$work/reverse-heldout.jsonl" --run-dir "$run" --no-progress \
        --set train.seed=$seed --set train.steps=400 --set train.batch_size=128 --set train.lr=1e-3 \
        --set rl.eval_items=200 --set train.eval_every=50
    "$bin" eval --ckpt "$run" --tasks "$work/reverse-heldout.jsonl" --no-held-out | grep acc
  done
done

# 4. The agentic family.
if [[ ! -d $work/agentic/docs ]]; then
  rm -rf "$work/agentic/docs.tmp"
  "$bin" tasks make calc --digits 3 --n 60000 --seed 1 --split train --tool-share 0.5 \
    --documents "$work/agentic/docs.tmp/calc" --out "$work/agentic/calc-train.jsonl"
  mv "$work/agentic/docs.tmp" "$work/agentic/docs"
fi
[[ -f $work/agentic/calc-heldout.jsonl ]] ||
  "$bin" tasks make calc --digits 3 --n 300 --seed 2 --split held-out --out "$work/agentic/calc-heldout.jsonl"
[[ -f $work/agentic/ds/manifest.json ]] ||
  "$bin" data build --config configs/data/post-training-agentic.toml --out "$work/agentic/ds"
[[ -d $work/agentic/base/checkpoints/step_00001562 ]] ||
  "$bin" train --config configs/post-training/agentic-base.toml --run-dir "$work/agentic/base" --no-progress
[[ -d $work/agentic/rl-calc-s1/checkpoints/step_00000300 ]] ||
  "$bin" rl --init "$work/agentic/base" --tasks "$work/agentic/calc-train.jsonl" \
    --held-out "$work/agentic/calc-heldout.jsonl" --run-dir "$work/agentic/rl-calc-s1" --no-progress \
    --set train.seed=1 --set train.steps=300 --set train.batch_size=128 --set rl.max_new_tokens=32 \
    --set rl.eval_items=200 --set train.eval_every=50 --set rl.write_rollouts=true
