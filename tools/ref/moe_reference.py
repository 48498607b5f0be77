#!/usr/bin/python3
"""moe_reference.py — independent PyTorch (float64) golden reference for the
moetrain decoder-only MoE transformer.

Builds a tiny model from the documented math (not from the C++ loops), runs one
forward/backward with autograd in float64 and writes a safetensors file with
every parameter under its C++ layout name, every gradient as `grad.<name>`, the
tokens and the losses. tests/golden/golden_test.cpp loads the file, runs the
C++ model on the same parameters and compares tensor by tensor.

Legend: B batch, T time, N = B*T tokens, D model dim, H heads, Hkv kv heads,
Dh head dim, F ffn/expert hidden, E experts, K top-k, V vocab, G routing group,
Dl latent dim, Din expert input dim (D, or Dl for latent MoE); MLA (DeepSeek-V2
section 2.1): Dq query latent, Dc kv latent, Dn / Dr q-k dims without / with
RoPE, Dv value dim; gated-delta ("D") layers: Hd heads, Dk / Dv per-head
key / value dims; Dm the number of multi-token-prediction modules
(mtp_depth).

Multi-token prediction follows DeepSeek-V3 section 2.2 (eqs. 21-25): module k
(1-based) embeds t_{i+k}, concatenates RMSNorm(h^{k-1}_i) and RMSNorm(emb),
projects the 2D vector to D, runs one block built like the last layer and
predicts t_{i+1+k} through its own RMSNorm and the shared head; h^0 is the
main model's last residual stream (before the final norm). The objective adds
mtp_loss_weight / Dm times the sum of the modules' cross-entropies.

Run with Debian's torch:  /usr/bin/python3 tools/ref/moe_reference.py
(see tools/ref/README.md).
"""
import argparse
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

f64 = torch.float64

# ---------------------------------------------------------------------------
# Configurations. Keys are exactly mt::ModelConfig's field names; the C++ test
# rejects unknown keys. Every variant is B=2 sequences of T=8 (+1, + mtp_depth) tokens.

BASE = dict(
    vocab_size=64, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, n_kv_heads_local=0,
    layer_pattern="LG", window=3, tied_embeddings=True, qk_norm=False, rope_theta=10000.0,
    norm_eps=1e-5, init_std=0.3, d_ff=24,
    n_experts=4, top_k=2, d_expert=12, n_shared_experts=0, n_dense_layers=0,
    router_score="softmax", router_renormalize=True, capacity_factor=0.0, routing_group=0,
    # Larger than the training defaults so the router-loss gradients are not
    # hidden under the cross-entropy ones.
    aux_loss_coef=0.1, z_loss_coef=0.02, d_latent=0, moe_out_norm=False,
    delta_heads=0, delta_key_dim=0, delta_value_dim=0, delta_chunk=64,
)

