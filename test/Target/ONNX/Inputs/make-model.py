"""Builds the ONNX models of the importer's tests with onnx.helper.

usage: make-model.py <kind> <output.onnx> [--batch N] [--seed S]

kinds:
  keras-mlp    the Keras mixed-precision guide's MLP as tf2onnx exports it
               (MatMul + Add per Dense layer, 784 -> 128 relu -> 10 logits),
               with a symbolic batch dimension
  transformer  one pre-LN transformer block as PyTorch exports it: the
               LayerNorms and the GELU decomposed (ReduceMean/Sub/Pow/Sqrt/
               Div, x * 0.5 * (1 + Erf(x / sqrt 2))), two-head attention with
               Reshape/Transpose/Softmax, mean pooling and a Gemm head
  gemm-mlp     a small MLP of Gemm nodes with a symbolic batch (PyTorch's
               nn.Linear export), for gradient checks
  cnn          a small ResNet-style CNN as torch.onnx exports it in training
               mode: Conv (bias, padding, stride), BatchNormalization
               (training_mode=1, running statistics in the initializers),
               Relu, MaxPool, a residual Add, AveragePool,
               GlobalAveragePool, Flatten and Gemm; --eval keeps the batch
               norms in inference mode (what onnxruntime runs)
  runtime-ops  attention written with Einsum, Pad in edge and reflect mode,
               Sin/Cos of runtime angles, CumSum and a float Mod
  unknown-op   a model with a node of an op type mp does not import
  external     a model whose weight lives in an external-data file
               (--location, weights.bin by default; --length, 72 by
               default, the weight's 6x3 f32; --dims, 6x3)
  huge-initializer  an initializer whose shape claims 2^40 values and whose
               data holds one
  duplicate-output  a graph that lists its output twice
  duplicate-value   two nodes that both define the value 'y'
  newer-opset  a Relu model that declares opset 21 and IR version 10
  bad-graph    a node that reads a value nothing defines
  bad-node     one node with bad attributes (--variant: Conv groups that do
               not divide the channels, a dilated kernel larger than the
               padded image, two pads for a 2-d window, a MaxPool stride
               of 0, a ConvTranspose of a rank-2 input; Dropout's mask
               output used, a ratio of 1)
  dropout-mlp  an MLP with Dropout in training mode after each hidden layer
  cyclic       two nodes that read each other's output (--variant self: one
               node that reads its own)
  attribute-type  a node whose attribute has the wrong type (--variant:
               Gemm's transB a string, Softmax's axis a float, Conv's
               strides an int instead of ints, Transpose's perm a tensor)
  unknown-domain  a node of a domain the model does not import (and no
               importer knows), with its opset declared
  opset        a Relu model that declares --opset (7 by default; "none":
               no opset import at all)

Weights are random (normal, scaled by 1/sqrt(fan-in)), from --seed.
"""

import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Graph:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def weight(self, name, shape, scale=None):
        if scale is None:
            scale = 1.0 / np.sqrt(shape[0])
        value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def const(self, name, value, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.array(value, dtype), name))
        return name

    def node(self, op, inputs, name, outputs=None, **attrs):
        outputs = outputs or [name + "_out"]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name,
                                           **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def model(self, inputs, outputs, opset=17, ir=8):
        graph = helper.make_graph(self.nodes, "g", inputs, outputs, self.inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)],
            producer_name="mp-tests")
        model.ir_version = ir
        return model


def keras_mlp(g, batch, hidden=128):
    x = helper.make_tensor_value_info("input_1", TensorProto.FLOAT,
                                      [batch, 784])
    h = g.node("MatMul", ["input_1", g.weight("dense_1/kernel", [784, hidden])],
               "dense_1/MatMul")
    h = g.node("Add", [h, g.const("dense_1/bias", np.zeros(hidden))],
               "dense_1/BiasAdd")
    h = g.node("Relu", [h], "dense_1/Relu")
    y = g.node("MatMul", [h, g.weight("dense_logits/kernel", [hidden, 10])],
               "dense_logits/MatMul")
    g.node("Add", [y, g.const("dense_logits/bias", np.zeros(10))],
           "dense_logits/BiasAdd", outputs=["logits"])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                        [batch, 10])
    return g.model([x], [out])


