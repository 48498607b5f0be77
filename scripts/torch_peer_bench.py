#!/usr/bin/env python3
"""Training tokens/s of moetrain against a PyTorch peer running the same model
on the same CPU, in one run: fp32 and bf16, eager and torch.compile, as
ratios moetrain / torch (issue 41). Runs in the interop venv
(`scripts/interop-venv.sh` prints its path), which has torch and transformers.

    scripts/torch_peer_bench.py [--preset moe-512] [--moetrain build/src/moetrain] [--threads 2]
                                [--precisions fp32,bf16] [--modes eager,compile] [--rounds 3]
                                [--steps 3] [--warmup 1] [--compile-warmup 2] [--work DIR] [--json OUT]

The peer is moetrain's own model as Hugging Face users get it: a two-step
`moetrain train --preset bench/NAME` run (dropless, `model.capacity_factor=0`,
on a text file of batch_size x seq_len random bytes) is exported with `moetrain export --hf-class
moetrain` (MoetrainForCausalLM, src/export/hf_code/modeling_moetrain.py) and
loaded with transformers (trust_remote_code). Before anything is timed, the
loss anchor: transformers' cross-entropy on that batch at the step-1 weights
must equal the loss moetrain logged for step 2 (the same weights, the same
batch: the file holds exactly batch_size windows, so every step sees all of
them) within --loss-tol, relative (measured 2e-9 on bench/tiny).

A torch step is forward, cross-entropy, backward, gradient clipping at
train.grad_clip and torch.optim.AdamW (train.lr, beta1, beta2, eps,
weight_decay on matrices but the embedding, as moetrain decays them; the lr
held constant) on a fresh random batch of batch_size x seq_len tokens. bf16 is
moetrain's recipe: fp32 master weights and torch.autocast("cpu", bfloat16)
around forward and loss. compile wraps that forward and loss in
torch.compile (inductor); the first --compile-warmup compiled steps of each
round are not timed. Routing is balanced on both sides: `moetrain bench`
routes on uniform random logits by default (model.router_force_balance), and
every MoE block's router here is wrapped so its logits become
0 x router(x) + U(0, 1) noise (the router GEMM still runs and gets a zero
gradient, as in moetrain); see BalancedRouter.

Each round runs, per precision, `moetrain bench --preset bench/NAME
--precision P --steps N --threads T --json` and then each torch mode, so the
two systems share the machine's state; the summary is the median over
rounds. OMP_WAIT_POLICY defaults to PASSIVE for both (set it to override).
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP; inherited by moetrain
sys.path.insert(0, os.path.join(ROOT, "tools", "interop"))
import hf_check  # noqa: E402  (sets the offline hub switches; is_custom_code)

SEED = 1


def cpu_info():
    """The CPU as /proc/cpuinfo names it, and the flags that decide bf16's path."""
    fields, flags = {}, set()
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            k, v = k.strip(), v.strip()
            if k in ("vendor_id", "cpu family", "model", "model name") and k not in fields:
                fields[k] = v
            elif k == "flags" and not flags:
                flags = set(v.split())
    except OSError:
        pass
    return {"vendor": fields.get("vendor_id", platform.processor()), "family": fields.get("cpu family", "?"),
            "model": fields.get("model", "?"), "model_name": fields.get("model name", "?"),
            "cores": os.cpu_count(),
            "flags": {f: f in flags for f in ("avx512f", "avx512_bf16", "amx_bf16", "amx_tile")}}


def run(argv, what):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{what} failed (exit {r.returncode}): {' '.join(argv)}\n{r.stderr[-4000:]}")
    return r.stdout