VARIANTS = {
    # softmax router, renormalised gates, capacity 1.0 (drops), 1 shared expert,
    # local+global layers (window 3), GQA 4/2, tied embeddings.
    "a": dict(capacity_factor=1.0, n_shared_experts=1),
    # latent MoE, output norm, qk-norm, untied head, sigmoid router (renormalised),
    # a routing group spanning both sequences, fewer kv heads on the local layer.
    "b": dict(d_latent=8, moe_out_norm=True, qk_norm=True, tied_embeddings=False,
              router_score="sigmoid", capacity_factor=1.25, routing_group=16,
              layer_pattern="GL", window=4, n_kv_heads_local=1),
    # first layer dense, top-1 softmax without renormalisation, dropless, 3 layers.
    "c": dict(n_layers=3, n_dense_layers=1, top_k=1, router_renormalize=False,
              layer_pattern="LLG", window=2, n_shared_experts=1, capacity_factor=0.0),
    # multi-head latent attention (DeepSeek-V2 2.1) with a query latent; local+global layers,
    # value heads wider than the q-k heads' non-RoPE part; dropless.
    "mla_d": dict(attention="mla", q_lora_rank=8, kv_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=2,
                  v_head_dim=5, n_kv_heads=1, n_shared_experts=1),
    # MLA with queries projected from D directly (Dq = 0), untied head, global then local layers.
    "mla_e": dict(attention="mla", q_lora_rank=0, kv_lora_rank=5, qk_nope_head_dim=3, qk_rope_head_dim=4,
                  v_head_dim=3, n_kv_heads=1, tied_embeddings=False, layer_pattern="GL", window=4,
                  capacity_factor=1.0),
    # two multi-token-prediction modules after a local ("L" of "GL") MoE last layer with a capacity
    # cap, 1 shared expert, untied head.
    "d": dict(mtp_depth=2, mtp_loss_weight=0.3, layer_pattern="GL", window=3, capacity_factor=1.0,
              n_shared_experts=1, tied_embeddings=False),
    # two gated-delta layers (Gated DeltaNet) around a local attention layer, Dk != Dv, and a
    # chunk (3) that does not divide T for the C++ chunked kernel; the reference runs the plain
    # recurrence. Dropless, 1 shared expert.
    "delta": dict(n_layers=3, layer_pattern="DLD", window=3, delta_heads=2, delta_key_dim=4,
              delta_value_dim=6, delta_chunk=3, n_shared_experts=1, capacity_factor=0.0),
    # Megatron-LM's position drop policy: the last assignments to reach a full expert are dropped,
    # arrival going by position in the sequence first, so in a routing group spanning both sequences
    # position t of sequence 1 arrives before position t + 1 of sequence 0. 1 shared expert.
    "e_position": dict(drop_policy="position", capacity_factor=1.0, routing_group=16, n_shared_experts=1),
    # document masking (train.document_mask): rows packed with documents that end with id 5, over
    # gated-delta, sliding-window and global layers, an MTP module after the global last layer,
    # capacity 1.0 (drops). Row 0 holds documents [0, 4) and [4, 8); row 1 [0, 6), [6, 7) (one
    # token) and [7, 8).
    "f_docs": dict(n_layers=3, layer_pattern="DLG", window=3, delta_heads=2, delta_key_dim=4,
                   delta_value_dim=6, delta_chunk=3, mtp_depth=1, mtp_loss_weight=0.3, capacity_factor=1.0,
                   n_shared_experts=1, document_separator=5),
    # the same packing under MLA, sliding window then global.
    "mla_f_docs": dict(attention="mla", q_lora_rank=0, kv_lora_rank=5, qk_nope_head_dim=3, qk_rope_head_dim=4,
                       v_head_dim=3, n_kv_heads=1, layer_pattern="LG", window=4, n_shared_experts=1,
                       document_separator=5),
}
# Where the packed variants put their separators: (row, input position).
SEPARATORS = [(0, 3), (1, 5), (1, 6)]

B, T = 2, 8
# (B, T, T) document masking's "key j is in query i's document", set by forward(); None: one
# document per row.
SAME_DOC = None
# Minimum gap (in router score units) between the last chosen and the first
# unchosen expert of a token, and around each capacity cut. fp32 vs float64
# noise is ~1e-6, so decisions cannot flip between the two implementations.
MARGIN = 1e-3


def make_config(variant):
    c = dict(BASE)
    c.update(VARIANTS[variant])
    return c


def mtp_depth(c):
    return c.get("mtp_depth", 0)


def is_local(c, l):
    p = c["layer_pattern"]
    return p[l % len(p)] == "L"


def is_delta(c, l):
    p = c["layer_pattern"]
    return p[l % len(p)] == "D"


def delta_dims(c):
    Dh = c["d_model"] // c["n_heads"]
    return (c["delta_heads"] or c["n_heads"], c["delta_key_dim"] or Dh, c["delta_value_dim"] or Dh)


def kv_heads(c, l):
    if is_local(c, l) and c["n_kv_heads_local"] > 0:
        return c["n_kv_heads_local"]
    return c["n_kv_heads"]


def is_mla(c):
    return c.get("attention", "gqa") == "mla"


def is_moe(c, l):
    return c["n_experts"] > 0 and l >= c["n_dense_layers"]


# ---------------------------------------------------------------------------
# Parameters, in the C++ layout order (order only matters for readability).

