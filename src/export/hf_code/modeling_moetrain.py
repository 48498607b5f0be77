# modeling_moetrain.py — the moetrain decoder-only MoE transformer as a Hugging
# Face PreTrainedModel, for exports that no transformers class holds exactly:
# latent MoE with its RMSNorms, the RMSNorm after the MoE block, QK-norm,
# softmax or sigmoid routing with the aux-loss-free selection bias, kv-head
# counts and sliding windows per layer type, multi-head latent attention with
# its compressed cache, gated-delta layers with their recurrent state, and the
# multi-token-prediction modules (loaded always, run only when asked).
#
# Written by the moetrain project (docs/inference.md) and copied unchanged
# into every such export; its outputs are tested against moetrain's own
# forward and KV-cache decoder (tests/e2e/interop_hf_custom_test.cpp). Tensor names
# are moetrain's parameter names under "model." with ".weight" appended
# (A_log and dt_bias as they are), the head as "lm_head.weight".
#
# Inference semantics follow moetrain's decoder: MoE is dropless (a token's
# output never depends on the other tokens of its batch; capacity is a
# training device), one document per sequence. A 2-D attention_mask with
# zeros (left padding) is honoured: padded keys are never attended to and
# padded steps leave a gated-delta state unchanged.
#
# Legend: B batch, T new tokens, L cached + new positions, D model dim,
# H heads, Hkv kv heads, Dh head dim; MLA: Dq query latent, Dc kv latent,
# Dn / Dr q-k dims without / with RoPE, Dv value dim; gated delta: Hd heads,
# Dk / Dv key / value dims per head.
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import GenerationMixin, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_moetrain import MoetrainConfig


# ---------------------------------------------------------------------------
# The architecture, read from the run's [model] table (configuration_moetrain.py).

class Arch:
    """moetrain's ModelConfig and its derived helpers (src/model/config.h)."""

    def __init__(self, m):
        self.m = m

    def __getattr__(self, k):
        # Only for the [model] keys: copy and pickle probe dunders on a
        # half-built object, which must not recurse into self.m.
        if k == "m" or k.startswith("__"):
            raise AttributeError(k)
        try:
            return self.m[k]
        except KeyError:
            raise AttributeError(f"config.json: moetrain_model has no key '{k}'") from None

    def arch_layer(self, unit):
        return unit if unit < self.n_layers else self.n_layers - 1

    def letter(self, unit):
        p = self.layer_pattern
        return p[self.arch_layer(unit) % len(p)]

    def is_local(self, unit):
        return self.letter(unit) == "L"

    def is_delta(self, unit):
        return self.letter(unit) == "D"

    def is_mla(self):
        return self.attention == "mla"

    def is_moe(self, unit):
        return self.n_experts > 0 and self.arch_layer(unit) >= self.n_dense_layers

    def head_dim(self):
        return self.d_model // self.n_heads

    def kv_heads(self, unit):
        if self.is_local(unit) and self.n_kv_heads_local > 0:
            return self.n_kv_heads_local
        return self.n_kv_heads

    def delta_dims(self):
        Dh = self.head_dim()
        return (self.delta_heads or self.n_heads, self.delta_key_dim or Dh, self.delta_value_dim or Dh)


# ---------------------------------------------------------------------------
# Building blocks.

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        y = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (y * self.weight.float()).to(x.dtype)


def linear(n_in, n_out):
    return nn.Linear(n_in, n_out, bias=False)


