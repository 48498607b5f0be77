#!/usr/bin/env python3
"""Tables and charts of the long-context experiment (scripts/long-context-experiment.sh).

Usage: long_context_table.py [WORK [RUNS]]. Reads
RUNS/eval-{base,unchanged,linear,yarn,yarn-x2,yarn-x3,yarn-far,yarn-dense,
abf-dense,yarn8-dense,yarn8-long}.json and, where they exist, eval-more-*.json
(the same models on the larger corpus's held-out repositories)
(moetrain eval --out; RUNS is WORK unless given: another model's runs,
MODEL and RUNS in the script) and WORK/passkey-heldout.jsonl, and prints,
as Markdown: passkey accuracy by depth at 480 and 2,000 tokens per model,
the key's digits in place, each 2,000 cell as a share of the model's own
480 accuracy at that depth, the held-out loss by position on the stitched
repositories (bucket code/q0), and the same tokens' loss with halving
context. Writes RUNS/long-context-extension.svg (the code bucket's loss by
position, one line per model) and RUNS/long-context-context.svg (the same
tokens' loss against their context). Standard library only.
"""
import json
import math
import sys
from pathlib import Path

MODELS = [("base", "before extension (512)"), ("unchanged", "RoPE unchanged"),
          ("linear", "position interpolation x4"), ("yarn", "YaRN x4"),
          ("yarn-x2", "YaRN x4, 640 steps to 1,984"), ("yarn-x3", "YaRN x4, 960 steps to 1,984"),
          ("yarn-far", "YaRN x4, 960 steps, far needles"),
          ("yarn-dense", "YaRN x4, 960 steps, dense numbers"),
          ("abf-dense", "RoPE base 160,000, 960 steps, dense numbers"),
          ("yarn8-dense", "YaRN x8, 960 steps, dense numbers"),
          ("yarn8-long", "YaRN x8, 2,400 steps, more code")]


def load(work, name):
    p = Path(work) / f"eval-{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def passkey_cells(ev):
    cells = {}
    for t in ev.get("tasks", []):
        if t.get("family") != "passkey":
            continue
        for c in t["by_tokens_depth"]:
            cells[(c["tokens"], c["depth"])] = (c["acc"], c["docs"])
    return cells


def code_positions(ev):
    """The code bucket's bins, without a last bin of one position past 1 (the
    window's final token alone: too few tokens to plot beside the others)."""
    h = ev.get("held_out", {})
    bins = h.get("position_loss", [])
    for name, b in h.get("bucket_position_loss", {}).items():
        if name.startswith("code/"):
            bins = b
            break
    return [b for b in bins if b["from"] == 1 or b["to"] > b["from"]]


def code_context(ev, topic="code"):
    """A code bucket's same-tokens comparison (eval's bucket_context_loss), or None."""
    for name, t in ev.get("held_out", {}).get("bucket_context_loss", {}).items():
        if name.startswith(topic + "/"):
            return t
    return None


def context_table(evs, topic="code"):
    tables = {n: code_context(ev, topic) for n, ev in evs.items() if ev and code_context(ev, topic)}
    if not tables:
        return
    first = next(iter(tables.values()))
    print(f"\nHeld-out loss of the same tokens with halving context, stitched repositories ({topic}/q0): each "
          f"window's last {first['scored_per_window']} tokens, {first['windows']} windows; in brackets the gain "
          "over half the context, and its standard error (paired by window):\n")
    print("| context | " + " | ".join(label for n, label in MODELS if n in tables) + " |")
    print("|---|" + "---|" * len(tables))
    for i, row in enumerate(first["lengths"]):
        cells = []
        for n, _ in MODELS:
            if n not in tables:
                continue
            r = tables[n]["lengths"][i]
            gain = f" ({r['gain']:+.3f} ± {r['gain_se']:.3f})" if "gain" in r else ""
            cells.append(f"{r['loss']:.3f}{gain}")
        print(f"| {row['context']} | " + " | ".join(cells) + " |")


def digits_right(work, ev):
    """Per prompt length: the mean share of the key's digits answered in place
    (partial retrieval, which exact match does not show)."""
    items = [json.loads(l) for l in (Path(work) / "passkey-heldout.jsonl").read_text().splitlines() if l]
    by_id = {it["id"]: it for it in items}
    got = {}
    for t in ev.get("tasks", []):
        if t.get("family") != "passkey":
            continue
        for out in t["items"]:
            it = by_id.get(out["id"])
            if not it:
                continue
            want, have = it["answer"].strip(), out["output"].strip()
            right = sum(1 for a, b in zip(want, have) if a == b) / len(want)
            got.setdefault(it["tokens"], []).append(right)
    return {k: sum(v) / len(v) for k, v in got.items()}