def param_shapes(c):
    D, H, V = c["d_model"], c["n_heads"], c["vocab_size"]
    Dh = D // H
    shapes = [("embed", (V, D))]

    def swiglu(prefix, Fh, Din):
        return [(prefix + ".w1", (Fh, Din)), (prefix + ".w3", (Fh, Din)), (prefix + ".w2", (Din, Fh))]

    def block(p, l):
        """Tensors of a block named under p, built like layer l."""
        out = []
        Hkv = kv_heads(c, l)
        out.append((p + ".attn_norm", (D,)))
        if is_delta(c, l):
            Hd, Dk, Dv = delta_dims(c)
            out += [(p + ".delta.wq", (Hd * Dk, D)), (p + ".delta.wk", (Hd * Dk, D)),
                    (p + ".delta.wv", (Hd * Dv, D)), (p + ".delta.wz", (Hd * Dv, D)), (p + ".delta.wa", (Hd, D)),
                    (p + ".delta.wb", (Hd, D)), (p + ".delta.A_log", (Hd,)), (p + ".delta.dt_bias", (Hd,)),
                    (p + ".delta.o_norm", (Dv,)), (p + ".delta.wo", (D, Hd * Dv))]
        elif is_mla(c):
            Dq, Dc, Dr, Dv = c["q_lora_rank"], c["kv_lora_rank"], c["qk_rope_head_dim"], c["v_head_dim"]
            Dn = c["qk_nope_head_dim"]
            if Dq > 0:
                out += [(p + ".attn.wdq", (Dq, D)), (p + ".attn.q_latent_norm", (Dq,)),
                        (p + ".attn.wuq", (H * (Dn + Dr), Dq))]
            else:
                out.append((p + ".attn.wq", (H * (Dn + Dr), D)))
            out += [(p + ".attn.wdkv", (Dc, D)), (p + ".attn.wkr", (Dr, D)),
                    (p + ".attn.kv_latent_norm", (Dc,)), (p + ".attn.wuk", (H * Dn, Dc)),
                    (p + ".attn.wuv", (H * Dv, Dc)), (p + ".attn.wo", (D, H * Dv))]
        else:
            out += [(p + ".attn.wq", (H * Dh, D)), (p + ".attn.wk", (Hkv * Dh, D)),
                    (p + ".attn.wv", (Hkv * Dh, D)), (p + ".attn.wo", (D, H * Dh))]
        if c["qk_norm"] and not is_mla(c) and not is_delta(c, l):
            out += [(p + ".attn.q_norm", (Dh,)), (p + ".attn.k_norm", (Dh,))]
        out.append((p + ".ffn_norm", (D,)))
        if not is_moe(c, l):
            return out + swiglu(p + ".mlp", c["d_ff"], D)
        Dl = c["d_latent"]
        Din = Dl if Dl > 0 else D
        out.append((p + ".moe.router", (c["n_experts"], D)))
        if Dl > 0:
            out += [(p + ".moe.down", (Dl, D)), (p + ".moe.latent_norm", (Dl,)),
                    (p + ".moe.up", (D, Dl))]
        for s in range(c["n_shared_experts"]):
            out += swiglu(p + f".moe.shared.{s}", c["d_expert"], D)
        if c["moe_out_norm"]:
            out.append((p + ".moe.out_norm", (D,)))
        for e in range(c["n_experts"]):
            out += swiglu(p + f".moe.experts.{e}", c["d_expert"], Din)
        return out

    for l in range(c["n_layers"]):
        shapes += block(f"layers.{l}", l)
    for k in range(mtp_depth(c)):
        p = f"mtp.{k}"
        shapes += [(p + ".h_norm", (D,)), (p + ".e_norm", (D,)), (p + ".proj", (D, 2 * D)),
                   (p + ".head_norm", (D,))]
        shapes += block(p, c["n_layers"] - 1)
    shapes.append(("final_norm", (D,)))
    if not c["tied_embeddings"]:
        shapes.append(("head", (V, D)))
    return shapes


def is_norm(name):
    return name.endswith("norm")


def make_params(c, gen):
    """Random parameters, rounded to fp32 (what the C++ model sees), then
    promoted to float64. Norm weights are 1 + noise so their gradients and
    their use in the forward are both exercised."""
    params = {}
    for name, shape in param_shapes(c):
        if name.endswith(".A_log") or name.endswith(".dt_bias"):
            # Decays exp(g) around 0.9, so the recurrent state matters over the whole sequence.
            w = -1.0 + 0.2 * torch.randn(shape, generator=gen, dtype=f64)
        elif is_norm(name):
            w = 1.0 + 0.2 * torch.randn(shape, generator=gen, dtype=f64)
        else:
            std = c["init_std"] * (2.0 if name.endswith(".router") else 1.0)
            w = std * torch.randn(shape, generator=gen, dtype=f64)
        params[name] = w.float().to(f64).requires_grad_(True)
    return params