class Rope:
    """Rotate-half RoPE with moetrain's context-extension scalings
    (src/kernels/cpu/rope.cpp): the pair (x[i], x[i + Dh/2]) turns by
    position * inv_freq(i); yarn also scales cos and sin by its attention
    factor. Tables in float64, rounded once to float32 as moetrain's are."""

    def __init__(self, a: Arch, dim):
        self.dim = dim
        half = dim // 2
        kind = a.rope_scaling
        theta, factor = a.rope_theta, a.rope_factor
        inv = []
        for i in range(half):
            base = theta ** (-2.0 * i / dim)
            if kind == "linear":
                inv.append(base / factor)
            elif kind == "yarn":
                def pair_at(rotations):
                    return dim * math.log(a.rope_original_len / (rotations * 2.0 * math.pi)) / (2.0 * math.log(theta))
                lo = max(0.0, math.floor(pair_at(a.yarn_beta_fast)))
                hi = min(float(dim - 1), math.ceil(pair_at(a.yarn_beta_slow)))
                if hi == lo:
                    hi += 0.001
                ramp = min(max((i - lo) / (hi - lo), 0.0), 1.0)
                keep = 1.0 - ramp
                inv.append(base / factor * (1.0 - keep) + base * keep)
            else:
                inv.append(base)
        self.inv_freq = inv  # a list: modules are built on the meta device when loaded
        self.scale = 1.0
        if kind == "yarn":
            af = a.yarn_attention_factor
            self.scale = af if af > 0 else (0.1 * math.log(factor) + 1.0 if factor > 1.0 else 1.0)

    def tables(self, positions):
        """positions (B, T) -> cos, sin (B, 1, T, dim) in float32."""
        inv_freq = torch.tensor(self.inv_freq, dtype=torch.float64, device=positions.device)
        ang = positions.to(torch.float64)[..., None] * inv_freq
        cos = (torch.cos(ang) * self.scale).float()
        sin = (torch.sin(ang) * self.scale).float()
        return torch.cat([cos, cos], dim=-1)[:, None], torch.cat([sin, sin], dim=-1)[:, None]

    @staticmethod
    def apply(x, cos, sin):
        """x (B, heads, T, dim)."""
        half = x.shape[-1] // 2
        x32 = x.float()
        rotated = torch.cat([-x32[..., half:], x32[..., :half]], dim=-1)
        return (x32 * cos + rotated * sin).to(x.dtype)


def attend(q, k, v, scale, allowed):
    """q (B, H, T, Dqk), k (B, H, L, Dqk), v (B, H, L, Dv), allowed (B, 1, T, L)
    -> (B, T, H * Dv); scores and softmax in float32."""
    s = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    s = s.masked_fill(~allowed, float("-inf"))
    p = torch.softmax(s, dim=-1)
    o = torch.matmul(p, v.float()).to(q.dtype)
    B, H, T, Dv = o.shape
    return o.transpose(1, 2).reshape(B, T, H * Dv)


class SwiGLU(nn.Module):
    def __init__(self, d_in, d_hidden):
        super().__init__()
        self.w1 = linear(d_in, d_hidden)
        self.w3 = linear(d_in, d_hidden)
        self.w2 = linear(d_hidden, d_in)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


# ---------------------------------------------------------------------------
# Token mixers. Each takes the normed input a (B, T, D), the step's context and
# its layer's cache entry (None without a cache) and returns (B, T, D) and the
# new cache entry.

@dataclass
class Step:
    positions: torch.Tensor        # (B, T) RoPE positions of the new tokens
    allowed: dict                  # window (None: global) -> (B, 1, T, L) bool
    new_valid: torch.Tensor        # (B, T) bool: the new tokens that are not padding


class GqaAttention(nn.Module):
    def __init__(self, a: Arch, unit):
        super().__init__()
        D, H, Dh, Hkv = a.d_model, a.n_heads, a.head_dim(), a.kv_heads(unit)
        self.H, self.Hkv, self.Dh = H, Hkv, Dh
        self.window = a.window if a.is_local(unit) else None
        self.wq = linear(D, H * Dh)
        self.wk = linear(D, Hkv * Dh)
        self.wv = linear(D, Hkv * Dh)
        self.wo = linear(H * Dh, D)
        if a.qk_norm:
            self.q_norm = RMSNorm(Dh, a.norm_eps)
            self.k_norm = RMSNorm(Dh, a.norm_eps)
        self.qk_norm = a.qk_norm
        self.rope = Rope(a, Dh)

    def forward(self, a, step: Step, past):
        B, T, _ = a.shape
        q = self.wq(a).view(B, T, self.H, self.Dh).transpose(1, 2)
        k = self.wk(a).view(B, T, self.Hkv, self.Dh).transpose(1, 2)
        v = self.wv(a).view(B, T, self.Hkv, self.Dh).transpose(1, 2)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        cos, sin = self.rope.tables(step.positions)
        q, k = Rope.apply(q, cos, sin), Rope.apply(k, cos, sin)
        if past is not None:  # the cache holds rotated keys
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        rep = self.H // self.Hkv
        o = attend(q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1), 1.0 / math.sqrt(self.Dh),
                   step.allowed[self.window])
        return self.wo(o), (k, v)


class MlaAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V2 section 2.1): the cache holds
    the normed kv latent (Dc) and the one shared RoPE key (Dr) per token; keys
    and values are decompressed from it for every head."""

    def __init__(self, a: Arch, unit):
        super().__init__()
        D, H = a.d_model, a.n_heads
        Dq, Dc, Dn, Dr, Dv = a.q_lora_rank, a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim
        self.H, self.Dn, self.Dr, self.Dv = H, Dn, Dr, Dv
        self.window = a.window if a.is_local(unit) else None
        if Dq > 0:
            self.wdq = linear(D, Dq)
            self.q_latent_norm = RMSNorm(Dq, a.norm_eps)
            self.wuq = linear(Dq, H * (Dn + Dr))
        else:
            self.wq = linear(D, H * (Dn + Dr))
        self.q_latent = Dq > 0
        self.wdkv = linear(D, Dc)
        self.wkr = linear(D, Dr)
        self.kv_latent_norm = RMSNorm(Dc, a.norm_eps)
        self.wuk = linear(Dc, H * Dn)
        self.wuv = linear(Dc, H * Dv)
        self.wo = linear(H * Dv, D)
        self.rope = Rope(a, Dr)

    def forward(self, a, step: Step, past):
        B, T, _ = a.shape
        H, Dn, Dr = self.H, self.Dn, self.Dr
        q = self.wuq(self.q_latent_norm(self.wdq(a))) if self.q_latent else self.wq(a)
        q = q.view(B, T, H, Dn + Dr).transpose(1, 2)
        cos, sin = self.rope.tables(step.positions)
        q = torch.cat([q[..., :Dn], Rope.apply(q[..., Dn:], cos, sin)], dim=-1)
        c_kv = self.kv_latent_norm(self.wdkv(a))                        # (B, T, Dc)
        k_rope = Rope.apply(self.wkr(a)[:, None], cos, sin)[:, 0]      # (B, T, Dr)
        if past is not None:
            c_kv = torch.cat([past[0], c_kv], dim=1)
            k_rope = torch.cat([past[1], k_rope], dim=1)
        L = c_kv.shape[1]
        k_nope = self.wuk(c_kv).view(B, L, H, Dn).transpose(1, 2)
        v = self.wuv(c_kv).view(B, L, H, self.Dv).transpose(1, 2)
        k = torch.cat([k_nope, k_rope[:, None].expand(B, H, L, Dr)], dim=-1)
        o = attend(q, k, v, 1.0 / math.sqrt(Dn + Dr), step.allowed[self.window])
        return self.wo(o), (c_kv, k_rope)


class GatedDelta(nn.Module):
    """Gated DeltaNet (Yang, Kautz & Hatamizadeh, ICLR 2025) in its recurrent
    form: per head S_t = a_t S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T,
    o_t = S_t q_t with q, k L2-normalised, a_t = exp(-exp(A_log)
    softplus(w_a x + dt_bias)), b_t = sigmoid(w_b x); then a per-head RMSNorm
    of o, the gate silu(w_z x) and W_o. The cache is S (B, Hd, Dv, Dk), fp32."""

    def __init__(self, a: Arch, unit):
        super().__init__()
        D = a.d_model
        Hd, Dk, Dv = a.delta_dims()
        self.Hd, self.Dk, self.Dv = Hd, Dk, Dv
        self.wq = linear(D, Hd * Dk)
        self.wk = linear(D, Hd * Dk)
        self.wv = linear(D, Hd * Dv)
        self.wz = linear(D, Hd * Dv)
        self.wa = linear(D, Hd)
        self.wb = linear(D, Hd)
        self.A_log = nn.Parameter(torch.zeros(Hd))
        self.dt_bias = nn.Parameter(torch.zeros(Hd))
        self.o_norm = RMSNorm(Dv, a.norm_eps)
        self.wo = linear(Hd * Dv, D)

    def forward(self, a, step: Step, past):
        B, T, _ = a.shape
        Hd, Dk, Dv = self.Hd, self.Dk, self.Dv

        def l2(t):
            return t / torch.sqrt(t.pow(2).sum(dim=-1, keepdim=True) + 1e-6)

        q = l2(self.wq(a).float().view(B, T, Hd, Dk))
        k = l2(self.wk(a).float().view(B, T, Hd, Dk))
        v = self.wv(a).float().view(B, T, Hd, Dv)
        z = self.wz(a).view(B, T, Hd, Dv)
        g = -torch.exp(self.A_log.float()) * F.softplus(self.wa(a).float() + self.dt_bias.float())  # (B, T, Hd)
        beta = torch.sigmoid(self.wb(a).float())
        S = past if past is not None else torch.zeros(B, Hd, Dv, Dk, dtype=torch.float32, device=a.device)
        outs = []
        for t in range(T):
            kt, vt, bt = k[:, t], v[:, t], beta[:, t, :, None, None]
            Sk = torch.matmul(S, kt[..., :, None])                                   # (B, Hd, Dv, 1)
            S_new = torch.exp(g[:, t])[:, :, None, None] * (S - bt * Sk * kt[..., None, :]) \
                + bt * vt[..., :, None] * kt[..., None, :]
            keep = step.new_valid[:, t][:, None, None, None]
            S = torch.where(keep, S_new, S)
            outs.append(torch.matmul(S, q[:, t, :, :, None])[..., 0])              # (B, Hd, Dv)
        o = torch.stack(outs, dim=1).to(a.dtype)                                    # (B, T, Hd, Dv)
        y = self.o_norm(o) * F.silu(z)
        return self.wo(y.reshape(B, T, Hd * Dv)), S


# ---------------------------------------------------------------------------
# Feed-forward: dense SwiGLU or the MoE block.

class Moe(nn.Module):
    """Token-choice top-k routing over softmax or sigmoid scores; the
    aux-loss-free bias (a buffer, router_bias) shifts only which experts are
    chosen; gates are the chosen scores, renormalised if the run did. Latent
    MoE runs the routed experts in Dl between a down-projection with an
    RMSNorm and an up-projection; shared experts run in D; an optional
    RMSNorm on the block's output. Dropless."""

    def __init__(self, a: Arch):
        super().__init__()
        D, E, Dl = a.d_model, a.n_experts, a.d_latent
        self.K, self.softmax, self.renormalize = a.top_k, a.router_score == "softmax", a.router_renormalize
        self.router = linear(D, E)
        if a.aux_free_bias:
            self.register_buffer("router_bias", torch.zeros(E), persistent=True)
        else:
            self.router_bias = None
        d_in = D
        if Dl > 0:
            self.down = linear(D, Dl)
            self.latent_norm = RMSNorm(Dl, a.norm_eps)
            self.up = linear(Dl, D)
            d_in = Dl
        self.latent = Dl > 0
        self.shared = nn.ModuleList([SwiGLU(D, a.d_expert) for _ in range(a.n_shared_experts)])
        if a.moe_out_norm:
            self.out_norm = RMSNorm(D, a.norm_eps)
        self.has_out_norm = a.moe_out_norm
        self.experts = nn.ModuleList([SwiGLU(d_in, a.d_expert) for _ in range(E)])

    def forward(self, m):
        shape = m.shape
        m = m.reshape(-1, shape[-1])
        logits = self.router(m).float()
        scores = torch.softmax(logits, dim=-1) if self.softmax else torch.sigmoid(logits)
        select = scores if self.router_bias is None else scores + self.router_bias.float()
        idx = torch.topk(select, self.K, dim=-1).indices                            # (N, K)
        gate = scores.gather(1, idx)
        if self.renormalize:
            gate = gate / gate.sum(dim=-1, keepdim=True)
        xin = self.latent_norm(self.down(m)) if self.latent else m
        routed = torch.zeros(m.shape[0], xin.shape[-1], dtype=torch.float32, device=m.device)
        for e, expert in enumerate(self.experts):
            tok, slot = torch.nonzero(idx == e, as_tuple=True)
            if tok.numel() == 0:
                continue
            y = expert(xin[tok]).float() * gate[tok, slot][:, None]
            routed.index_add_(0, tok, y)
        total = self.up(routed.to(m.dtype)) if self.latent else routed.to(m.dtype)
        for s in self.shared:
            total = total + s(m)
        if self.has_out_norm:
            total = self.out_norm(total)
        return total.reshape(shape)


