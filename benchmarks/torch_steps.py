"""PyTorch's side of benchmarks/torch_cpu_steps.py; runs in the Python that
has torch, torchvision and transformers.

usage: torch_steps.py export MODEL OUT.onnx [sizes]
       torch_steps.py time MODEL {fp32,bf16} [--steps N] [--stream] [sizes]

MODEL is bert (sequence classification, 3 labels), gpt2 (language model
head), resnet50 (torchvision, 10 classes, --image square images) or vit
(torchvision's VisionTransformer, patch 8, --hidden/--layers/--heads, 10
classes). `export` writes the model as docs/Importing.md says (opset 17,
training mode, no constant folding, batch symbolic, eager attention), with
random weights (seed 0). `time` trains the same model in eager mode on the
CPU, all cores: forward, cross-entropy against random labels (one per
sequence, or one per token), backward and an SGD step (lr 0.01, as
mp-runner's default), in fp32 or under torch.autocast("cpu",
torch.bfloat16), and prints one JSON line with the step times (warm-up step
left out); with --stream, also a line "step MS" as each step ends.
"""

import argparse
import json
import os
import statistics
import time
import warnings

# Under mp's AVX2 cap (MP_CPU_ISA=avx2), cap PyTorch the same way before it
# loads: its oneDNN reads DNNL_MAX_CPU_ISA itself, but MKL's GEMMs and
# ATen's vector kernels would otherwise keep AVX-512 on an Intel CPU (on
# AMD CPUs MKL picks AVX2 paths anyway), and mp's AVX2 step would be
# compared with PyTorch's AVX-512 one.
if os.environ.get("MP_CPU_ISA") == "avx2":
    os.environ.setdefault("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")

import torch  # noqa: E402
import torchvision  # noqa: E402
import transformers  # noqa: E402

warnings.filterwarnings("ignore")


VISION = ("resnet50", "vit")


def build(name, a):
    torch.manual_seed(0)
    if name == "resnet50":
        return torchvision.models.resnet50(num_classes=10)
    if name == "vit":
        return torchvision.models.VisionTransformer(
            image_size=a.image, patch_size=8, num_layers=a.layers,
            num_heads=a.heads, hidden_dim=a.hidden, mlp_dim=4 * a.hidden,
            num_classes=10)
    common = dict(vocab_size=a.vocab, attn_implementation="eager")
    if name == "bert":
        cfg = transformers.BertConfig(
            hidden_size=a.hidden, num_hidden_layers=a.layers,
            num_attention_heads=a.heads, intermediate_size=4 * a.hidden,
            max_position_embeddings=a.seq, num_labels=3, **common)
        return transformers.BertForSequenceClassification(cfg)
    cfg = transformers.GPT2Config(
        n_embd=a.hidden, n_layer=a.layers, n_head=a.heads, n_positions=a.seq,
        bos_token_id=0, eos_token_id=0, **common)
    return transformers.GPT2LMHeadModel(cfg)


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids,
                          attention_mask=attention_mask).logits


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["export", "time"])
    p.add_argument("model", choices=["bert", "gpt2"] + list(VISION))
    p.add_argument("arg")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--stream", action="store_true",
                   help="time: also print each step's ms on a line of its "
                        "own as it ends (benchmarks/paired_steps.py)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--image", type=int, default=64)
    a = p.parse_args()
    torch.set_num_threads(os.cpu_count())
    if a.model in VISION:
        return vision(a)
    model = Logits(build(a.model, a))
    model.train()
    ids = torch.randint(0, a.vocab, (a.batch, a.seq))
    mask = torch.ones(a.batch, a.seq, dtype=torch.long)
    if a.what == "export":
        axes = {n: {0: "batch"} for n in ["input_ids", "attention_mask",
                                          "logits"]}
        torch.onnx.export(model, (ids, mask), a.arg, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False,
                          input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], dynamic_axes=axes,
                          dynamo=False)
        return
    per_token = a.model == "gpt2"
    classes = a.vocab if per_token else 3
    labels = torch.randint(0, classes,
                           (a.batch, a.seq) if per_token else (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    time_steps(model, a, lambda: loss_fn(
        model(ids, mask).float().reshape(-1, classes), labels.reshape(-1)))


def time_steps(model, a, loss):
    """Trains `model` for a.steps + 1 SGD steps on `loss()` (under bf16
    autocast when asked) and prints the step times, the first left out."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for _ in range(a.steps + 1):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", torch.bfloat16, enabled=a.arg == "bf16"):
            value = loss()
        value.backward()
        opt.step()
        times.append(1000 * (time.perf_counter() - start))
        if a.stream:
            print("step %.3f" % times[-1], flush=True)
    ms = times[1:]
    print(json.dumps({"min_ms": min(ms), "median_ms": statistics.median(ms),
                      "step_ms": ms, "torch": torch.__version__,
                      "threads": torch.get_num_threads()}))


def vision(a):
    """export and time for the image classifiers: images [batch, 3, image,
    image] in, 10 logits out, one label per image."""
    model = build(a.model, a)
    model.train()
    x = torch.randn(a.batch, 3, a.image, a.image)
    if a.what == "export":
        torch.onnx.export(model, (x,), a.arg, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=["x"],
                          output_names=["logits"],
                          dynamic_axes={"x": {0: "batch"},
                                        "logits": {0: "batch"}},
                          dynamo=False)
        return
    labels = torch.randint(0, 10, (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    time_steps(model, a, lambda: loss_fn(model(x).float(), labels))


if __name__ == "__main__":
    main()
