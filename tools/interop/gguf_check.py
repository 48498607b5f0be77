#!/usr/bin/env python3
"""gguf_check.py — what llama.cpp (the llama-cpp-python package) computes on a
`moetrain export --format gguf` file, as JSON, for tests/e2e/interop_gguf_test.cpp
to compare with moetrain.

  gguf_check.py --model FILE.gguf --ids IDS.json --out OUT.json
      IDS.json: {"sequences": [[id, ...], ...], "texts": ["...", ...],
                 "generate": [[id, ...], ...], "new_tokens": N}.
      Writes "logits": every position's logits of every sequence (evaluated
      from an empty cache), "text_ids": llama.cpp's tokenization of each text
      (with BOS), and "generated": N greedy tokens after each prompt, decoded
      one at a time through llama.cpp's KV cache (no stop at EOS).
"""
import argparse
import json
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()

    import numpy as np
    from llama_cpp import Llama

    req = json.load(open(args.ids))
    longest = max([len(s) for s in req.get("sequences", [])] +
                  [len(s) + req.get("new_tokens", 0) for s in req.get("generate", [])] + [16])
    # An f32 KV cache (llama.cpp's default is f16, which rounds every key and
    # value), so an f32 file computes in f32 throughout.
    llm = Llama(model_path=args.model, n_ctx=longest + 8, n_batch=longest + 8, logits_all=True, verbose=False,
                n_threads=int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)), seed=0, type_k=0, type_v=0)
    out = {"n_vocab": llm.n_vocab(), "logits": [], "text_ids": [], "generated": []}
    for seq in req.get("sequences", []):
        llm.reset()
        llm.eval(seq)
        out["logits"].append(np.asarray(llm.scores[:len(seq)], dtype=np.float64).tolist())
    for text in req.get("texts", []):
        out["text_ids"].append(llm.tokenize(text.encode("utf-8"), add_bos=True, special=False))
    for prompt in req.get("generate", []):
        llm.reset()
        llm.eval(prompt)
        gen = []
        for _ in range(req["new_tokens"]):
            tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            gen.append(tok)
            llm.eval([tok])
        out["generated"].append(gen)
    json.dump(out, open(args.out, "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
