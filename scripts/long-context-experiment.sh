#!/usr/bin/env bash
# The long-context experiment of docs/long-context.md ("The extension
# experiment"): a small dense model taught passkey retrieval at 512 tokens,
# measured at 512 and 2,048, then extended to 2,048 from one checkpoint —
# RoPE unchanged, position interpolation, YaRN, YaRN for twice and three
# times the steps with passkey items up to the full window, and YaRN with
# far needles or number-dense haystacks, and on the number-dense mixture a
# 16-fold RoPE base or YaRN x8 — and measured again, with the
# held-out loss on stitched repositories by position and by context.
# Everything goes to runs/long-context (the configs name that path).
# Steps already done (their outputs exist) are skipped, so a killed run
# continues where it stopped. VARIANTS (below) picks the extensions; MODEL
# and RUNS train another model on the same data. Needs a built moetrain
# (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BUILD_DIR:-build}/src/moetrain
work=runs/long-context
mkdir -p "$work"

# 1. The corpus: Python packages as repositories (no tests, no GUI toolkits),
#    the manuals without whatsnew/ (kept back for the held-out filler).
if [[ ! -d $work/corpus ]]; then
  tmp=$work/corpus.tmp && rm -rf "$tmp" && mkdir -p "$tmp/python/stdlib-modules" "$tmp/docs"
  py=/usr/lib/python3.11
  for d in "$py"/*/ /usr/lib/python3/dist-packages/*/; do
    name=$(basename "$d")
    case $name in test|tests|idlelib|tkinter|turtledemo|lib2to3|__pycache__|config-*|site-packages|dist-packages|*.dist-info|*.egg-info) continue ;; esac
    mkdir -p "$tmp/python/$name"
    (cd "$d" && find . -name '*.py' -not -path '*/test*' -not -path '*/__pycache__/*' \
       -exec cp --parents -t "$OLDPWD/$tmp/python/$name" {} +)
  done
  cp "$py"/*.py "$tmp/python/stdlib-modules/"
  src=/usr/share/doc/python3.11/html/_sources
  (cd "$src" && find . -name '*.txt' -not -path './whatsnew/*' -exec cp --parents -t "$OLDPWD/$tmp/docs" {} +)
  mv "$tmp" "$work/corpus"
fi

# 1b. More stitched repositories for the longest extension (yarn8-long): the
#    Python packages of these Debian packages, one directory each, tests left
#    out. The tokenizer stays the one of step 2 (trained without them).
more_pkgs="python3-sympy python3-django python3-networkx python3-sqlalchemy python3-twisted python3-pandas
           python3-sklearn python3-astropy python3-matplotlib python3-scipy python3-numpy"
if [[ ! -d $work/corpus-more ]]; then
  # shellcheck disable=SC2086
  missing=$(for p in $more_pkgs; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
  [[ -z $missing ]] || { echo "the longest extension reads Debian's" $missing "— apt-get install" $missing >&2; exit 2; }
  tmp=$work/corpus-more.tmp && rm -rf "$tmp" && mkdir -p "$tmp"
  for p in $more_pkgs; do
    dpkg -L "$p" | grep -E '^/usr/lib/python3/dist-packages/[^/.][^/]*$' | while read -r d; do
      [[ -d $d && $d != *.egg-info && $d != *.dist-info ]] || continue
      name=$(basename "$d") && mkdir -p "$tmp/$name"
      (cd "$d" && find . -name '*.py' -not -path '*/test*' -not -path '*/__pycache__/*' \
         -exec cp --parents -t "$OLDPWD/$tmp/$name" {} +)
    done
  done
  mv "$tmp" "$work/corpus-more"
fi

# 2. A tokenizer of the corpus alone: passkey lengths are counted in its tokens.
[[ -f $work/tok.model ]] || "$bin" tokenizer train --input "$work/corpus" --out "$work/tok.model" --vocab-size 4096

# 3. Passkey training documents: short ones for the 512 phase, long ones for
#    the extension (all depths, needle up to ~1,800 tokens back); filler from
#    the library reference. Three in five short documents and half the long
#    ones cycle through three filler sentences (--repeat 3, as the original
#    task's filler repeats): a model this small forms no induction heads from
#    the key's few copyable tokens alone (docs/long-context.md). Held-out
#    items: other keys, non-repeating filler from whatsnew/.
filler=/usr/share/doc/python3.11/html/_sources/library
depths=0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1
pk() { "$bin" tasks make passkey --split train --depths "${PK_DEPTHS:-$depths}" --filler "$filler" --tokenizer "$work/tok.model" "$@"; }
if [[ ! -d $work/passkey-short ]]; then
  rm -rf "$work/passkey-short.tmp"
  pk --n 36000 --seed 1 --tokens 48,64,96,128,192,256,384 --repeat 3 --documents "$work/passkey-short.tmp/cycled"
  pk --n 24000 --seed 4 --tokens 48,64,96,128,192,256,384 --documents "$work/passkey-short.tmp/plain"
  mv "$work/passkey-short.tmp" "$work/passkey-short"
fi
if [[ ! -d $work/passkey-long ]]; then
  rm -rf "$work/passkey-long.tmp"
  pk --n 2000 --seed 3 --tokens 512,768,1024,1280,1536,1792 --repeat 3 --documents "$work/passkey-long.tmp/cycled"
  pk --n 2000 --seed 5 --tokens 512,768,1024,1280,1536,1792 --documents "$work/passkey-long.tmp/plain"
  mv "$work/passkey-long.tmp" "$work/passkey-long"
fi
if [[ ! -d $work/passkey-xl ]]; then  # up to the full window: depth 0 at 2,048 is ~1,950 tokens back
  rm -rf "$work/passkey-xl.tmp"
  pk --n 1000 --seed 6 --tokens 1856,1920,1984 --repeat 3 --documents "$work/passkey-xl.tmp/cycled"
  pk --n 1000 --seed 7 --tokens 1856,1920,1984 --documents "$work/passkey-xl.tmp/plain"
  mv "$work/passkey-xl.tmp" "$work/passkey-xl"
fi
if [[ ! -d $work/passkey-far ]]; then  # the full window with the needle in its first 30%: 1,300-1,950 tokens back
  rm -rf "$work/passkey-far.tmp"
  far=0,0.05,0.1,0.15,0.2,0.25,0.3
  PK_DEPTHS=$far pk --n 1500 --seed 8 --tokens 1856,1920,1984 --repeat 3 --documents "$work/passkey-far.tmp/cycled"
  PK_DEPTHS=$far pk --n 1500 --seed 9 --tokens 1856,1920,1984 --documents "$work/passkey-far.tmp/plain"
  mv "$work/passkey-far.tmp" "$work/passkey-far"
fi
if [[ ! -d $work/passkey-dense ]]; then  # haystacks dense in numbers: Debian's changelogs beside the library reference
  rm -rf "$work/passkey-dense.tmp"
  pk --n 3000 --seed 10 --tokens 512,768,1024,1280,1536,1792,1984 --documents "$work/passkey-dense.tmp/plain" \
    --filler /usr/share/doc/*/changelog.Debian.gz
  mv "$work/passkey-dense.tmp" "$work/passkey-dense"