class MoetrainBlock(nn.Module):
    """Pre-norm block built like layer `unit`: x + mixer(attn_norm(x)), then
    x + ffn(ffn_norm(x))."""

    def __init__(self, a: Arch, unit):
        super().__init__()
        self.attn_norm = RMSNorm(a.d_model, a.norm_eps)
        if a.is_delta(unit):
            self.delta = GatedDelta(a, unit)
        elif a.is_mla():
            self.attn = MlaAttention(a, unit)
        else:
            self.attn = GqaAttention(a, unit)
        self.is_delta = a.is_delta(unit)
        self.ffn_norm = RMSNorm(a.d_model, a.norm_eps)
        if a.is_moe(unit):
            self.moe = Moe(a)
        else:
            self.mlp = SwiGLU(a.d_model, a.d_ff)
        self.is_moe = a.is_moe(unit)

    def forward(self, x, step: Step, past):
        mixer = self.delta if self.is_delta else self.attn
        h, present = mixer(self.attn_norm(x), step, past)
        x = x + h
        m = self.ffn_norm(x)
        return x + (self.moe(m) if self.is_moe else self.mlp(m)), present


class MoetrainMtpModule(MoetrainBlock):
    """Multi-token-prediction module k (DeepSeek-V3 section 2.2): projects
    [RMSNorm(h^{k-1}_i); RMSNorm(emb(t_{i+k}))] to D, runs one block built
    like the last layer and predicts t_{i+1+k} through head_norm and the
    shared head."""

    def __init__(self, a: Arch, unit):
        super().__init__(a, unit)
        D = a.d_model
        self.h_norm = RMSNorm(D, a.norm_eps)
        self.e_norm = RMSNorm(D, a.norm_eps)
        self.proj = linear(2 * D, D)
        self.head_norm = RMSNorm(D, a.norm_eps)