def prepare(a, torch):
    """The anchor run and its export: (run config, hf dir, anchor batch (B, T + 1), moetrain's loss on it
    at the exported weights (step 2's), and at the initial ones (step 1's))."""
    preset = tomllib.load(open(os.path.join(ROOT, "configs", "bench", a.preset + ".toml"), "rb"))
    B, T = preset["train"]["batch_size"], preset["train"]["seq_len"]
    g = torch.Generator().manual_seed(SEED)
    # B * T random bytes as one text document: the byte tokenizer gives ids b, then the end of document
    # (256), so the plain source holds B * T + 1 tokens, exactly B windows of T + 1 overlapping by one.
    text = torch.randint(0, 256, (B * T,), generator=g, dtype=torch.uint8)
    tokens = os.path.join(a.work, "anchor.bin")
    with open(tokens, "wb") as f:
        f.write(bytes(text.tolist()))
    flat = torch.cat([text.long(), torch.tensor([256])])
    batch = torch.stack([flat[i * T:i * T + T + 1] for i in range(B)])
    run_dir, hf_dir = os.path.join(a.work, "run"), os.path.join(a.work, "hf")
    sets = ["train.steps=2", "train.checkpoint_every=1", f"data.path={tokens}",
            "model.capacity_factor=0", 'train.precision="fp32"', f"train.threads={a.threads}"]
    argv = [a.moetrain, "train", "--preset", "bench/" + a.preset, "--run-dir", run_dir, "--no-progress",
            "--move-aside"]
    for s in sets:
        argv += ["--set", s]
    print("#", " ".join(argv), flush=True)
    run(argv, "moetrain train")
    argv = [a.moetrain, "export", "--ckpt", os.path.join(run_dir, "checkpoints", "step_00000001"), "--out", hf_dir,
            "--hf-class", "moetrain", "--move-aside"]
    print("#", " ".join(argv), flush=True)
    run(argv, "moetrain export")
    cfg = tomllib.load(open(os.path.join(run_dir, "config.toml"), "rb"))
    steps = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl")) if '"loss"' in l]
    loss = {s["step"]: s["loss"] for s in steps}
    return cfg, hf_dir, batch, loss[2], loss[1]


class BalancedRouter:
    """Wraps an MoE block's router so that it routes as moetrain's
    model.router_force_balance does: uniform random logits per token (every
    expert equally likely, so loads are even up to sampling noise), the
    router's own product still computed and given a zero gradient. moetrain
    draws its logits from a counter keyed by layer and position; here they are
    torch.rand, a fresh draw per call: the same distribution of loads."""

    @staticmethod
    def install(model, torch):
        class Router(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                logits = self.inner(x)
                return logits * 0 + torch.rand_like(logits)

        n = 0
        for m in model.modules():
            if type(m).__name__ == "Moe" and not isinstance(m.router, Router):
                m.router = Router(m.router)
                n += 1
        return n


def adamw(model, run_cfg, torch):
    """torch's AdamW with the run's settings: decay on matrices, not on norms
    and (unless train.decay_embeddings) not on the embedding and tied head."""
    t = run_cfg["train"]
    embed = {id(model.get_input_embeddings().weight)}
    if t.get("decay_embeddings", False):
        embed = set()
    decay = [p for p in model.parameters() if p.ndim >= 2 and id(p) not in embed]
    keep = [p for p in model.parameters() if p.ndim < 2 or id(p) in embed]
    return torch.optim.AdamW([{"params": decay, "weight_decay": t["weight_decay"]},
                              {"params": keep, "weight_decay": 0.0}],
                             lr=t["lr"], betas=(t["beta1"], t["beta2"]), eps=t["eps"])


def anchor_loss(model, batch, torch):
    """Mean cross-entropy of tokens 1..T given 0..T-1, in float64 over fp32 logits."""
    import torch.nn.functional as F

    with torch.no_grad():
        logits = model(input_ids=batch[:, :-1], use_cache=False).logits
        V = logits.shape[-1]
        return float(F.cross_entropy(logits.double().reshape(-1, V), batch[:, 1:].reshape(-1)))


class TorchPeer:
    def __init__(self, model, run_cfg, torch):
        import torch.nn.functional as F

        self.torch, self.model = torch, model
        self.V = run_cfg["model"]["vocab_size"]
        self.B, self.T = run_cfg["train"]["batch_size"], run_cfg["train"]["seq_len"]
        self.clip = run_cfg["train"]["grad_clip"]
        self.opt = adamw(model, run_cfg, torch)
        self.params = [p for p in model.parameters()]

        def loss_fn(ids):
            logits = model(input_ids=ids[:, :-1], use_cache=False).logits
            return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))

        self.fns = {"eager": loss_fn, "compile": None}
        self.loss_fn = loss_fn
        self.gen = torch.Generator().manual_seed(SEED + 1)

    def fn(self, mode):
        if self.fns[mode] is None:
            self.fns[mode] = self.torch.compile(self.loss_fn)
        return self.fns[mode]

    def step(self, mode, precision):
        torch = self.torch
        ids = torch.randint(0, self.V, (self.B, self.T + 1), generator=self.gen)
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = self.fn(mode)(ids)
        loss.backward()
        if self.clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        dt = time.perf_counter() - t0
        if not math.isfinite(float(loss.detach())):
            sys.exit(f"torch {mode} {precision}: loss {float(loss.detach())}")
        return dt

    def tokens_per_s(self, mode, precision, steps, warmup):
        """Median over `steps` timed steps after `warmup` untimed ones."""
        for _ in range(warmup):
            self.step(mode, precision)
        times = [self.step(mode, precision) for _ in range(steps)]
        return self.B * self.T / statistics.median(times), times