# ---------------------------------------------------------------------------
# The model, from the documented math.

def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w


def rope(x, theta):
    """Rotate-half RoPE on x (B, H, T, Dh): the pair (x[i], x[i+Dh/2]) is
    rotated by angle t * theta^(-2i/Dh)."""
    Tn, Dh = x.shape[-2], x.shape[-1]
    half = Dh // 2
    inv_freq = theta ** (-2.0 * torch.arange(half, dtype=f64) / Dh)
    ang = torch.arange(Tn, dtype=f64)[:, None] * inv_freq[None, :]  # (T, Dh/2)
    cos = torch.cat([ang.cos(), ang.cos()], dim=-1)
    sin = torch.cat([ang.sin(), ang.sin()], dim=-1)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def causal_softmax_attention(c, l, q, k, v, scale):
    """q, k (B, H, T, Dqk), v (B, H, T, Dv) -> (B, T, H * Dv); causal, windowed on L layers."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    allowed = j <= i
    if is_local(c, l):
        allowed = allowed & (j >= i - c["window"] + 1)
    if SAME_DOC is not None:
        allowed = allowed & SAME_DOC[:, None]                        # (B, 1, T, T)
    s = (q @ k.transpose(-1, -2)) * scale
    s = s.masked_fill(~allowed, float("-inf"))
    o = torch.softmax(s, dim=-1) @ v
    return o.transpose(1, 2).reshape(B, T, -1)


def mla_attention(c, P, prefix, l, x):
    """Multi-head latent attention, DeepSeek-V2 section 2.1 (eqs. 9-11, 37-47), in
    its training form: keys and values decompressed for every head. x (B, T, D)
    -> (B, T, D). Each head's q and k are [nope (Dn) | rope (Dr)]; the RoPE key
    is one head shared by all."""
    p = prefix + ".attn"
    H, eps = c["n_heads"], c["norm_eps"]
    Dq, Dn, Dr = c["q_lora_rank"], c["qk_nope_head_dim"], c["qk_rope_head_dim"]
    a = rmsnorm(x, P[prefix + ".attn_norm"], eps)
    if Dq > 0:
        q = rmsnorm(a @ P[p + ".wdq"].T, P[p + ".q_latent_norm"], eps) @ P[p + ".wuq"].T
    else:
        q = a @ P[p + ".wq"].T
    q = q.view(B, T, H, Dn + Dr).transpose(1, 2)                          # (B, H, T, Dn + Dr)
    q = torch.cat([q[..., :Dn], rope(q[..., Dn:], c["rope_theta"])], dim=-1)
    c_kv = rmsnorm(a @ P[p + ".wdkv"].T, P[p + ".kv_latent_norm"], eps)  # (B, T, Dc)
    k_rope = rope((a @ P[p + ".wkr"].T)[:, None], c["rope_theta"])      # (B, 1, T, Dr)
    k_nope = (c_kv @ P[p + ".wuk"].T).view(B, T, H, Dn).transpose(1, 2)
    v = (c_kv @ P[p + ".wuv"].T).view(B, T, H, -1).transpose(1, 2)     # (B, H, T, Dv)
    k = torch.cat([k_nope, k_rope.expand(B, H, T, Dr)], dim=-1)
    o = causal_softmax_attention(c, l, q, k, v, 1.0 / math.sqrt(Dn + Dr))
    return o @ P[p + ".wo"].T


def attention(c, P, prefix, l, x):
    """x (B, T, D) -> attention output (B, T, D) (without the residual) of the
    block named `prefix`, built like layer l."""
    if is_mla(c):
        return mla_attention(c, P, prefix, l, x)
    p = prefix + ".attn"
    D, H = c["d_model"], c["n_heads"]
    Dh, Hkv = D // H, kv_heads(c, l)
    a = rmsnorm(x, P[prefix + ".attn_norm"], c["norm_eps"])
    q = (a @ P[p + ".wq"].T).view(B, T, H, Dh).transpose(1, 2)     # (B, H, T, Dh)
    k = (a @ P[p + ".wk"].T).view(B, T, Hkv, Dh).transpose(1, 2)   # (B, Hkv, T, Dh)
    v = (a @ P[p + ".wv"].T).view(B, T, Hkv, Dh).transpose(1, 2)
    if c["qk_norm"]:
        q = rmsnorm(q, P[p + ".q_norm"], c["norm_eps"])
        k = rmsnorm(k, P[p + ".k_norm"], c["norm_eps"])
    q, k = rope(q, c["rope_theta"]), rope(k, c["rope_theta"])
    # GQA: query head h reads kv head h // (H / Hkv).
    k = k.repeat_interleave(H // Hkv, dim=1)
    v = v.repeat_interleave(H // Hkv, dim=1)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    allowed = j <= i
    if is_local(c, l):
        allowed = allowed & (j >= i - c["window"] + 1)
    if SAME_DOC is not None:
        allowed = allowed & SAME_DOC[:, None]
    s = (q @ k.transpose(-1, -2)) / math.sqrt(Dh)
    s = s.masked_fill(~allowed, float("-inf"))
    o = torch.softmax(s, dim=-1) @ v                               # (B, H, T, Dh)
    o = o.transpose(1, 2).reshape(B, T, H * Dh)
    return o @ P[p + ".wo"].T


def gated_delta(c, P, prefix, l, x):
    """Gated DeltaNet mixer (Yang, Kautz & Hatamizadeh, ICLR 2025), x (B, T, D) -> (B, T, D), in its
    plain recurrent form: per head, S_t = a_t S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T, o_t = S_t q_t,
    with q, k L2-normalised, a_t = exp(-exp(A_log) softplus(w_a x + dt_bias)), b_t = sigmoid(w_b x);
    then a per-head RMSNorm of o, the gate silu(w_z x) and W_o. No short convolution."""
    p = prefix + ".delta"
    Hd, Dk, Dv = delta_dims(c)
    a = rmsnorm(x, P[prefix + ".attn_norm"], c["norm_eps"])

    def l2(t):
        return t / torch.sqrt(t.pow(2).sum(dim=-1, keepdim=True) + 1e-6)

    q = l2((a @ P[p + ".wq"].T).view(B, T, Hd, Dk))
    k = l2((a @ P[p + ".wk"].T).view(B, T, Hd, Dk))
    v = (a @ P[p + ".wv"].T).view(B, T, Hd, Dv)
    z = (a @ P[p + ".wz"].T).view(B, T, Hd, Dv)
    g = -torch.exp(P[p + ".A_log"]) * F.softplus(a @ P[p + ".wa"].T + P[p + ".dt_bias"])  # (B, T, Hd)
    beta = torch.sigmoid(a @ P[p + ".wb"].T)
    S = torch.zeros(B, Hd, Dv, Dk, dtype=f64)
    eye = torch.eye(Dk, dtype=f64)
    outs = []
    for t in range(T):
        kt, vt, bt = k[:, t], v[:, t], beta[:, t, :, None, None]
        if SAME_DOC is not None and t > 0:  # a new document forgets the state: a_t = 0
            S = S * SAME_DOC[:, t, t - 1].to(f64)[:, None, None, None]
        S = torch.exp(g[:, t])[:, :, None, None] * (S @ (eye - bt * kt[..., :, None] * kt[..., None, :])) \
            + bt * vt[..., :, None] * kt[..., None, :]
        outs.append((S @ q[:, t, :, :, None])[..., 0])                # (B, Hd, Dv)
    o = torch.stack(outs, dim=1)                                       # (B, T, Hd, Dv)
    y = rmsnorm(o, P[p + ".o_norm"], c["norm_eps"]) * F.silu(z)
    return y.reshape(B, T, Hd * Dv) @ P[p + ".wo"].T


def swiglu(P, prefix, x):
    return (F.silu(x @ P[prefix + ".w1"].T) * (x @ P[prefix + ".w3"].T)) @ P[prefix + ".w2"].T


def capacity_keep(c, scores, chosen, G):
    """keep (N, E) bool: which (token, expert) choices survive the per-group,
    per-expert capacity cap = ceil(cf * G * K / E). drop_policy "probs": the
    cap highest scores, ties to the lower token index. "position" (Megatron-LM's
    --moe-token-drop-policy position, which routes a (T, B)-major view of the
    batch): the cap earliest by (position in the sequence, sequence in the
    group). Also returns the smallest score gap around any cut (inf when
    nothing is cut by score)."""
    E, K = c["n_experts"], c["top_k"]
    if c["capacity_factor"] <= 0:
        return chosen.clone(), math.inf
    cap = math.ceil(c["capacity_factor"] * G * K / E)
    groups = scores.shape[0] // G
    s = scores.reshape(groups, G, E)
    ch = chosen.reshape(groups, G, E)
    idx = torch.arange(G)
    if c.get("drop_policy", "probs") == "position":
        seqs = G // T if G > T else 1
        arrival = (idx % T) * seqs + idx // T if seqs > 1 else idx     # (G,) arrival rank in the group
        earlier = (arrival[None, :] < arrival[:, None])[None, :, :, None]  # [., i, j, .]: j arrives before i
        rank = (earlier & ch[:, None, :, :]).sum(dim=2)
        return (ch & (rank < cap)).reshape(-1, E), math.inf
    # beats[g, i, j, e]: candidate j ranks ahead of candidate i.
    s_i, s_j = s[:, :, None, :], s[:, None, :, :]
    lower = (idx[None, :] < idx[:, None])[None, :, :, None]   # j < i
    beats = (s_j > s_i) | ((s_j == s_i) & lower)
    rank = (beats & ch[:, None, :, :]).sum(dim=2)              # (groups, G, E)
    keep = ch & (rank < cap)
    gap = math.inf
    for g in range(groups):
        for e in range(E):
            cand = s[g, ch[g, :, e], e].sort(descending=True).values
            if cand.numel() > cap:
                gap = min(gap, float(cand[cap - 1] - cand[cap]))
    return keep.reshape(-1, E), gap


def moe(c, P, prefix, m, info):
    """m (N, D) normed input -> (MoE output (N, D), aux, z) of block `prefix`."""
    p = prefix + ".moe"
    E, K = c["n_experts"], c["top_k"]
    N = m.shape[0]
    G = c["routing_group"] if c["routing_group"] > 0 else T
    logits = m @ P[p + ".router"].T                                 # (N, E)
    if c["router_score"] == "softmax":
        scores = torch.softmax(logits, dim=-1)
        prob = scores
    else:
        scores = torch.sigmoid(logits)
        prob = scores / scores.sum(dim=-1, keepdim=True)
    top_s, top_i = torch.topk(scores, K, dim=-1)                    # (N, K)
    gate = top_s / top_s.sum(dim=-1, keepdim=True) if c["router_renormalize"] else top_s
    srt = scores.detach().sort(dim=-1, descending=True).values
    topk_gap = float((srt[:, K - 1] - srt[:, K]).min()) if K < E else math.inf

    chosen = F.one_hot(top_i, E).sum(dim=1).bool()                  # (N, E)
    keep, cap_gap = capacity_keep(c, scores.detach(), chosen, G)
    info["dropped"].append(int(chosen.sum() - keep.sum()))
    for b, n in enumerate((chosen & ~keep).reshape(B, T * E).sum(dim=1).tolist()):
        info["dropped_seq"][b] += n
    info["load"].append(chosen.sum(dim=0).tolist())
    info["gap"] = min(info["gap"], topk_gap, cap_gap)

    # Switch balancing loss per routing group, averaged over groups:
    # E * sum_e f_e P_e, f_e = share of the group's G*K choices (before
    # capacity; not differentiable), P_e = mean routing probability.
    groups = N // G
    f = chosen.to(f64).reshape(groups, G, E).sum(dim=1) / (G * K)
    Pm = prob.reshape(groups, G, E).mean(dim=1)
    aux = (E * (f * Pm).sum(dim=-1)).mean()
    z = torch.logsumexp(logits, dim=-1).pow(2).mean()

    # Dense formulation: every expert on every token, weighted by its gate
    # where the choice was kept, zero elsewhere.
    xin = m
    if c["d_latent"] > 0:
        xin = rmsnorm(m @ P[p + ".down"].T, P[p + ".latent_norm"], c["norm_eps"])
    w = torch.zeros(N, E, dtype=f64).scatter(1, top_i, gate) * keep.to(f64)
    routed = sum(w[:, e:e + 1] * swiglu(P, f"{p}.experts.{e}", xin) for e in range(E))
    total = routed @ P[p + ".up"].T if c["d_latent"] > 0 else routed
    for s in range(c["n_shared_experts"]):
        total = total + swiglu(P, f"{p}.shared.{s}", m)
    if c["moe_out_norm"]:
        total = rmsnorm(total, P[p + ".out_norm"], c["norm_eps"])
    return total, aux, z


def block(c, P, prefix, l, x, info, auxes, zs):
    """One pre-norm block named `prefix`, built like layer l: x (B, T, D) -> (B, T, D)."""
    D = c["d_model"]
    x = x + (gated_delta(c, P, prefix, l, x) if is_delta(c, l) else attention(c, P, prefix, l, x))
    m = rmsnorm(x, P[prefix + ".ffn_norm"], c["norm_eps"]).reshape(B * T, D)
    if is_moe(c, l):
        y, aux, z = moe(c, P, prefix, m, info)
        auxes.append(aux)
        zs.append(z)
    else:
        y = swiglu(P, prefix + ".mlp", m)
    return x + y.reshape(B, T, D)


def forward(c, P, tokens, info):
    """Returns (ce, aux mean over MoE blocks, z mean over MoE blocks, mtp, total);
    mtp is the mean of the MTP modules' cross-entropies (0 without modules)."""
    global SAME_DOC
    V, Dm = c["vocab_size"], mtp_depth(c)
    inputs, targets = tokens[:, :T], tokens[:, 1:T + 1]
    SAME_DOC = None
    if c.get("document_separator", -1) >= 0:  # documents end at the separator: number them along the row
        doc = torch.zeros(B, T, dtype=torch.long)
        doc[:, 1:] = torch.cumsum((inputs[:, :-1] == c["document_separator"]).long(), dim=1)
        SAME_DOC = doc[:, :, None] == doc[:, None, :]
    x = F.embedding(inputs, P["embed"])                             # (B, T, D)
    auxes, zs = [], []
    for l in range(c["n_layers"]):
        x = block(c, P, f"layers.{l}", l, x, info, auxes, zs)
    h = rmsnorm(x, P["final_norm"], c["norm_eps"])
    W = P["embed"] if c["tied_embeddings"] else P["head"]
    ce = F.cross_entropy((h @ W.T).reshape(B * T, -1), targets.reshape(-1))
    # DeepSeek-V3 eqs. 21-24: module k sees h^{k-1} and the embedding of t_{i+k}, predicts t_{i+1+k}.
    h_prev, mtp_ces = x, []
    for k in range(1, Dm + 1):
        p = f"mtp.{k - 1}"
        e = F.embedding(tokens[:, k:k + T], P["embed"])
        joined = torch.cat([rmsnorm(h_prev, P[p + ".h_norm"], c["norm_eps"]),
                            rmsnorm(e, P[p + ".e_norm"], c["norm_eps"])], dim=-1)   # (B, T, 2D)
        hk = block(c, P, p, c["n_layers"] - 1, joined @ P[p + ".proj"].T, info, auxes, zs)
        logits = rmsnorm(hk, P[p + ".head_norm"], c["norm_eps"]) @ W.T
        mtp_ces.append(F.cross_entropy(logits.reshape(B * T, V), tokens[:, k + 1:k + 1 + T].reshape(-1)))
        h_prev = hk
    aux = torch.stack(auxes).mean() if auxes else torch.zeros((), dtype=f64)
    z = torch.stack(zs).mean() if zs else torch.zeros((), dtype=f64)
    mtp = torch.stack(mtp_ces).mean() if mtp_ces else torch.zeros((), dtype=f64)
    total = ce + c["aux_loss_coef"] * aux + c["z_loss_coef"] * z
    if Dm > 0:  # eq. 25: lambda / Dm * sum_k CE_k
        total = total + c["mtp_loss_weight"] * mtp
    return ce, aux, z, mtp, total


