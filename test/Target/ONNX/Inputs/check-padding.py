"""A padded batch gives the loss of its sequences run unpadded.

usage: check-padding.py <mp-runner> <model.onnx> <classes|lm> <workdir>

Two sequences of lengths 12 and 8 (fresh random tokens each run) are run
alone, unpadded, at their own lengths, and together as one batch of length
12: the short one padded on the right with the pad token (1) and
attention_mask 0. The model's sequence length must be symbolic. (Left
padding is a different input for both models: RoBERTa's classifier reads
position 0, and GPT-2 numbers positions from 0 whatever the mask.)

- `classes` (RoBERTa sequence classification, label per sequence): the
  padded batch's loss is the mean of the two sequences' losses.
- `lm` (a causal language model computing its own loss from `labels`, as
  Hugging Face's do: shifted labels, -100 ignored): padding is labelled
  -100, and the padded batch's loss is the mean over all 11 + 7 predicted
  tokens, i.e. the two losses weighted by their token counts.

Each loss is the first step's (before any update), in FP32, read from
mp-runner's JSON log. Different batch shapes change the order of the f32
reductions, so the losses agree to a few hundred f32 roundoffs (u = 6e-8),
not bit for bit: the tolerance is 2e-5 relative.
"""

import importlib.util
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "write_tokens", os.path.join(HERE, "write-tokens.py"))
write_tokens = importlib.util.module_from_spec(spec)
spec.loader.exec_module(write_tokens)
write = write_tokens.write

PAD, IGNORED, VOCAB, RTOL = 1, -100, 64, 2e-5


def run(runner, model, work, name, ids, mask, labels, lm):
    rows, length = len(ids), len(ids[0])
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    flat = lambda rows_: [v for r in rows_ for v in r]
    write(d + "/ids.npy", "q", [rows, length], flat(ids))
    write(d + "/mask.npy", "q", [rows, length], flat(mask))
    if lm:
        write(d + "/labels.npy", "q", [rows, length], flat(labels))
    else:
        write(d + "/labels.npy", "i", [rows], labels)
    cmd = [runner, model, "--batch-size", str(rows), "--steps", "1",
           "--eval-samples", "0", "--backend=cpu", "--amp=off",
           "--no-progress", "--log", d + "/log.jsonl"]
    for arg in ("input_ids", "attention_mask", "labels"):
        if lm or arg != "labels":
            cmd += ["--input-shape", "%s=%dx%d" % (arg, rows, length)]
    cmd += ["--data", "input_ids=%s/ids.npy" % d,
            "--data", "attention_mask=%s/mask.npy" % d,
            "--data", "labels=%s/labels.npy" % d]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(d + "/log.jsonl") as f:
        return json.loads(f.readline())["loss"]


def main():
    runner, model, kind, work = sys.argv[1:5]
    lm = kind == "lm"
    seed = random.SystemRandom().randrange(1 << 30)
    print("seed", seed)
    rng = random.Random(seed)
    # Real tokens avoid the pad id.
    token = lambda: rng.choice([t for t in range(VOCAB) if t != PAD])
    long_ = [token() for _ in range(12)]
    short = [token() for _ in range(8)]
    classes = [rng.randrange(3), rng.randrange(3)]
    label = lambda seq, i: list(seq) if lm else classes[i]

    alone = [run(runner, model, work, "alone%d" % i, [seq], [[1] * len(seq)],
                 [label(seq, i)] if not lm else [seq], lm)
             for i, seq in enumerate((long_, short))]
    if lm:
        # Predictions: 11 in the long sequence, 7 in the short one.
        expected = (11 * alone[0] + 7 * alone[1]) / 18
    else:
        expected = (alone[0] + alone[1]) / 2

    padded, keep = short + [PAD] * 4, [1] * 8 + [0] * 4
    labels = ([long_, [t if k else IGNORED for t, k in zip(padded, keep)]]
              if lm else classes)
    loss = run(runner, model, work, "padded", [long_, padded],
               [[1] * 12, keep], labels, lm)
    err = abs(loss - expected) / abs(expected)
    good = err <= RTOL
    print("%s: padded batch: loss %.9g, unpadded sequences %.9g, relative "
          "difference %.2e (tolerance %.0e)" %
          ("ok" if good else "FAIL", loss, expected, err, RTOL))
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