def dropout_mlp(g, batch):
    """Two hidden layers, each followed by Dropout in training mode (what
    torch.onnx.export(..., training=TrainingMode.TRAINING) writes)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 784])
    h = "x"
    for k, (din, dout) in enumerate([(784, 256), (256, 256)]):
        h = linear(g, h, f"fc{k + 1}", din, dout)
        h = g.node("Relu", [h], f"fc{k + 1}/Relu")
        h = g.node("Dropout", [h, g.const(f"drop{k + 1}/ratio", 0.2),
                               g.const(f"drop{k + 1}/training", True,
                                       np.bool_)], f"drop{k + 1}")
    y = linear(g, h, "head", 256, 10)
    g.node("Identity", [y], "logits", outputs=["logits"])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                        [batch, 10])
    return g.model([x], [out])


def layer_norm(g, x, name, d):
    """The decomposed LayerNorm PyTorch's exporter emits before opset 17."""
    mean = g.node("ReduceMean", [x], name + "/ReduceMean", axes=[-1])
    centered = g.node("Sub", [x, mean], name + "/Sub")
    sq = g.node("Pow", [centered, g.const(name + "/two", 2.0)], name + "/Pow")
    var = g.node("ReduceMean", [sq], name + "/ReduceMean_1", axes=[-1])
    var = g.node("Add", [var, g.const(name + "/eps", 1e-5)], name + "/Add")
    std = g.node("Sqrt", [var], name + "/Sqrt")
    normed = g.node("Div", [centered, std], name + "/Div")
    scaled = g.node("Mul", [normed, g.weight(name + ".weight", [d], 0.1)],
                    name + "/Mul")
    # LayerNorm weights start near 1.
    g.inits[-1] = numpy_helper.from_array(
        (1 + numpy_helper.to_array(g.inits[-1])).astype(np.float32),
        name + ".weight")
    return g.node("Add", [scaled, g.weight(name + ".bias", [d], 0.1)],
                  name + "/Add_1")


def linear(g, x, name, fan_in, fan_out):
    y = g.node("MatMul", [x, g.weight(name + ".weight", [fan_in, fan_out])],
               name + "/MatMul")
    return g.node("Add", [y, g.weight(name + ".bias", [fan_out], 0.1)],
                  name + "/Add")


def transformer(g, batch):
    t, d, heads, ffn, classes = 8, 32, 2, 64, 10
    dh = d // heads
    x = helper.make_tensor_value_info("tokens", TensorProto.FLOAT,
                                      [batch, t, d])
    h = layer_norm(g, "tokens", "block.ln1", d)
    q = linear(g, h, "block.attn.q", d, d)
    k = linear(g, h, "block.attn.k", d, d)
    v = linear(g, h, "block.attn.v", d, d)
    shape = g.const("block.attn.heads_shape", [0, 0, heads, dh], np.int64)

    def split_heads(y, name, perm):
        y = g.node("Reshape", [y, shape], name + "/Reshape")
        return g.node("Transpose", [y], name + "/Transpose", perm=perm)

    q = split_heads(q, "block.attn.q", [0, 2, 1, 3])
    k = split_heads(k, "block.attn.k", [0, 2, 3, 1])
    v = split_heads(v, "block.attn.v", [0, 2, 1, 3])
    s = g.node("MatMul", [q, k], "block.attn/MatMul")
    s = g.node("Div", [s, g.const("block.attn/scale", np.sqrt(dh))],
               "block.attn/Div")
    p = g.node("Softmax", [s], "block.attn/Softmax", axis=-1)
    a = g.node("MatMul", [p, v], "block.attn/MatMul_1")
    a = g.node("Transpose", [a], "block.attn/Transpose", perm=[0, 2, 1, 3])
    a = g.node("Reshape",
               [a, g.const("block.attn.merge_shape", [0, 0, d], np.int64)],
               "block.attn/Reshape")
    a = linear(g, a, "block.attn.out", d, d)
    r = g.node("Add", ["tokens", a], "block/Add")
    h = layer_norm(g, r, "block.ln2", d)
    h = linear(g, h, "block.mlp.fc1", d, ffn)
    # GELU as torch.onnx exports nn.GELU() before opset 20.
    e = g.node("Div", [h, g.const("block.mlp.gelu/sqrt2", np.sqrt(2.0))],
               "block.mlp.gelu/Div")
    e = g.node("Erf", [e], "block.mlp.gelu/Erf")
    e = g.node("Add", [e, g.const("block.mlp.gelu/one", 1.0)],
               "block.mlp.gelu/Add")
    e = g.node("Mul", [h, e], "block.mlp.gelu/Mul")
    h = g.node("Mul", [e, g.const("block.mlp.gelu/half", 0.5)],
               "block.mlp.gelu/Mul_1")
    h = linear(g, h, "block.mlp.fc2", ffn, d)
    r = g.node("Add", [r, h], "block/Add_1")
    pooled = g.node("ReduceMean", [r], "pool/ReduceMean", axes=[1],
                    keepdims=0)
    g.node("Gemm", [pooled, g.weight("head.weight", [classes, d]),
                    g.weight("head.bias", [classes], 0.1)],
           "head/Gemm", outputs=["logits"], transB=1)
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                        [batch, classes])
    return g.model([x], [out], opset=13)