fi
[[ -f $work/passkey-heldout.jsonl ]] || "$bin" tasks make passkey --split held-out --n 500 --seed 2 --tokens 480,2000 \
  --filler /usr/share/doc/python3.11/html/_sources/whatsnew --tokenizer "$work/tok.model" --out "$work/passkey-heldout.jsonl"

# 4. The dataset, and the run's plan against it (refuses repeated data). A
#    dataset built before the code_more bucket existed is built again: the
#    other buckets come out byte for byte the same, so runs trained on it
#    resume on the new one.
if ! grep -q '"code_more/q0"' "$work/ds/manifest.json" 2>/dev/null; then
  rm -rf "$work/ds"
  "$bin" data build --config configs/data/long-context.toml --out "$work/ds"
fi
"$bin" data plan "$work/ds" --config configs/long-context/run.toml

# 5. The phases at 512 tokens, once: retrieval (passkey documents alone),
#    then language (code, prose and passkey), stopped at the end of "short".
run=configs/long-context/run.toml
#    MODEL="--set model.d_model=256 ..." trains another model on the same data,
#    its runs and measurements in $work/$RUNS (RUNS names it; required with MODEL).
runs=$work${RUNS:+/$RUNS}
[[ -z ${MODEL:-} || -n ${RUNS:-} ]] || { echo "MODEL needs RUNS (a subdirectory of $work for its runs)" >&2; exit 2; }
mkdir -p "$runs"
# shellcheck disable=SC2086
"$bin" train --config $run --run-dir "$runs/base" --resume --stop-at short --no-progress ${MODEL:-}

# 6. Measurements, each model as soon as it exists: passkey at 512 and
#    2,048, the held-out loss by position on the stitched repositories in
#    windows of 2,048 (the base model past its length: --past-seq-len). Each
#    written under .tmp and renamed: a killed eval is redone.
batches=${EVAL_BATCHES:-23}  # x 8 windows of 2,048: 184 of the held-out code bucket's 191
ev() { local out=${*: -1}; "$bin" eval --no-progress "$@.tmp" && mv "$out.tmp" "$out"; }
[[ -f $runs/eval-base.json ]] || ev --ckpt "$runs/base" --tasks "$work/passkey-heldout.jsonl" --past-seq-len \
  --positions --seq-len 2048 --batches $batches --mixture configs/data/long-context-long.toml \
  --plot "$runs/positions-base.svg" --out "$runs/eval-base.json"