# ---------------------------------------------------------------------------
# safetensors, by hand: u64 LE header size, JSON header, raw LE data.

def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs, offset = [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        if t.dtype == torch.float32:
            dtype, fmt = "F32", "<f"
        elif t.dtype == torch.int32:
            dtype, fmt = "I32", "<i"
        else:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
        flat = t.reshape(-1).tolist()
        blob = struct.pack(f"{fmt[0]}{len(flat)}{fmt[1]}", *flat)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)  # keep the data 8-byte aligned
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(hjson)))
        fh.write(hjson)
        for blob in blobs:
            fh.write(blob)


def build(variant, seed, max_tries):
    c = make_config(variant)
    for attempt in range(max_tries):
        s = seed + attempt
        gen = torch.Generator().manual_seed(s)
        P = make_params(c, gen)
        tokens = torch.randint(0, c["vocab_size"], (B, T + 1 + mtp_depth(c)), generator=gen)
        if "document_separator" in c:  # the separators where the variant's documents end, and nowhere else
            sep = c["document_separator"]
            tokens[:, :T][tokens[:, :T] == sep] = sep + 1
            for row, pos in SEPARATORS:
                tokens[row, pos] = sep
        info = {"dropped": [], "dropped_seq": [0] * B, "load": [], "gap": math.inf}
        ce, aux, z, mtp, total = forward(c, P, tokens, info)
        if info["gap"] < MARGIN:
            continue  # a routing decision too close to call in fp32
        if c["capacity_factor"] > 0 and sum(info["dropped"]) == 0:
            continue  # want the capacity path exercised
        names = list(P.keys())
        grads = torch.autograd.grad(total, [P[n] for n in names])
        return c, s, P, tokens, info, (ce, aux, z, mtp, total), dict(zip(names, grads))
    raise RuntimeError(f"variant {variant}: no seed in [{seed}, {seed + max_tries}) gave routing margins >= {MARGIN}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", choices=sorted(VARIANTS) + ["all"], default="all")
    ap.add_argument("--out", default=os.path.normpath(os.path.join(here, "..", "..", "tests", "golden", "data")))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--max-tries", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    for v in (sorted(VARIANTS) if args.variant == "all" else [args.variant]):
        c, s, P, tokens, info, losses, grads = build(v, args.seed, args.max_tries)
        ce, aux, z, mtp, total = losses
        tensors = {"tokens": tokens.to(torch.int32)}
        for n, w in P.items():
            tensors[n] = w.float()
        for n, g in grads.items():
            tensors["grad." + n] = g.float()
        scalars = [("loss", ce), ("aux_loss", aux), ("z_loss", z), ("total_loss", total)]
        if mtp_depth(c) > 0:
            scalars.append(("mtp_loss", mtp))
        for n, val in scalars:
            tensors[n] = val.detach().reshape(1).float()
        n_moe = len(info["dropped"])
        tensors["dropped"] = torch.tensor(info["dropped"], dtype=torch.int32).reshape(n_moe)
        tensors["expert_load"] = torch.tensor(info["load"], dtype=torch.int32).reshape(n_moe, c["n_experts"])
        tensors["dropped_per_sequence"] = torch.tensor(info["dropped_seq"], dtype=torch.int32).reshape(B)
        meta = {
            "config": json.dumps(c, sort_keys=True),
            "batch": B, "seq_len": T, "seed": s,
            "dropped": json.dumps(info["dropped"]),
            # float64 values, exact (the F32 tensors are rounded copies).
            "losses": json.dumps({n: float(val.detach()) for n, val in scalars}),
            "routing_margin": f"{info['gap']:.3e}",
            "generator": "tools/ref/moe_reference.py (torch %s, float64)" % torch.__version__,
        }
        path = os.path.join(args.out, f"moe_{v}.safetensors")
        write_safetensors(path, tensors, meta)
        print(f"{path}: seed {s}, loss {float(ce):.6f} aux {float(aux):.6f} z {float(z):.6f} mtp {float(mtp):.6f} "
              f"total {float(total):.6f}, dropped {info['dropped']}, margin {info['gap']:.2e}, "
              f"{os.path.getsize(path)} bytes")


if __name__ == "__main__":
    sys.exit(main())
