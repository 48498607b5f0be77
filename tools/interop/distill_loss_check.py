"""Per-token distillation losses over the vocabulary and their logits
gradient in PyTorch autograd: the independent reference
tests/e2e/interop_distill_loss_test.cpp compares moetrain's kernel
(src/kernels/cpu/distill_loss.h) with.

Reads a JSON case on stdin ({"R", "V", "logits", "teacher_logits",
"weights", "divergence": "reverse" | "forward"}), prints {"losses": [...],
"grad": [...]} in float64 from float32 inputs. Reverse KL(student ||
teacher) is what on-policy distillation minimises (TRL's GKD with beta = 1
computes the same with torch.nn.functional.kl_div); forward KL(teacher ||
student) is word-level knowledge distillation.
"""
import json
import sys

import torch
import torch.nn.functional as F


def main():
    c = json.load(sys.stdin)
    R, V = c["R"], c["V"]
    z = torch.tensor(c["logits"], dtype=torch.float64).reshape(R, V).requires_grad_(True)
    t = torch.tensor(c["teacher_logits"], dtype=torch.float64).reshape(R, V)
    w = torch.tensor(c["weights"], dtype=torch.float64)
    ls = F.log_softmax(z, dim=-1)
    lt = F.log_softmax(t, dim=-1)
    if c["divergence"] == "reverse":
        # kl_div(input, target) = sum target * (log target - input): with
        # input = teacher, target = student it is KL(student || teacher).
        per_token = F.kl_div(lt, ls, log_target=True, reduction="none").sum(-1)
    else:
        per_token = F.kl_div(ls, lt, log_target=True, reduction="none").sum(-1)
    losses = w * per_token
    losses.sum().backward()
    json.dump({"losses": losses.detach().tolist(), "grad": z.grad.reshape(-1).tolist()}, sys.stdout)


if __name__ == "__main__":
    main()