# 7. Five extensions from its checkpoint at the phase's end, each measured.
declare -A rope=(
  [unchanged]=""
  [linear]="--set phase[2].rope_scaling=\"linear\" --set phase[2].rope_factor=4"
  [yarn]="--set phase[2].rope_scaling=\"yarn\" --set phase[2].rope_factor=4 --set phase[2].rope_original_len=512"
  # YaRN again with twice the steps, and passkey items up to the full window
  [yarn-x2]="--set phase[2].rope_scaling=\"yarn\" --set phase[2].rope_factor=4 --set phase[2].rope_original_len=512
             --set phase[2].steps=640 --set phase[2].mixture=\"configs/data/long-context-long-x2.toml\""
  # ... and three times the steps
  [yarn-x3]="--set phase[2].rope_scaling=\"yarn\" --set phase[2].rope_factor=4 --set phase[2].rope_original_len=512
             --set phase[2].steps=960 --set phase[2].mixture=\"configs/data/long-context-long-x3.toml\""
  # ... the same steps with a fifth of the tokens far-needle items (passkey_far)
  [yarn-far]="--set phase[2].rope_scaling=\"yarn\" --set phase[2].rope_factor=4 --set phase[2].rope_original_len=512
              --set phase[2].steps=960 --set phase[2].mixture=\"configs/data/long-context-long-far.toml\""
  # ... the same steps with a sixth of the tokens passkey items in number-dense haystacks (passkey_dense)
  [yarn-dense]="--set phase[2].rope_scaling=\"yarn\" --set phase[2].rope_factor=4 --set phase[2].rope_original_len=512
                --set phase[2].steps=960 --set phase[2].mixture=\"configs/data/long-context-long-dense.toml\""
  # the dense mixture with the RoPE base raised 16-fold instead (ABF: Xiong et al. 2023, Llama 3)
  [abf-dense]="--set phase[2].rope_theta=160000 --set phase[2].steps=960
               --set phase[2].mixture=\"configs/data/long-context-long-dense.toml\""
  # ... and with YaRN x8 from 512: the frequencies scaled for twice the window trained
  [yarn8-dense]="--set phase[2].rope_scaling=\"yarn\" --set phase[2].rope_factor=8 --set phase[2].rope_original_len=512
                 --set phase[2].steps=960 --set phase[2].mixture=\"configs/data/long-context-long-dense.toml\""
  # ... for 2,400 steps (39M tokens), most of them code from the larger corpus (code_more)
  [yarn8-long]="--set phase[2].rope_scaling=\"yarn\" --set phase[2].rope_factor=8 --set phase[2].rope_original_len=512
                --set phase[2].steps=2400 --set phase[2].mixture=\"configs/data/long-context-long-more.toml\""
)
# VARIANTS="yarn-x3" trains and measures only those; VARIANTS="" stops after the base.
for v in ${VARIANTS-unchanged yarn yarn-x2 yarn-x3 yarn-far yarn-dense linear abf-dense yarn8-dense yarn8-long}; do
  dir=$runs/ext-$v
  [[ -d $dir ]] || "$bin" ckpt branch "$runs/base" "$dir"
  # shellcheck disable=SC2086
  "$bin" train --config $run --run-dir "$dir" --resume --no-progress ${MODEL:-} ${rope[$v]}
  [[ -f $runs/eval-$v.json ]] || ev --ckpt "$dir" --tasks "$work/passkey-heldout.jsonl" --positions \
    --batches $batches --mixture configs/data/long-context-long.toml --plot "$runs/positions-$v.svg" \
    --out "$runs/eval-$v.json"
  python3 scripts/long_context_table.py "$work" "$runs" | tee "$runs/summary.md"
done

# 8. The same tokens against context on the larger corpus's held-out repositories
#    (about 600 windows of 2,048: three times code/q0's), for the models named
#    in MORE_EVAL that exist.
for v in ${MORE_EVAL-yarn8-dense yarn8-long}; do
  [[ -d $runs/ext-$v && ! -f $runs/eval-more-$v.json ]] || continue
  ev --ckpt "$runs/ext-$v" --positions --batches 75 --mixture configs/data/long-context-eval-more.toml \
    --out "$runs/eval-more-$v.json"
  python3 scripts/long_context_table.py "$work" "$runs" | tee "$runs/summary.md"
done
