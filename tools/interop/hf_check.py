#!/usr/bin/env python3
"""hf_check.py — what Hugging Face tools compute on a `moetrain export --format hf`
directory, as JSON, for tests/e2e/interop_hf_test.cpp to compare with moetrain.

  hf_check.py logits --model DIR --ids IDS.json --out OUT.json
      IDS.json: {"sequences": [[id, ...], ...], "texts": ["...", ...]}.
      Loads the model with transformers (AutoModelForCausalLM, fp32, eager
      attention, CPU) and writes every position's logits of every sequence,
      plus the ids its tokenizer (AutoTokenizer) gives each text.
      Custom-code exports (MoetrainForCausalLM) load with trust_remote_code.
      Optional IDS.json keys: "generate": [[id, ...], ...] prompts continued
      greedily for "new_tokens" tokens (no stop at EOS) -> "generated", and
      with several prompts, also as one left-padded batch -> "generated_batched";
      "mtp": [[id, ...], ...] with "mtp_positions" T: the mean over the
      multi-token-prediction modules of module k's cross-entropy of token
      i + 1 + k at positions i < T -> "mtp_loss" (one per sequence).
      --dtype bfloat16 loads (and computes) in bf16.
  hf_check.py lmeval --model DIR --tasks TASK.jsonl --out OUT.json
      Runs lm-evaluation-harness (model "hf") on a local multiple-choice JSONL
      task in moetrain eval's format ({"context", "choices", "answer"}) and
      writes acc, acc_norm and each document's per-choice log-likelihoods.
  hf_check.py both --model DIR --ids IDS.json --tasks TASK.jsonl --out OUT.json
      logits, then lmeval, in one process (one import of torch and
      transformers); OUT.json holds the logits result with "lmeval" inside.

Runs offline: nothing is fetched from a hub.
"""
import argparse
import json
import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def is_custom_code(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    return "auto_map" in cfg


def logits_result(args):
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    dtype = torch.bfloat16 if getattr(args, "dtype", "float32") == "bfloat16" else torch.float32
    model, info = AutoModelForCausalLM.from_pretrained(
        args.model, dtype=dtype, attn_implementation="eager", output_loading_info=True,
        trust_remote_code=is_custom_code(args.model)
    )
    model.eval()
    req = json.load(open(args.ids))
    out = {"architecture": type(model).__name__, "logits": [], "text_ids": []}
    for k in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        out[k] = sorted(str(x) for x in info.get(k, []))
    with torch.no_grad():
        for seq in req.get("sequences", []):
            x = torch.tensor([seq], dtype=torch.long)
            logits = model(input_ids=x).logits[0].float()
            out["logits"].append(logits.tolist())
        if req.get("generate"):
            # No stop at EOS: moetrain generate --no-stop decodes every token.
            model.generation_config.eos_token_id = None
            out["generated"] = []
            for prompt in req["generate"]:
                x = torch.tensor([prompt], dtype=torch.long)
                # An explicit mask: the prompt's first id (end of document) would
                # otherwise be taken for padding, as the pad id defaults to it.
                y = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=req["new_tokens"],
                                   do_sample=False, eos_token_id=None, pad_token_id=prompt[0])
                out["generated"].append(y[0, len(prompt):].tolist())
            if len(req["generate"]) > 1:
                # The same prompts as one batch, left-padded (mask 0), as a
                # batched generate() sees them.
                n = max(len(p) for p in req["generate"])
                x = torch.tensor([[req["generate"][0][0]] * (n - len(p)) + p for p in req["generate"]])
                mask = torch.tensor([[0] * (n - len(p)) + [1] * len(p) for p in req["generate"]])
                y = model.generate(x, attention_mask=mask, max_new_tokens=req["new_tokens"], do_sample=False,
                                   eos_token_id=None, pad_token_id=req["generate"][0][0])
                out["generated_batched"] = y[:, n:].tolist()
        if req.get("mtp"):
            T = req["mtp_positions"]
            out["mtp_loss"] = []
            for seq in req["mtp"]:
                x = torch.tensor([seq], dtype=torch.long)
                mtp = model(input_ids=x, return_mtp_logits=True, use_cache=False).mtp_logits
                ces = [F.cross_entropy(m[0, :T].double(), x[0, k + 1:k + 1 + T]) for k, m in enumerate(mtp, 1)]
                out["mtp_loss"].append(float(sum(ces) / len(ces)))
    if req.get("texts"):
        tok = AutoTokenizer.from_pretrained(args.model)
        out["tokenizer"] = type(tok).__name__
        out["text_ids"] = [tok(t)["input_ids"] for t in req["texts"]]
    return out


def cmd_logits(args):
    json.dump(logits_result(args), open(args.out, "w"))


TASK_YAML = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: multiple_choice
doc_to_text: context
doc_to_choice: choices
doc_to_target: answer
target_delimiter: ""
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
"""


def lmeval_result(args):
    import lm_eval
    from lm_eval.tasks import TaskManager

    name = "moetrain_" + os.path.splitext(os.path.basename(args.tasks))[0].replace("-", "_")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, name + ".yaml"), "w") as f:
            f.write(TASK_YAML.format(name=name, path=os.path.abspath(args.tasks)))
        tm = TaskManager(include_path=d)
        # The sequence starts with the end-of-document id, as in moetrain eval
        # (add_bos_token).
        res = lm_eval.simple_evaluate(
            model="hf",
            model_args=f"pretrained={args.model},dtype=float32,device=cpu,add_bos_token=True"
            + (",trust_remote_code=True" if is_custom_code(args.model) else ""),
            tasks=[name],
            task_manager=tm,
            batch_size=1,
            log_samples=True,
        )
    r = res["results"][name]
    docs = []
    for s in sorted(res["samples"][name], key=lambda s: s["doc_id"]):
        docs.append([float(x[0]) for x in s["filtered_resps"]])
    out = {
        "task": name,
        "lm_eval_version": getattr(lm_eval, "__version__", "?"),
        "acc": r["acc,none"],
        "acc_norm": r["acc_norm,none"],
        "docs": len(docs),
        "logprobs": docs,
    }
    return out


def cmd_lmeval(args):
    json.dump(lmeval_result(args), open(args.out, "w"))


def cmd_both(args):
    out = logits_result(args)
    out["lmeval"] = lmeval_result(args)
    json.dump(out, open(args.out, "w"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("logits")
    a.add_argument("--model", required=True)
    a.add_argument("--ids", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    b = sub.add_parser("lmeval")
    b.add_argument("--model", required=True)
    b.add_argument("--tasks", required=True)
    b.add_argument("--out", required=True)
    c = sub.add_parser("both")
    c.add_argument("--model", required=True)
    c.add_argument("--ids", required=True)
    c.add_argument("--tasks", required=True)
    c.add_argument("--out", required=True)
    args = p.parse_args()
    {"logits": cmd_logits, "lmeval": cmd_lmeval, "both": cmd_both}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
