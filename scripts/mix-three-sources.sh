#!/usr/bin/env bash
# The second real corpus of docs/mix.md's measured searches: three sources a
# Debian machine can install, each its own topic, one quality level —
#   go        the Go standard library's source (golang-1.19-src), one document per file
#   docs      the Python manuals' tutorial, reference, how-tos and FAQ (python3.11-doc)
#   fortunes  the fortune cookie files (fortunes), one document per fortune
# — and a mixture search whose target is the held-out loss of go alone,
# with replicate seeds, three verify seeds and a 4x scale transfer.
#   scripts/mix-three-sources.sh [--search-only]   (the search: about 20 minutes on two cores; the corpus and its build: a minute more, plus the apt-get installs)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/src/moetrain
out=runs/three-sources
if [[ "${1:-}" != --search-only ]]; then
  for p in golang-1.19-src python3.11-doc fortunes; do
    dpkg -s "$p" > /dev/null 2>&1 || apt-get install -y "$p"
  done
  mkdir -p $out/corpus
  # Fortunes: one JSONL record per fortune (the files separate them with a line "%").
  python3 - $out/corpus/fortunes.jsonl <<'PY'
import json, os, sys
root = "/usr/share/games/fortunes"
with open(sys.argv[1], "w") as out:
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if "." in name or not os.path.isfile(path):
            continue  # the .dat indexes and .u8 links
        text = open(path, encoding="utf-8", errors="replace").read()
        for f in text.split("\n%\n"):
            if f.strip():
                out.write(json.dumps({"text": f.strip("\n") + "\n", "topic": "fortunes"}) + "\n")
PY
  "$bin" data build --config configs/data/three-sources.toml --out $out/data
fi
"$bin" mix search configs/mix/three-sources.toml --out runs/mix-three-sources --jobs 2 --no-progress
# Finished: run again, it trains nothing and prints the summary.
# The figures docs/mix.md quotes (DocsExamples.MixQuotesTheThreeSourceSearch checks them).
ex=docs/examples
"$bin" mix search configs/mix/three-sources.toml --out runs/mix-three-sources --no-progress 2>&1 >/dev/null |
  grep '^# proxies\|^# held-out rank\|^# seed noise\|^# regressor\|^# choice\|^# trained\|^# scale transfer' \
  > $ex/mix-three-sources.txt
python3 scripts/mix_search_record.py runs/mix-three-sources $ex/mix-three-sources.json