def runtime_ops(g, batch):
    """Attention written with Einsum (heads batched, an ellipsis, an implicit
    output), a sequence padded in edge and reflect mode, a rotary-style
    Sin/Cos of runtime angles, a CumSum over positions and a float Mod."""
    t, d, heads, classes = 6, 8, 2, 3
    dh = d // heads
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, t, d])
    edge = g.node("Pad", ["x", g.const("pads.edge", [0, 1, 0, 0, 0, 0],
                                        np.int64)], "pad/edge", mode="edge")
    h = g.node("Pad", [edge, g.const("pads.reflect", [0, 0, 0, 0, 2, 0],
                                     np.int64)], "pad/reflect",
               mode="reflect")  # [B, t + 3, d]
    n = t + 3
    angle = g.node("Einsum", [h, g.weight("rot.weight", [d, d])],
                   "rot/angle", equation="btd,de->bte")
    h = g.node("Add", [g.node("Mul", [h, g.node("Cos", [angle], "rot/cos")],
                              "rot/mul_cos"),
                       g.node("Sin", [angle], "rot/sin")], "rot/add")
    h = g.node("CumSum", [h, g.const("cumsum.axis", 1, np.int64)],
               "positions/cumsum")
    h = g.node("Mul", [h, g.const("cumsum.scale", 1.0 / n)], "positions/scale")
    h = g.node("Mod", [h, g.const("mod.divisor", 1.5)], "wrap/mod", fmod=1)
    shape = g.const("heads.shape", [0, n, heads, dh], np.int64)
    q, k, v = [g.node("Reshape", [g.node(
        "Einsum", [h, g.weight("attn.%s.weight" % w, [d, d])],
        "attn/%s" % w, equation="...d,de->...e"), shape], "attn/%s/heads" % w)
        for w in "qkv"]
    scores = g.node("Einsum", [q, k], "attn/scores",
                    equation="bqhd,bkhd->bhqk")
    probs = g.node("Softmax", [scores], "attn/softmax", axis=-1)
    ctx = g.node("Einsum", [probs, v], "attn/context",
                 equation="bhqk,bkhd->bqhd")
    pooled = g.node("Einsum", [ctx], "pool/sum", equation="bqhd->bhd")
    flat = g.node("Reshape", [pooled, g.const("pool.shape", [0, d],
                                              np.int64)], "pool/flat")
    # Implicit output: "bd,dc" sums d, keeps b and c in alphabetical order.
    g.node("Einsum", [flat, g.weight("out.weight", [d, classes])],
           "out/einsum", outputs=["logits"], equation="bd,dc")
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                        [batch, classes])
    return g.model([x], [out])


def gemm_mlp(g, batch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 12])
    h = g.node("Gemm", ["x", g.weight("fc1.weight", [16, 12]),
                        g.weight("fc1.bias", [16], 0.1)],
               "fc1/Gemm", transB=1)
    h = g.node("Tanh", [h], "fc1/Tanh")
    h = g.node("Gemm", [h, g.weight("fc2.weight", [16, 8]),
                        g.weight("fc2.bias", [8], 0.1)], "fc2/Gemm")
    h = g.node("Sigmoid", [h], "fc2/Sigmoid")
    g.node("Gemm", [h, g.weight("out.weight", [8, 5]),
                    g.weight("out.bias", [5], 0.1)],
           "out/Gemm", outputs=["logits"])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                        [batch, 5])
    return g.model([x], [out])


