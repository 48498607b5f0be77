"""GRPO's per-token loss and its logits gradient in PyTorch autograd: the
independent reference tests/e2e/interop_policy_loss_test.cpp compares
moetrain's kernel (src/kernels/cpu/policy_loss.h) with.

Reads a JSON case on stdin ({"R", "V", "logits", "targets", "weights",
"advantages", "old_logp", "ref_logp", "clip_low", "clip_high", "kl_beta"}),
prints {"losses": [...], "grad": [...]} in float64 from float32 inputs.
"""
import json
import sys

import torch


def main():
    c = json.load(sys.stdin)
    R, V = c["R"], c["V"]
    z = torch.tensor(c["logits"], dtype=torch.float64).reshape(R, V).requires_grad_(True)
    y = torch.tensor(c["targets"], dtype=torch.long)
    keep = y >= 0
    w = torch.tensor(c["weights"], dtype=torch.float64)
    adv = torch.tensor(c["advantages"], dtype=torch.float64)
    old = torch.tensor(c["old_logp"], dtype=torch.float64)
    ref = torch.tensor(c["ref_logp"], dtype=torch.float64)
    logp = torch.log_softmax(z, dim=-1).gather(1, y.clamp(min=0).unsqueeze(1)).squeeze(1)
    ratio = torch.exp(logp - old)
    clipped = torch.clamp(ratio, 1 - c["clip_low"], 1 + c["clip_high"])
    per_token = -torch.minimum(ratio * adv, clipped * adv)
    if c["kl_beta"] != 0:
        d = ref - logp
        per_token = per_token + c["kl_beta"] * (torch.exp(d) - d - 1)
    losses = torch.where(keep, w * per_token, torch.zeros_like(per_token))
    losses.sum().backward()
    json.dump({"losses": losses.detach().tolist(), "grad": z.grad.reshape(-1).tolist()}, sys.stdout)


if __name__ == "__main__":
    main()
