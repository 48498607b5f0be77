"""Reads a run's TensorBoard event files with the tensorboard package's own
readers and prints what they hold, as JSON, for tests/e2e/interop_tensorboard_test.cpp:

  {"scalars": {tag: [[step, value], ...]},     # EventAccumulator, as TensorBoard's UI reads
   "raw": {tag: [step, ...]},                  # every event in every file, in order (duplicates kept)
   "files": [name, ...], "file_version": str}

Usage: tensorboard_check.py LOGDIR
"""
import json
import os
import sys

from tensorboard.backend.event_processing import event_accumulator, event_file_loader


def main():
    logdir = sys.argv[1]
    files = sorted(f for f in os.listdir(logdir) if "tfevents" in f)
    raw, version = {}, ""
    for name in files:
        for event in event_file_loader.LegacyEventFileLoader(os.path.join(logdir, name)).Load():
            if event.HasField("file_version"):
                version = event.file_version
            for v in event.summary.value:
                if v.HasField("simple_value"):
                    raw.setdefault(v.tag, []).append(event.step)
    acc = event_accumulator.EventAccumulator(logdir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    scalars = {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    json.dump({"scalars": scalars, "raw": raw, "files": files, "file_version": version}, sys.stdout)


if __name__ == "__main__":
    main()