# ---------------------------------------------------------------------------
# The cache: one entry per layer of its kind (GQA: rotated keys and values;
# MLA: the normed latent and the RoPE key; gated delta: the state).

class MoetrainCache:
    is_compileable = False
    is_croppable = False

    def __init__(self, n_layers):
        self.entries = [None] * n_layers
        self.seen = 0        # positions held (padding included)

    def get_seq_length(self, layer_idx=0):
        return self.seen

    @property
    def is_linear(self):
        return [False]

    def reorder_cache(self, beam_idx):
        def pick(t):
            return t.index_select(0, beam_idx.to(t.device))
        self.entries = [None if e is None else (tuple(pick(t) for t in e) if isinstance(e, tuple) else pick(e))
                        for e in self.entries]


@dataclass
class MoetrainCausalLMOutput(ModelOutput):
    loss: Optional[torch.Tensor] = None
    logits: Optional[torch.Tensor] = None
    cache: Optional[MoetrainCache] = None
    # Module k's logits (B, T - k, V) at position i predict token i + 1 + k;
    # present when forward(..., return_mtp_logits=True).
    mtp_logits: Optional[tuple] = None


# ---------------------------------------------------------------------------
# The models.

class MoetrainPreTrainedModel(PreTrainedModel):
    config_class = MoetrainConfig
    base_model_prefix = "model"
    _no_split_modules = ["MoetrainBlock", "MoetrainMtpModule"]
    # Stay fp32 when the model loads as bf16: the selection bias decides
    # near-tied expert choices, the delta decays sit in an exponent.
    _keep_in_fp32_modules = ["router_bias", "A_log", "dt_bias"]
    supports_gradient_checkpointing = False

    def _init_weights(self, module):
        # Training is moetrain's business: a fresh model gets moetrain's
        # N(0, init_std^2) matrices and unit norms so it runs at all.
        std = self.config.moetrain_model.get("init_std", 0.02)
        with torch.no_grad():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.normal_(0.0, std)
            elif isinstance(module, RMSNorm):
                module.weight.fill_(1.0)
            elif isinstance(module, GatedDelta):
                module.A_log.zero_()
                module.dt_bias.zero_()


