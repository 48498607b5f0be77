#!/usr/bin/env python3
"""How much of a held-out split a perfect copier could predict from far back.

For each token of a bucket's held-out split, scored in consecutive windows
of --window tokens as `moetrain eval` scores them: is it the token that
followed the nearest earlier occurrence, in the same window, of the --n
tokens before it (an induction head's prediction, Olsson et al. 2022)? The
share of such tokens by the distance of that occurrence (bins that double)
bounds what context past a given length can give a model that copies: if
no token is copyable only from more than 512 tokens back, no model gains
from a longer context by copying. docs/long-context.md uses it on the
stitched repositories. Standard library only.

  scripts/copyable_tokens.py runs/long-context/ds code/q0 [--window 2048] [--n 4]
"""
import argparse
import array
import json
import sys
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset")
    ap.add_argument("bucket", help="e.g. code/q0")
    ap.add_argument("--window", type=int, default=2048)
    ap.add_argument("--n", type=int, default=4, help="tokens that must match before the copied one")
    a = ap.parse_args()
    manifest = json.loads((Path(a.dataset) / "manifest.json").read_text())
    bucket = next((b for b in manifest["buckets"] if b["name"] == a.bucket), None)
    if bucket is None:
        sys.exit(f"{a.dataset}: no bucket {a.bucket!r}")
    width = manifest.get("token_bytes", 2)
    tokens = array.array({2: "H", 4: "I"}[width])
    tokens.frombytes((Path(a.dataset) / bucket["eval"]["tokens_file"]).read_bytes())
    T, n = a.window, a.n
    bins, scored = {}, 0
    for w in range(len(tokens) // T):
        x = tokens[w * T:(w + 1) * T + 1]
        last = {}
        for i in range(n - 1, T):
            key = tuple(x[i - n + 1:i + 1])
            j = last.get(key)
            if j is not None and x[j + 1] == x[i + 1]:
                d = i - j
                b = 1 << (d.bit_length() - 1)
                bins[b] = bins.get(b, 0) + 1
            last[key] = i
            scored += 1
    print(f"{a.bucket}: {scored} tokens in windows of {T}; copyable after a {n}-token match, by the distance "
          "of its nearest earlier occurrence:")
    for b in sorted(bins):
        print(f"  {b:>6}-{2 * b - 1:<6} {bins[b] / scored:.4f}")
    far = sum(v for b, v in bins.items() if b >= 512)
    print(f"  copyable: {sum(bins.values()) / scored:.4f}; only from 512 or more tokens back: {far / scored:.4f}")


if __name__ == "__main__":
    main()