def digits_table(work, evs, short, long):
    print("\nShare of the key's digits answered in place (chance: about 0.1):\n")
    print(f"| model | {short} | {long} |")
    print("|---|---|---|")
    for n, label in MODELS:
        if evs[n]:
            d = digits_right(work, evs[n])
            print(f"| {label} | {d.get(short, math.nan):.2f} | {d.get(long, math.nan):.2f} |")


def main(work, runs):
    evs = {n: load(runs, n) for n, _ in MODELS}
    depths = sorted({d for ev in evs.values() if ev for (_, d) in passkey_cells(ev)})
    short, long = sorted({t for ev in evs.values() if ev for (t, _) in passkey_cells(ev)})
    print("Passkey accuracy (exact match of the 5-digit key), by depth of the needle:\n")
    print("| model | length | " + " | ".join(f"{d:g}" for d in depths) + " |")
    print("|---|---|" + "---|" * len(depths))
    for n, label in MODELS:
        if not evs[n]:
            continue
        cells = passkey_cells(evs[n])
        for length in (short, long):
            row = [f"{cells[(length, d)][0]:.2f}" if (length, d) in cells else "-" for d in depths]
            print(f"| {label} | {length} | " + " | ".join(row) + " |")
    digits_table(work, evs, short, long)
    print(f"\n{long}-token accuracy as a share of the same model's {short}-token accuracy at that depth "
          "(the target: at least 0.90 everywhere):\n")
    print("| model | " + " | ".join(f"{d:g}" for d in depths) + " | min |")
    print("|---|" + "---|" * (len(depths) + 1))
    for n, label in MODELS[1:]:
        if not evs[n]:
            continue
        cells = passkey_cells(evs[n])
        shares = []
        for d in depths:
            a512, a2k = cells[(short, d)][0], cells[(long, d)][0]
            shares.append(a2k / a512 if a512 > 0 else math.nan)
        print(f"| {label} | " + " | ".join(f"{s:.2f}" for s in shares) + f" | {min(shares):.2f} |")
    print("\nHeld-out loss by position, stitched repositories (code/q0), nats per token:\n")
    lines = {n: code_positions(ev) for n, ev in evs.items() if ev}
    bins = max(lines.values(), key=len)
    print("| positions | " + " | ".join(label for n, label in MODELS if n in lines) + " |")
    print("|---|" + "---|" * len(lines))
    for i, b in enumerate(bins):
        row = []
        for n, _ in MODELS:
            if n in lines:
                row.append(f"{lines[n][i]['loss']:.3f}" if i < len(lines[n]) else "-")
        print(f"| {b['from']}-{b['to']} | " + " | ".join(row) + " |")
    context_table(evs)
    # The larger corpus's held-out repositories (eval-more-*.json: eval --mixture long-context-eval-more.toml).
    more = {n: load(runs, "more-" + n) for n, _ in MODELS}
    context_table(more, "code_more")
    write_svg(Path(runs) / "long-context-extension.svg", lines)
    # The extended models only: the base model's loss past its length would flatten their lines.
    contexts = {n: code_context(ev) for n, ev in evs.items() if n != "base" and ev and code_context(ev)}
    if contexts:
        write_context_svg(Path(runs) / "long-context-context.svg", contexts)


COLOURS = ["#888888", "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#ff7f0e", "#000000"]