class MoetrainModel(MoetrainPreTrainedModel):
    def __init__(self, config: MoetrainConfig):
        super().__init__(config)
        a = Arch(config.moetrain_model)
        self.arch = a
        self.embed = nn.Embedding(a.vocab_size, a.d_model)
        self.layers = nn.ModuleList([MoetrainBlock(a, l) for l in range(a.n_layers)])
        self.mtp = nn.ModuleList([MoetrainMtpModule(a, a.n_layers + k) for k in range(a.mtp_depth)])
        self.final_norm = RMSNorm(a.d_model, a.norm_eps)
        self.post_init()

    def get_input_embeddings(self):
        return self.embed

    def set_input_embeddings(self, value):
        self.embed = value

    def step_context(self, B, T, past_len, attention_mask, position_ids, device):
        """RoPE positions, the new tokens' validity and the attention masks
        (one per window size in use) of T new tokens after past_len cached ones."""
        L = past_len + T
        if attention_mask is None:
            valid = torch.ones(B, L, dtype=torch.bool, device=device)
        else:
            valid = attention_mask[:, -L:].to(torch.bool) if attention_mask.shape[1] >= L else \
                torch.cat([torch.ones(B, L - attention_mask.shape[1], dtype=torch.bool, device=device),
                           attention_mask.to(torch.bool)], dim=1)
        if position_ids is None:
            position_ids = (valid.long().cumsum(-1) - 1).clamp(min=0)[:, past_len:]
        i = torch.arange(past_len, L, device=device)[:, None]
        j = torch.arange(L, device=device)[None, :]
        causal = j <= i
        allowed = {}
        windows = {None}
        for l in range(self.arch.n_layers):
            if self.arch.is_local(l):
                windows.add(self.arch.window)
        for w in windows:
            mask = causal if w is None else causal & (j >= i - w + 1)
            m = mask[None, None] & valid[:, None, None, :]
            # A padded query sees only itself, so its (unused) row stays finite.
            m = m | (i == j)[None, None]
            allowed[w] = m
        return Step(positions=position_ids, allowed=allowed, new_valid=valid[:, past_len:])

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, cache=None, inputs_embeds=None,
                use_cache=False, return_mtp=False):
        x = self.embed(input_ids) if inputs_embeds is None else inputs_embeds
        B, T, _ = x.shape
        past_len = cache.get_seq_length() if cache is not None else 0
        if use_cache and cache is None:
            cache = MoetrainCache(self.arch.n_layers)
        step = self.step_context(B, T, past_len, attention_mask, position_ids, x.device)
        for l, layer in enumerate(self.layers):
            x, present = layer(x, step, cache.entries[l] if cache is not None else None)
            if cache is not None:
                cache.entries[l] = present
        if cache is not None:
            cache.seen = past_len + T
        mtp_hidden = None
        if return_mtp:
            if past_len > 0:
                raise ValueError("moetrain: the MTP modules run over a whole sequence, not after a cache")
            mtp_hidden = self.run_mtp(input_ids, x, step)
        return self.final_norm(x), cache, mtp_hidden

    def run_mtp(self, input_ids, h, step: Step):
        """The modules' normed outputs: module k's (B, T - k, D)."""
        out = []
        T = h.shape[1]
        for k, mod in enumerate(self.mtp, start=1):
            n = T - k
            if n <= 0:
                break
            e = self.embed(input_ids[:, k:k + n])
            x = mod.proj(torch.cat([mod.h_norm(h[:, :n]), mod.e_norm(e)], dim=-1))
            sub = Step(positions=step.positions[:, :n],
                       allowed={w: m[:, :, :n, :n] for w, m in step.allowed.items()},
                       new_valid=step.new_valid[:, :n])
            h, _ = MoetrainBlock.forward(mod, x, sub, None)
            out.append(mod.head_norm(h))
        return out


class MoetrainForCausalLM(MoetrainPreTrainedModel, GenerationMixin):
    _tied_weights_keys = {"lm_head.weight": "model.embed.weight"}

    def __init__(self, config: MoetrainConfig):
        super().__init__(config)
        self.model = MoetrainModel(config)
        a = self.model.arch
        self.lm_head = linear(a.d_model, a.vocab_size)
        self.post_init()

    @classmethod
    def _supports_default_dynamic_cache(cls):
        # The model builds its own cache (MoetrainCache) on the first call.
        return False

    def get_input_embeddings(self):
        return self.model.embed

    def set_input_embeddings(self, value):
        self.model.embed = value

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, value):
        self.lm_head = value

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, cache=None, past_key_values=None,
                inputs_embeds=None, labels=None, use_cache=None, return_dict=None, logits_to_keep=0,
                return_mtp_logits=False, **kwargs):
        if cache is None:
            cache = past_key_values
        if cache is not None and not isinstance(cache, MoetrainCache):
            cache = None if cache.get_seq_length() == 0 else cache
            if cache is not None:
                raise ValueError(f"moetrain: a {type(cache).__name__} cannot hold this model's state; "
                                 "let the model build its own cache")
        if use_cache is None:
            use_cache = self.config.use_cache
        h, cache, mtp_hidden = self.model(input_ids, attention_mask, position_ids, cache, inputs_embeds, use_cache,
                                          return_mtp_logits)
        keep = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) and logits_to_keep > 0 else slice(None)
        logits = self.lm_head(h[:, keep]).float()
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                   ignore_index=-100)
        mtp_logits = None
        if mtp_hidden is not None:
            mtp_logits = tuple(self.lm_head(m).float() for m in mtp_hidden)
        return MoetrainCausalLMOutput(loss=loss, logits=logits, cache=cache if use_cache else None,
                                      mtp_logits=mtp_logits)
