#!/usr/bin/env python3
"""Exports the small models of this directory from PyTorch.

usage: make-models.py [OUTDIR]    (default: this directory)

Needs torch, torchvision and transformers (pip install torch torchvision
transformers onnx onnxscript); the suite itself needs none of them, it reads
the committed .onnx files. The models were made with PyTorch 2.11.0,
torchvision 0.26.0 and transformers 5.24.0, with random initialisation
(seed 0), at tiny sizes so that the files stay small, exported as
docs/Importing.md says: opset 17, training mode, no constant folding, the
batch dimension symbolic, the TorchScript exporter (dynamo=False).

  bert.onnx        BertForSequenceClassification, 3 labels
  distilbert.onnx  DistilBertForSequenceClassification, 3 labels
  gpt2.onnx        GPT2LMHeadModel (logits [B, T, V])
  gpt2_loss.onnx   the same with its own loss (labels [B, T], -100 ignored:
                   SoftmaxCrossEntropyLoss with ignore_index), T symbolic
  roberta.onnx     RobertaForSequenceClassification, 3 labels: position
                   ids from the padding (CumSum), T symbolic
  efficientnet_b0.onnx     torchvision EfficientNet-B0, its first four
                           feature blocks and a classifier: SiLU,
                           squeeze-excitation, stochastic depth
                           (RandomUniformLike)
  llama.onnx       LlamaForCausalLM: RMSNorm, rotary embeddings, SiLU gate,
                   grouped-query attention (2 heads, 1 key/value head)
  mobilenet_v2.onnx        torchvision MobileNetV2 (width 0.25), its first
                           four feature blocks and a classifier: ReLU6 (Clip)
  mobilenet_v3_small.onnx  torchvision MobileNetV3-Small (width 0.25), its
                           first four feature blocks and a classifier:
                           HardSwish, HardSigmoid, squeeze-excitation

The transformers take input_ids and attention_mask (int64, [B, 16]) and have
their dropout probabilities set to 0, so that onnxruntime, which runs
training-mode Dropout at random, gives comparable outputs
(test/Target/ONNX/onnxruntime.test); dropout itself is tested elsewhere.
"""

import os
import sys
import warnings

import torch
import torchvision
import transformers

warnings.filterwarnings("ignore")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
    os.path.abspath(__file__))
VOCAB, T = 64, 16


class Logits(torch.nn.Module):
    """The model's logits from input_ids and attention_mask."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids,
                          attention_mask=attention_mask).logits


class LanguageModelLoss(torch.nn.Module):
    """The model's own loss from input_ids, attention_mask and labels:
    Hugging Face shifts the labels and averages the cross-entropy over the
    positions whose label is not -100."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, labels):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          labels=labels).loss


def export(name, model, args, inputs, sequence_axis=False, output="logits"):
    model.train()
    axes = {n: {0: "batch", 1: "sequence"} if sequence_axis else {0: "batch"}
            for n in inputs}
    if output == "logits":
        axes[output] = {0: "batch"}
    path = os.path.join(OUT, name + ".onnx")
    torch.onnx.export(model, args, path, opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=inputs,
                      output_names=[output], dynamic_axes=axes,
                      dynamo=False)
    print("%s: %d bytes" % (path, os.path.getsize(path)))


def main():
    torch.manual_seed(0)
    ids = torch.randint(0, VOCAB, (2, T))
    mask = torch.ones(2, T, dtype=torch.long)
    tokens = (ids, mask)
    names = ["input_ids", "attention_mask"]
    tf = transformers
    small = dict(vocab_size=VOCAB, max_position_embeddings=32,
                 attn_implementation="eager")
    bert = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=32, hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0, num_labels=3, **small)
    export("bert", Logits(tf.BertForSequenceClassification(
        tf.BertConfig(**bert))), tokens, names)
    export("distilbert", Logits(tf.DistilBertForSequenceClassification(
        tf.DistilBertConfig(dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                            dropout=0.0, attention_dropout=0.0,
                            seq_classif_dropout=0.0, num_labels=3,
                            **small))), tokens, names)
    gpt2 = tf.GPT2Config(
        n_embd=16, n_layer=2, n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
        bos_token_id=0, eos_token_id=0,
        attn_pdrop=0.0, vocab_size=VOCAB, n_positions=32,
        attn_implementation="eager")
    export("gpt2", Logits(tf.GPT2LMHeadModel(gpt2)), tokens, names)
    export("llama", Logits(tf.LlamaForCausalLM(tf.LlamaConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, **small))), tokens,
        names)
    x = torch.randn(2, 3, 32, 32)
    for name, make in (("mobilenet_v2", torchvision.models.mobilenet_v2),
                       ("mobilenet_v3_small",
                        torchvision.models.mobilenet_v3_small)):
        full = make(width_mult=0.25)
        features = full.features[:4]
        channels = features(x).shape[1]
        model = torch.nn.Sequential(features, torch.nn.AdaptiveAvgPool2d(1),
                                    torch.nn.Flatten(),
                                    torch.nn.Linear(channels, 10))
        export(name, model, (x,), ["x"])
    # Made last, so that the models above keep their random weights.
    # The same model computing its own loss, sequence length symbolic.
    export("gpt2_loss", LanguageModelLoss(tf.GPT2LMHeadModel(gpt2)),
           tokens + (ids,), names + ["labels"], sequence_axis=True,
           output="loss")
    # RoBERTa numbers positions from the padding (a CumSum of
    # input_ids != pad_token_id); sequence length symbolic.
    export("roberta", Logits(tf.RobertaForSequenceClassification(
        tf.RobertaConfig(pad_token_id=1, **dict(
            bert, max_position_embeddings=40)))), tokens, names,
        sequence_axis=True)
    # EfficientNet-B0's first blocks: stochastic depth draws a
    # RandomUniformLike each step in training mode.
    full = torchvision.models.efficientnet_b0()
    features = full.features[:4]
    channels = features(x).shape[1]
    model = torch.nn.Sequential(features, torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(),
                                torch.nn.Linear(channels, 10))
    export("efficientnet_b0", model, (x,), ["x"])


if __name__ == "__main__":
    main()