class Chart:
    """Loss against a log2 x axis, one line per model of MODELS, the legend on the right."""
    w, h, left, right, top, bottom = 760, 400, 60, 300, 30, 50

    def __init__(self, title, x_range, y_range):
        (self.x0, self.x1), (self.y0, self.y1) = (math.log2(x_range[0]), math.log2(x_range[1])), y_range
        self.shown = 0
        self.out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
                    'font-family="sans-serif" font-size="12">',
                    f'<rect width="{self.w}" height="{self.h}" fill="white"/>',
                    f'<text x="{self.left}" y="18" font-size="14">{title}</text>']

    def sx(self, x):
        return self.left + (math.log2(x) - self.x0) / (self.x1 - self.x0) * (self.w - self.left - self.right)

    def sy(self, y):
        return self.top + (self.y1 - y) / (self.y1 - self.y0) * (self.h - self.top - self.bottom)

    def x_tick(self, x):
        self.out.append(f'<line x1="{self.sx(x):.1f}" y1="{self.top}" x2="{self.sx(x):.1f}" '
                        f'y2="{self.h - self.bottom}" stroke="#ddd"/>')
        self.out.append(f'<text x="{self.sx(x):.1f}" y="{self.h - self.bottom + 16}" text-anchor="middle">{x}</text>')

    def axes(self, x_label):
        for k in range(6):
            y = self.y0 + (self.y1 - self.y0) * k / 5
            self.out.append(f'<text x="{self.left - 6}" y="{self.sy(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
        mid = (self.top + self.h - self.bottom) / 2
        self.out.append(f'<text x="{(self.left + self.w - self.right) / 2}" y="{self.h - 12}" '
                        f'text-anchor="middle">{x_label}</text>')
        self.out.append(f'<text x="14" y="{mid}" transform="rotate(-90 14 {mid})" '
                        'text-anchor="middle">loss, nats per token</text>')

    def line(self, model_index, label, points, markers=False):
        colour = COLOURS[model_index]
        xy = " ".join(f"{self.sx(x):.1f},{self.sy(y):.1f}" for x, y in points)
        self.out.append(f'<polyline fill="none" stroke-width="2" stroke="{colour}" points="{xy}"/>')
        if markers:
            for x, y in points:
                self.out.append(f'<circle cx="{self.sx(x):.1f}" cy="{self.sy(y):.1f}" r="3" fill="{colour}"/>')
        ly = self.top + 20 + 18 * self.shown
        self.shown += 1
        self.out.append(f'<line x1="{self.w - self.right + 10}" y1="{ly}" x2="{self.w - self.right + 30}" y2="{ly}" '
                        f'stroke="{colour}" stroke-width="2"/>')
        self.out.append(f'<text x="{self.w - self.right + 34}" y="{ly + 4}">{label}</text>')

    def write(self, path):
        path.write_text("\n".join(self.out + ["</svg>"]) + "\n")


def write_context_svg(path, tables):
    """The same tokens' loss against the context they are given, one line per model."""
    ctx = sorted({r["context"] for t in tables.values() for r in t["lengths"]})
    losses = [r["loss"] for t in tables.values() for r in t["lengths"]]
    first = next(iter(tables.values()))
    c = Chart(f"The same tokens with more context: each window's last {first['scored_per_window']}, "
              f"{first['windows']} windows of code", (ctx[0], ctx[-1]), (min(losses) - 0.03, max(losses) + 0.03))
    for x in ctx:
        c.x_tick(x)
    c.axes("tokens of context (log scale)")
    for i, (n, label) in enumerate(MODELS):
        if n in tables:
            c.line(i, label, sorted((r["context"], r["loss"]) for r in tables[n]["lengths"]), markers=True)
    c.write(path)


def write_svg(path, lines):
    """The code bucket's loss by position, one line per model."""
    pts = [(b["from"] + b["to"]) / 2 for bins in lines.values() for b in bins]
    losses = [b["loss"] for bins in lines.values() for b in bins if b["from"] >= 8]
    c = Chart("Held-out loss by position, stitched Python repositories", (4, max(pts)),
              (min(losses) - 0.05, max(losses) + 0.05))
    for p in [8, 32, 128, 512, 2048]:
        if p <= max(pts):
            c.x_tick(p)
    c.out.append(f'<line x1="{c.sx(512):.1f}" y1="{c.top}" x2="{c.sx(512):.1f}" y2="{c.h - c.bottom}" stroke="#999" '
                 'stroke-dasharray="4,3"/>')
    c.out.append(f'<text x="{c.sx(512) + 4:.1f}" y="{c.top + 12}" fill="#666">512: the short phase</text>')
    c.axes("tokens of context before the token (bins that double; log scale)")
    for i, (n, label) in enumerate(MODELS):
        if n in lines:
            c.line(i, label, [((b["from"] + b["to"]) / 2, b["loss"]) for b in lines[n] if b["from"] >= 4])
    c.write(path)


if __name__ == "__main__":
    work = sys.argv[1] if len(sys.argv) > 1 else "runs/long-context"
    main(work, sys.argv[2] if len(sys.argv) > 2 else work)