def cnn(g, batch, training=True):
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                      [batch, 3, 12, 12])

    def conv(name, inp, cin, cout, k, stride=1, pad=0):
        w = g.weight(name + ".weight", [cout, cin, k, k],
                     1.0 / np.sqrt(cin * k * k))
        b = g.weight(name + ".bias", [cout], 0.1)
        return g.node("Conv", [inp, w, b], "/" + name + "/Conv",
                      kernel_shape=[k, k], strides=[stride, stride],
                      pads=[pad, pad, pad, pad])

    def bn(name, inp, c):
        scale = g.const(name + ".weight", np.ones(c))
        bias = g.const(name + ".bias", np.zeros(c))
        mean = g.const(name + ".running_mean",
                       0.1 * g.rng.standard_normal(c))
        var = g.const(name + ".running_var",
                      1 + 0.1 * g.rng.random(c))
        node = "/" + name + "/BatchNormalization"
        if training:
            return g.node("BatchNormalization", [inp, scale, bias, mean, var],
                          node, outputs=[node + "_out", node + "_mean",
                                         node + "_var"],
                          epsilon=1e-5, momentum=0.9, training_mode=1)[0]
        return g.node("BatchNormalization", [inp, scale, bias, mean, var],
                      node, epsilon=1e-5)

    h = conv("conv1", "input", 3, 8, 3, 1, 1)
    h = g.node("Relu", [bn("bn1", h, 8)], "/relu1/Relu")
    h = g.node("MaxPool", [h], "/pool1/MaxPool", kernel_shape=[2, 2],
               strides=[2, 2])
    r = conv("block.conv1", h, 8, 8, 3, 1, 1)
    r = g.node("Relu", [bn("block.bn1", r, 8)], "/block/relu1/Relu")
    r = conv("block.conv2", r, 8, 8, 3, 1, 1)
    r = bn("block.bn2", r, 8)
    h = g.node("Add", [h, r], "/block/Add")
    h = g.node("Relu", [h], "/block/relu2/Relu")
    h = g.node("AveragePool", [h], "/pool2/AveragePool", kernel_shape=[3, 3],
               strides=[1, 1], pads=[1, 1, 1, 1])
    h = g.node("GlobalAveragePool", [h], "/gap/GlobalAveragePool")
    h = g.node("Flatten", [h], "/flatten/Flatten", axis=1)
    g.node("Gemm", [h, g.weight("fc.weight", [10, 8]),
                    g.weight("fc.bias", [10], 0.1)],
           "/fc/Gemm", outputs=["logits"], transB=1)
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                        [batch, 10])
    return g.model([x], [out], opset=15)


