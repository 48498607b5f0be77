#!/usr/bin/env python3
"""Tables and charts of the long-context experiment (scripts/long-context-experiment.sh).

Usage: long_context_table.py [WORK [RUNS]]. Reads
RUNS/eval-{base,unchanged,linear,yarn,yarn-x2,yarn-x3,yarn-far,yarn-dense}.json
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
          ("yarn-dense", "YaRN x4, 960 steps, dense numbers")]


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


def code_context(ev):
    """The code bucket's same-tokens comparison (eval's bucket_context_loss), or None."""
    for name, t in ev.get("held_out", {}).get("bucket_context_loss", {}).items():
        if name.startswith("code/"):
            return t
    return None


def context_table(evs):
    tables = {n: code_context(ev) for n, ev in evs.items() if ev and code_context(ev)}
    if not tables:
        return
    first = next(iter(tables.values()))
    print(f"\nHeld-out loss of the same tokens with halving context, stitched repositories (code/q0): each "
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
    write_svg(Path(runs) / "long-context-extension.svg", lines)
    # The extended models only: the base model's loss past its length would flatten their lines.
    contexts = {n: code_context(ev) for n, ev in evs.items() if n != "base" and ev and code_context(ev)}
    if contexts:
        write_context_svg(Path(runs) / "long-context-context.svg", contexts)


def write_context_svg(path, tables):
    """The same tokens' loss against the context they are given, one line per model."""
    w, h, left, right, top, bottom = 760, 400, 60, 300, 30, 50
    ctx = sorted({r["context"] for t in tables.values() for r in t["lengths"]})
    losses = [r["loss"] for t in tables.values() for r in t["lengths"]]
    x0, x1 = math.log2(ctx[0]), math.log2(ctx[-1])
    y0, y1 = min(losses) - 0.03, max(losses) + 0.03
    sx = lambda x: left + (math.log2(x) - x0) / (x1 - x0) * (w - left - right)
    sy = lambda y: top + (y1 - y) / (y1 - y0) * (h - top - bottom)
    colours = ["#888888", "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    first = next(iter(tables.values()))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="14">The same tokens with more context: each window\'s last '
           f'{first["scored_per_window"]}, {first["windows"]} windows of code</text>']
    for c in ctx:
        out.append(f'<line x1="{sx(c):.1f}" y1="{top}" x2="{sx(c):.1f}" y2="{h - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{sx(c):.1f}" y="{h - bottom + 16}" text-anchor="middle">{c}</text>')
    for k in range(6):
        y = y0 + (y1 - y0) * k / 5
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">tokens of context '
               '(log scale)</text>')
    out.append(f'<text x="14" y="{(top + h - bottom) / 2}" transform="rotate(-90 14 {(top + h - bottom) / 2})" '
               'text-anchor="middle">loss, nats per token</text>')
    shown = 0
    for i, (n, label) in enumerate(MODELS):
        if n not in tables:
            continue
        pts = sorted((r["context"], r["loss"]) for r in tables[n]["lengths"])
        xy = " ".join(f"{sx(c):.1f},{sy(l):.1f}" for c, l in pts)
        out.append(f'<polyline fill="none" stroke-width="2" stroke="{colours[i]}" points="{xy}"/>')
        for c, l in pts:
            out.append(f'<circle cx="{sx(c):.1f}" cy="{sy(l):.1f}" r="3" fill="{colours[i]}"/>')
        ly = top + 20 + 18 * shown
        shown += 1
        out.append(f'<line x1="{w - right + 10}" y1="{ly}" x2="{w - right + 30}" y2="{ly}" stroke="{colours[i]}" '
                   'stroke-width="2"/>')
        out.append(f'<text x="{w - right + 34}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def write_svg(path, lines):
    w, h, left, right, top, bottom = 760, 400, 60, 300, 30, 50
    pts = [(b["from"] + b["to"]) / 2 for bins in lines.values() for b in bins]
    losses = [b["loss"] for bins in lines.values() for b in bins if b["from"] >= 8]
    x0, x1 = math.log2(4), math.log2(max(pts))
    y0, y1 = min(losses) - 0.05, max(losses) + 0.05
    sx = lambda x: left + (math.log2(x) - x0) / (x1 - x0) * (w - left - right)
    sy = lambda y: top + (y1 - y) / (y1 - y0) * (h - top - bottom)
    colours = ["#888888", "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="14">Held-out loss by position, stitched Python repositories</text>']
    for p in [8, 32, 128, 512, 2048]:
        if p <= max(pts):
            out.append(f'<line x1="{sx(p):.1f}" y1="{top}" x2="{sx(p):.1f}" y2="{h - bottom}" stroke="#ddd"/>')
            out.append(f'<text x="{sx(p):.1f}" y="{h - bottom + 16}" text-anchor="middle">{p}</text>')
    out.append(f'<line x1="{sx(512):.1f}" y1="{top}" x2="{sx(512):.1f}" y2="{h - bottom}" stroke="#999" '
               'stroke-dasharray="4,3"/>')
    out.append(f'<text x="{sx(512) + 4:.1f}" y="{top + 12}" fill="#666">512: the short phase</text>')
    for k in range(6):
        y = y0 + (y1 - y0) * k / 5
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">tokens of context before the '
               'token (bins that double; log scale)</text>')
    out.append(f'<text x="14" y="{(top + h - bottom) / 2}" transform="rotate(-90 14 {(top + h - bottom) / 2})" '
               'text-anchor="middle">loss, nats per token</text>')
    shown = 0
    for i, (n, label) in enumerate(MODELS):
        if n not in lines:
            continue
        xy = [(sx((b["from"] + b["to"]) / 2), sy(b["loss"])) for b in lines[n] if b["from"] >= 4]
        out.append('<polyline fill="none" stroke-width="2" stroke="%s" points="%s"/>' %
                   (colours[i], " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)))
        ly = top + 20 + 18 * shown
        shown += 1
        out.append(f'<line x1="{w - right + 10}" y1="{ly}" x2="{w - right + 30}" y2="{ly}" stroke="{colours[i]}" '
                   'stroke-width="2"/>')
        out.append(f'<text x="{w - right + 34}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    work = sys.argv[1] if len(sys.argv) > 1 else "runs/long-context"
    main(work, sys.argv[2] if len(sys.argv) > 2 else work)
