#!/usr/bin/env python3
"""The part of a mixture search's search.json the docs quote (docs/mix.md,
checked by tests/golden/docs_examples_test.cpp): regressors, choice, noise,
verification, transfer, the buckets and every proxy's target.

    scripts/mix_search_record.py RUN_DIR OUT.json
"""
import json
import sys

KEYS = ("regressors", "regressor", "best", "natural_predicted", "verify", "buckets", "noise", "gain", "choice",
        "sampling", "transfer")


def main(run, out):
    with open(run + "/search.json") as f:
        s = json.load(f)
    keep = {k: s[k] for k in KEYS if k in s}
    keep["proxy_targets"] = [p["target"] for p in s["proxies"]]
    with open(out, "w") as f:
        json.dump(keep, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