def unknown_op(g, batch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    h = g.node("Relu", ["x"], "first")
    g.node("Celu", [h], "mystery/celu", outputs=["y"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    return g.model([x], [out])


def external(g, batch, location="weights.bin", length=6 * 3 * 4,
             dims=(6, 3)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    w = TensorProto()
    w.name, w.data_type = "w", TensorProto.FLOAT
    w.dims.extend(dims)
    w.data_location = TensorProto.EXTERNAL
    for key, value in [("location", location), ("offset", "0"),
                       ("length", str(length))]:
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    g.inits.append(w)
    g.node("MatMul", ["x", "w"], "proj", outputs=["y"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])
    return g.model([x], [out])


def huge_initializer(g, batch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    w = TensorProto()
    w.name, w.data_type = "w", TensorProto.FLOAT
    w.dims.extend([1 << 20, 1 << 20])
    w.float_data.append(0.5)
    g.inits.append(w)
    g.node("Add", ["x", "w"], "add", outputs=["y"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    return g.model([x], [out])


def duplicate_output(g, batch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    g.node("Relu", ["x"], "act", outputs=["y"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    return g.model([x], [out, out])


def duplicate_value(g, batch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    g.node("Relu", ["x"], "first", outputs=["y"])
    g.node("Sigmoid", ["x"], "second", outputs=["y"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    return g.model([x], [out])


def newer_opset(g, batch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    g.node("Relu", ["x"], "act", outputs=["y"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    return g.model([x], [out], opset=21, ir=10)


def bad_node(g, batch, variant):
    """One node with bad attributes or inputs, on a [2, 4, 8, 8] image."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 8, 8])
    w = g.weight("w", [6, 4, 3, 3])
    conv = {"groups": dict(group=3),
            "dilation": dict(dilations=[5, 5]),
            "pads": dict(pads=[1, 1])}
    if variant in conv:
        g.node("Conv", ["x", w], "bad/conv", outputs=["y"], **conv[variant])
    elif variant == "dropout-mask":
        g.node("Dropout", ["x", g.const("r", 0.5), g.const("t", True, np.bool_)],
               "bad/dropout", outputs=["y", "mask"])
    elif variant == "zero-stride":
        g.node("MaxPool", ["x"], "bad/pool", outputs=["y"],
               kernel_shape=[3, 3], strides=[0, 1])
    elif variant == "deconv-rank2":
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
        g.node("ConvTranspose", ["x", g.weight("wt", [1, 2, 3])], "bad/deconv",
               outputs=["y"])
    elif variant == "dropout-ratio":
        g.node("Dropout", ["x", g.const("r", 1.0), g.const("t", True, np.bool_)],
               "bad/dropout", outputs=["y"])
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if variant == "dropout-mask":
        outputs.append(helper.make_tensor_value_info("mask", TensorProto.BOOL,
                                                     None))
    return g.model([x], outputs)


def bad_graph(g, batch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    g.node("Add", ["x", "nowhere"], "broken/add", outputs=["y"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    return g.model([x], [out])


def cyclic(g, batch, variant=None):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    if variant == "self":
        g.node("Add", ["x", "y"], "loop/add", outputs=["y"])
    else:
        g.node("Add", ["x", "z"], "cycle/add", outputs=["y"])
        g.node("Relu", ["y"], "cycle/relu", outputs=["z"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    return g.model([x], [out])


def attribute_type(g, batch, variant):
    """A node whose attribute has the wrong type; built by hand, as
    onnx.helper infers the type from the value."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    if variant == "gemm-string":
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
        w = g.weight("w", [5, 6])
        g.node("Gemm", ["x", w], "bad/gemm", outputs=["y"], transB="yes")
    elif variant == "softmax-float":
        g.node("Softmax", ["x"], "bad/softmax", outputs=["y"], axis=1.5)
    elif variant == "conv-int":
        w = g.weight("w", [6, 4, 3, 3])
        g.node("Conv", ["x", w], "bad/conv", outputs=["y"], strides=2)
    elif variant == "transpose-tensor":
        g.node("Transpose", ["x"], "bad/transpose", outputs=["y"],
               perm=numpy_helper.from_array(np.array([0, 1, 3, 2]), "perm"))
    return g.model([x], [y])


def unknown_domain(g, batch):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    node = helper.make_node("FusedGelu", ["x"], ["y"], name="vendor/gelu",
                            domain="com.example.vendor")
    g.nodes.append(node)
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    model = g.model([x], [out])
    model.opset_import.append(helper.make_opsetid("com.example.vendor", 3))
    return model


def opset(g, batch, version="7"):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    g.node("Relu", ["x"], "act", outputs=["y"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    if version == "none":
        model = g.model([x], [out])
        del model.opset_import[:]
        return model
    return g.model([x], [out], opset=int(version), ir=3)


KINDS = {
    "keras-mlp": keras_mlp,
    "transformer": transformer,
    "gemm-mlp": gemm_mlp,
    "runtime-ops": runtime_ops,
    "cnn": cnn,
    "unknown-op": unknown_op,
    "external": external,
    "huge-initializer": huge_initializer,
    "duplicate-output": duplicate_output,
    "duplicate-value": duplicate_value,
    "newer-opset": newer_opset,
    "bad-graph": bad_graph,
    "dropout-mlp": dropout_mlp,
    "bad-node": bad_node,
    "cyclic": cyclic,
    "attribute-type": attribute_type,
    "unknown-domain": unknown_domain,
    "opset": opset,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("output")
    parser.add_argument("--batch", default="N",
                        help="the batch dimension: a number or a symbol")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval", action="store_true",
                        help="cnn: batch norms in inference mode")
    parser.add_argument("--hidden", type=int, default=128,
                        help="keras-mlp: the hidden layer's width")
    parser.add_argument("--variant", default=None,
                        choices=["groups", "dilation", "pads", "dropout-mask",
                                 "dropout-ratio", "zero-stride",
                                 "deconv-rank2", "self",
                                 "gemm-string",
                                 "softmax-float", "conv-int",
                                 "transpose-tensor"],
                        help="bad-node, cyclic, attribute-type: which")
    parser.add_argument("--opset", default="7",
                        help="opset: the version declared, or none")
    parser.add_argument("--location", default="weights.bin",
                        help="external: the external data's location")
    parser.add_argument("--length", type=int, default=6 * 3 * 4,
                        help="external: the external data's length")
    parser.add_argument("--dims", default="6x3",
                        help="external: the weight's shape")
    args = parser.parse_args()
    batch = int(args.batch) if args.batch.isdigit() else args.batch
    extra = {"hidden": args.hidden} if args.kind == "keras-mlp" else {}
    if args.kind == "cnn":
        extra = {"training": not args.eval}
    if args.kind == "bad-node":
        extra = {"variant": args.variant or "groups"}
    if args.kind == "cyclic":
        extra = {"variant": args.variant}
    if args.kind == "opset":
        extra = {"version": args.opset}
    if args.kind == "attribute-type":
        extra = {"variant": args.variant or "gemm-string"}
    if args.kind == "external":
        extra = {"location": args.location, "length": args.length,
                 "dims": [int(d) for d in args.dims.split("x")]}
    model = KINDS[args.kind](Graph(args.seed), batch, **extra)
    with open(args.output, "wb") as f:
        f.write(model.SerializeToString())


if __name__ == "__main__":
    sys.exit(main())
