#!/usr/bin/env python3
"""hf_check.py — what Hugging Face tools compute on a `moetrain export --format hf`
directory, as JSON, for tests/e2e/interop_hf_test.cpp to compare with moetrain.

  hf_check.py logits --model DIR --ids IDS.json --out OUT.json
      IDS.json: {"sequences": [[id, ...], ...], "texts": ["...", ...]}.
      Loads the model with transformers (AutoModelForCausalLM, fp32, eager
      attention, CPU) and writes every position's logits of every sequence,
      plus the ids its tokenizer (AutoTokenizer) gives each text.
  hf_check.py lmeval --model DIR --tasks TASK.jsonl --out OUT.json
      Runs lm-evaluation-harness (model "hf") on a local multiple-choice JSONL
      task in moetrain eval's format ({"context", "choices", "answer"}) and
      writes acc, acc_norm and each document's per-choice log-likelihoods.

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


def cmd_logits(args):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model, info = AutoModelForCausalLM.from_pretrained(
        args.model, dtype=torch.float32, attn_implementation="eager", output_loading_info=True
    )
    model.eval()
    req = json.load(open(args.ids))
    out = {"architecture": type(model).__name__, "logits": [], "text_ids": []}
    for k in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        out[k] = sorted(str(x) for x in info.get(k, []))
    with torch.no_grad():
        for seq in req.get("sequences", []):
            x = torch.tensor([seq], dtype=torch.long)
            logits = model(input_ids=x).logits[0]
            out["logits"].append(logits.tolist())
    if req.get("texts"):
        tok = AutoTokenizer.from_pretrained(args.model)
        out["tokenizer"] = type(tok).__name__
        out["text_ids"] = [tok(t)["input_ids"] for t in req["texts"]]
    json.dump(out, open(args.out, "w"))


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


def cmd_lmeval(args):
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
            model_args=f"pretrained={args.model},dtype=float32,device=cpu,add_bos_token=True",
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
    json.dump(out, open(args.out, "w"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("logits")
    a.add_argument("--model", required=True)
    a.add_argument("--ids", required=True)
    a.add_argument("--out", required=True)
    b = sub.add_parser("lmeval")
    b.add_argument("--model", required=True)
    b.add_argument("--tasks", required=True)
    b.add_argument("--out", required=True)
    args = p.parse_args()
    {"logits": cmd_logits, "lmeval": cmd_lmeval}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