def moetrain_bench(a, precision):
    argv = [a.moetrain, "bench", "--preset", "bench/" + a.preset, "--precision", precision, "--steps",
            str(a.steps), "--threads", str(a.threads), "--json"]
    j = json.loads(run(argv, "moetrain bench"))
    return j


def table(summary, precisions, modes):
    lines = ["| precision | moetrain tokens/s | " + " | ".join(f"torch {m} tokens/s" for m in modes) + " | "
             + " | ".join(f"moetrain / torch {m}" for m in modes) + " |",
             "|---" * (2 + 2 * len(modes)) + "|"]
    for p in precisions:
        s = summary[p]
        row = [p, f"{s['moetrain']:,.0f}"] + [f"{s['torch_' + m]:,.0f}" for m in modes] + \
              [f"{s['ratio_' + m]:.2f}" for m in modes]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="moe-512", help="configs/bench/NAME.toml (bench/ may be given)")
    p.add_argument("--moetrain", default=os.path.join(ROOT, "build", "src", "moetrain"))
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads and moetrain --threads")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--modes", default="eager,compile")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=3, help="timed steps per system, mode and round")
    p.add_argument("--warmup", type=int, default=1, help="untimed eager steps per round")
    p.add_argument("--compile-warmup", type=int, default=2, help="untimed compiled steps per round")
    p.add_argument("--loss-tol", type=float, default=1e-6, help="relative tolerance of the loss anchor")
    p.add_argument("--no-moetrain-bench", action="store_true", help="torch only (the anchor still runs)")
    p.add_argument("--work", help="directory for the anchor run and export (default: a temporary one)")
    p.add_argument("--json", help="write the results as JSON here")
    a = p.parse_args()
    a.preset = a.preset.removeprefix("bench/")
    a.moetrain = os.path.abspath(a.moetrain)
    precisions = [x for x in a.precisions.split(",") if x]
    modes = [x for x in a.modes.split(",") if x]
    for x in precisions:
        if x not in ("fp32", "bf16"):
            sys.exit(f"--precisions: {x}: expected fp32 or bf16")
    for x in modes:
        if x not in ("eager", "compile"):
            sys.exit(f"--modes: {x}: expected eager or compile")

    tmp = None
    if not a.work:
        tmp = tempfile.TemporaryDirectory(prefix="torch-peer-")
        a.work = tmp.name
    os.makedirs(a.work, exist_ok=True)

    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(a.threads)
    cpu = cpu_info()
    print(f"# CPU: {cpu['model_name']} ({cpu['vendor']} family {cpu['family']} model {cpu['model']}), "
          f"{cpu['cores']} cores; " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in cpu["flags"].items()),
          flush=True)
    print(f"# torch {torch.__version__}, transformers {transformers.__version__}, {a.threads} threads, "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}", flush=True)

    run_cfg, hf_dir, batch, moetrain_loss, loss_step1 = prepare(a, torch)
    if not hf_check.is_custom_code(hf_dir):
        sys.exit(f"{hf_dir}: not a custom-code (MoetrainForCausalLM) export")
    model, info = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32, attn_implementation="eager",
                                                       output_loading_info=True, trust_remote_code=True)
    missing = {k: sorted(map(str, info.get(k, []))) for k in ("missing_keys", "unexpected_keys")}
    torch_loss = anchor_loss(model, batch, torch)
    rel = abs(torch_loss - moetrain_loss) / abs(moetrain_loss)
    # Step 1's loss is the same batch at the initial weights: how far one update moves the anchor.
    anchor = {"moetrain_loss": moetrain_loss, "torch_loss": torch_loss, "rel_diff": rel, "tol": a.loss_tol,
              "moetrain_loss_step1": loss_step1,
              "ok": rel <= a.loss_tol and not any(missing.values()), **missing}
    print(f"# loss anchor: moetrain {moetrain_loss:.7f}, transformers {torch_loss:.7f}, relative difference "
          f"{rel:.2e} (tolerance {a.loss_tol:g}): {'ok' if anchor['ok'] else 'FAILED'}", flush=True)

    routers = BalancedRouter.install(model, torch)
    model.train()
    peer = TorchPeer(model, run_cfg, torch)
    rounds = []
    for r in range(a.rounds):
        for prec in precisions:
            row = {"round": r + 1, "precision": prec}
            if not a.no_moetrain_bench:
                j = moetrain_bench(a, prec)
                row["moetrain"] = j["tokens_per_s"]
                row["moetrain_dropped_frac"] = j["dropped_frac"]
                row["moetrain_routing"] = j["routing"]
            for mode in modes:
                warm = a.compile_warmup if mode == "compile" else a.warmup
                t0 = time.perf_counter()
                try:
                    tps, times = peer.tokens_per_s(mode, prec, a.steps, warm)
                except Exception as e:  # a compile failure is a result to record, not a crash
                    row[f"torch_{mode}_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
                    tps, times = float("nan"), []
                row[f"torch_{mode}"] = tps
                row[f"torch_{mode}_step_s"] = times
                row[f"torch_{mode}_wall_s"] = time.perf_counter() - t0
            row["loadavg_1min"] = os.getloadavg()[0]  # the neighbours: a busy host slows both systems
            print("# round", json.dumps(row), flush=True)
            rounds.append(row)

    def med(prec, key):
        xs = [r[key] for r in rounds if r["precision"] == prec and key in r and math.isfinite(r[key])]
        return statistics.median(xs) if xs else float("nan")

    def med_ratio(prec, mode):
        xs = [r["moetrain"] / r[f"torch_{mode}"] for r in rounds
              if r["precision"] == prec and "moetrain" in r and math.isfinite(r[f"torch_{mode}"])]
        return statistics.median(xs) if xs else float("nan")

    summary = {}
    for prec in precisions:
        s = {"moetrain": med(prec, "moetrain")}
        for mode in modes:
            s[f"torch_{mode}"] = med(prec, f"torch_{mode}")
            # the median of each round's ratio: both measured within minutes of each other
            s[f"ratio_{mode}"] = med_ratio(prec, mode)
        summary[prec] = s
    from torch._dynamo.utils import counters

    result = {"preset": "bench/" + a.preset, "cpu": cpu, "threads": a.threads, "torch": torch.__version__,
              "transformers": transformers.__version__, "architecture": type(model).__name__,
              "balanced_routers": routers, "omp_wait_policy": os.environ["OMP_WAIT_POLICY"],
              "batch_size": peer.B, "seq_len": peer.T, "steps": a.steps, "rounds_run": a.rounds,
              "dynamo": {"unique_graphs": counters["stats"]["unique_graphs"],
                         "graph_breaks": sum(counters["graph_break"].values())},
              "anchor": anchor, "summary": summary, "rounds": rounds}
    print(table(summary, precisions, modes))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if anchor["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
