#!/usr/bin/env python3
"""Emits tg models at any size: forward functions, or hand-written steps.

Three models, the ones in examples/:

  mlp          an MLP classifier: matmul + bias + relu layers and a linear
               head giving the logits.
  transformer  transformer encoder blocks: token and position embeddings,
               pre-norm multi-head self-attention built from matmul and
               softmax, a GELU MLP, residuals and a linear head over the
               vocabulary giving the logits.
  resnet       a ResNet-style CNN: conv + batch norm + relu stem, basic
               residual blocks in two stages (the second downsampling),
               global average pooling and a linear head; forward only.

By default the output is the forward function (`tg.forward`, returning the
logits): `tg-make-train-step` (or mp-runner, which runs it) adds the
softmax cross-entropy loss, the backward pass and the optimizer; examples/
holds both forms. With `--hand-written` it is a whole training step as a
frontend would write it by hand: the loss, the full backward pass and the
update (SGD, plain or with momentum buffers, for the MLP; AdamW for the
transformer), which tests compare the derived backward pass with.

The output follows docs/TrainingStep.md and names every op with its layer
(`loc("block0.attn.q"("transformer.mlir":40:5))`) so that the layer names show
through in diagnostics, the precision report and policy overrides.

`--min-ops N` repeats layers (blocks) until the step has at least N ops, which
is how benchmarks/ builds graphs of 10^3 to 10^6 ops. Output is built as a
list of lines and written once, so a million ops take seconds.
"""

import argparse
import math
import os
import sys


def mlir_float(x):
    """`x` as an MLIR float literal: Python writes 1e-05, MLIR needs 1.0e-05."""
    text = repr(float(x))
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def tensor(shape, dtype="f32"):
    dims = "x".join(str(d) for d in shape)
    return f"tensor<{dims}x{dtype}>" if shape else f"tensor<{dtype}>"


class Step:
    """Accumulates the body of one training-step function."""

    def __init__(self):
        self.lines = []
        self.args = []  # (ssa name, type, attribute text)
        self.results = []  # (ssa value, type, attribute text)
        self.ops = 0

    def arg(self, name, ty, role, label, init=None):
        attrs = f'tg.{role} = "{label}"'
        if init is not None:
            attrs = f"tg.init = dense<{init}> : {ty}, {attrs}"
        self.args.append((name, ty, f"{{{attrs}}}"))
        return f"%{name}"

    def op(self, result, text, loc):
        """Emits `result = text loc(...)`; `result` may list several names.

        The location is the op's name with its place in the output as the
        child (`loc("fc1.matmul"("mlp_step.mlir":21:5))`), so diagnostics
        show both; render() fills in the line."""
        self.lines.append((f"    {result} = {text}", loc))
        self.ops += 1

    def comment(self, text):
        self.lines.append(f"    // {text}")

    def result(self, value, ty, attr):
        self.results.append((value, ty, attr))

    def render(self, name, header, source, forward=False):
        out = [f"// {line}" if line else "//" for line in header]
        out.append("module {")
        args = ",\n      ".join(f"%{n}: {t} {a}" for n, t, a in self.args)
        res = ",\n      ".join(f"{t} {a}" for _, t, a in self.results)
        out.append(f"  func.func @{name}(\n      {args})\n      -> ({res})")
        out.append("      attributes {tg.forward} {" if forward else
                   "      attributes {tg.train_step} {")
        # Signature lines hold several lines each; count what precedes.
        first = sum(part.count("\n") + 1 for part in out) + 1
        for k, line in enumerate(self.lines):
            if isinstance(line, tuple):
                text, loc = line
                line = f'{text} loc("{loc}"("{source}":{first + k}:5))'
            out.append(line)
        values = ", ".join(v for v, _, _ in self.results)
        types = ", ".join(t for _, t, _ in self.results)
        out.append(f"    return {values} : {types}")
        out.append("  }")
        out.append("}")
        return "\n".join(out) + "\n"


def reduce_rows(step, value, shape, dst, loc):
    """Sums `value` over all but its last dimension (a bias gradient)."""
    axes = ", ".join(str(i) for i in range(len(shape) - 1))
    out = tensor(shape[-1:])
    step.op(dst, f"tg.reduce_sum {value} axes = [{axes}] : "
            f"({tensor(shape)}) -> {out}", loc)
    return dst


def weight_grad(step, act, act_shape, grad, grad_shape, dst, loc):
    """dW = act^T @ grad, with every leading dimension flattened into rows."""
    rows = math.prod(act_shape[:-1])
    a2 = [rows, act_shape[-1]]
    g2 = [rows, grad_shape[-1]]
    if len(act_shape) > 2:
        step.op(f"{dst}_a", f"tg.reshape {act} : ({tensor(act_shape)}) -> "
                f"{tensor(a2)}", loc + ".flatten_act")
        step.op(f"{dst}_g", f"tg.reshape {grad} : ({tensor(grad_shape)}) -> "
                f"{tensor(g2)}", loc + ".flatten_grad")
        act, grad = f"{dst}_a", f"{dst}_g"
    w = [a2[1], g2[1]]
    step.op(dst, f"tg.matmul {act}, {grad} transpose_lhs : ({tensor(a2)}, "
            f"{tensor(g2)}) -> {tensor(w)}", loc)
    return dst


def sgd(step, label, param, grad, shape, momentum, lr):
    ty, name = tensor(shape), label.replace(".", "_")
    if momentum:
        buf = step.arg(f"{name}_mom", ty, "state", f"{label}.momentum")
        step.op(f"%{name}_new, %{name}_mom_new",
                f"tg.sgd_update {param}, {grad} momentum_buffer({buf}) "
                f"{{lr = {mlir_float(lr)} : f32, momentum = {mlir_float(momentum)} : f32}} : "
                f"({ty}, {ty}, {ty}) -> ({ty}, {ty})", f"{label}.sgd")
        step.result(f"%{name}_new", ty, f'{{tg.update = "{label}"}}')
        step.result(f"%{name}_mom_new", ty,
                    f'{{tg.update = "{label}.momentum"}}')
    else:
        step.op(f"%{name}_new", f"tg.sgd_update {param}, {grad} "
                f"{{lr = {mlir_float(lr)} : f32}} : ({ty}, {ty}) -> {ty}", f"{label}.sgd")
        step.result(f"%{name}_new", ty, f'{{tg.update = "{label}"}}')


def adam(step, label, param, grad, shape, lr):
    ty, name = tensor(shape), label.replace(".", "_")
    cnt = tensor([], "i64")
    m = step.arg(f"{name}_m", ty, "state", f"{label}.exp_avg")
    v = step.arg(f"{name}_v", ty, "state", f"{label}.exp_avg_sq")
    t = step.arg(f"{name}_t", cnt, "state", f"{label}.step")
    n = f"%{name}_new"
    step.op(f"{n}, {n}_m, {n}_v, {n}_t",
            f"tg.adam_update {param}, {grad}, {m}, {v}, {t} "
            f"{{lr = {mlir_float(lr)} : f32, weight_decay = 0.01 : f32}} : "
            f"({ty}, {ty}, {ty}, {ty}, {cnt}) -> ({ty}, {ty}, {ty}, {cnt})",
            f"{label}.adam")
    step.result(n, ty, f'{{tg.update = "{label}"}}')
    step.result(f"{n}_m", ty, f'{{tg.update = "{label}.exp_avg"}}')
    step.result(f"{n}_v", ty, f'{{tg.update = "{label}.exp_avg_sq"}}')
    step.result(f"{n}_t", cnt, f'{{tg.update = "{label}.step"}}')


def gen_mlp(a):
    s = Step()
    b, f32 = a.batch, "f32"
    x = s.arg("x", tensor([b, a.inputs]), "input", "x")
    y = s.arg("labels", tensor([b], "i32"), "label", "labels")
    widths = [a.inputs] + [a.width] * a.layers + [a.classes]
    names = [f"fc{i + 1}" for i in range(a.layers)] + ["head"]
    params = []
    for i, name in enumerate(names):
        w = s.arg(f"{name}_w", tensor(widths[i:i + 2]), "param",
                  f"{name}.weight")
        bias = s.arg(f"{name}_b", tensor([widths[i + 1]]), "param",
                     f"{name}.bias")
        params.append((name, w, bias, widths[i], widths[i + 1]))

    seed = None
    if a.dropout:
        # One seed for every dropout (each its own stream), advanced by the
        # step so that every step draws new masks.
        seed = s.arg("dropout_seed", "tensor<i64>", "state", "dropout.seed",
                     init="0")

    s.comment("Forward.")
    h, acts = x, []
    for index, (name, w, bias, din, dout) in enumerate(params):
        last = name == "head"
        s.op(f"%{name}_mm", f"tg.matmul {h}, {w} : ({tensor([b, din])}, "
             f"{tensor([din, dout])}) -> {tensor([b, dout])}", f"{name}.matmul")
        z = f"%{name}_z" if not last else "%logits"
        s.op(z, f"tg.add %{name}_mm, {bias} : ({tensor([b, dout])}, "
             f"{tensor([dout])}) -> {tensor([b, dout])}", f"{name}.bias_add")
        acts.append((h, z))
        if not last:
            s.op(f"%{name}_h", f"tg.relu {z} : {tensor([b, dout])}",
                 f"{name}.relu")
            h = f"%{name}_h"
            if seed:
                s.op(f"%{name}_drop", f"tg.dropout {h}, {seed} rate = "
                     f"{mlir_float(a.dropout)} stream = {index} : "
                     f"({tensor([b, dout])}, tensor<i64>) -> "
                     f"{tensor([b, dout])}", f"{name}.dropout")
                h = f"%{name}_drop"
    if not a.hand_written:
        s.result("%logits", tensor([b, a.classes]), '{tg.output = "logits"}')
        if seed:
            s.op("%next_seed", f"tg.next_seed {seed} : tensor<i64>",
                 "dropout.next_seed")
            s.result("%next_seed", "tensor<i64>",
                     '{tg.update = "dropout.seed"}')
        return s
    s.op("%loss", f"tg.softmax_cross_entropy %logits, {y} : "
         f"({tensor([b, a.classes])}, {tensor([b], 'i32')}) -> {tensor([])}",
         "loss")

    s.comment("Backward.")
    s.op("%seed", f"tg.constant dense<1.0> : {tensor([])}", "loss.seed")
    s.op("%d_logits", f"tg.softmax_cross_entropy_grad %seed, %logits, {y} : "
         f"({tensor([])}, {tensor([b, a.classes])}, {tensor([b], 'i32')}) -> "
         f"{tensor([b, a.classes])}", "loss.grad")
    grads = {}
    dz = "%d_logits"
    for i in reversed(range(len(params))):
        name, w, bias, din, dout = params[i]
        h_in, z = acts[i]
        if name != "head":
            s.op(f"%d_{name}_z", f"tg.relu_grad {dz}, {z} : "
                 f"{tensor([b, dout])}", f"{name}.relu.grad")
            dz = f"%d_{name}_z"
        gw = weight_grad(s, h_in, [b, din], dz, [b, dout], f"%d_{name}_w",
                         f"{name}.matmul.grad_weight")
        gb = reduce_rows(s, dz, [b, dout], f"%d_{name}_b",
                         f"{name}.bias_add.grad")
        grads[name] = (gw, gb)
        if i > 0:
            s.op(f"%d_{name}_in", f"tg.matmul {dz}, {w} transpose_rhs : "
                 f"({tensor([b, dout])}, {tensor([din, dout])}) -> "
                 f"{tensor([b, din])}", f"{name}.matmul.grad_input")
            dz = f"%d_{name}_in"

    s.comment("SGD update.")
    s.result("%loss", tensor([]), "{tg.loss}")
    s.result("%logits", tensor([b, a.classes]), '{tg.output = "logits"}')
    for name, w, bias, din, dout in params:
        gw, gb = grads[name]
        sgd(s, f"{name}.weight", w, gw, [din, dout], a.momentum, a.lr)
        sgd(s, f"{name}.bias", bias, gb, [dout], a.momentum, a.lr)
    return s


def gen_transformer(a):
    s = Step()
    B, S, D, H, F, V = a.batch, a.seq, a.d_model, a.heads, a.ffn, a.vocab
    if D % H:
        sys.exit(f"error: --d-model {D} is not divisible by --heads {H}")
    Dh = D // H
    BSD, BHSD, BHSS = [B, S, D], [B, H, S, Dh], [B, H, S, S]
    bsd, bhsd, bhss = tensor(BSD), tensor(BHSD), tensor(BHSS)
    bshd = tensor([B, S, H, Dh])
    ids_t = tensor([B, S], "i32")
    vec = lambda n: tensor([n])
    mat = lambda m, n: tensor([m, n])
    ids = s.arg("ids", ids_t, "input", "ids")
    labels = s.arg("labels", ids_t, "label", "labels")
    params = []  # (name, ssa, shape)

    def param(name, shape):
        # Layer-norm scales start at one; the runner initialises the rest.
        init = "1.0" if name.endswith("ln1.scale") or name.endswith(
            "ln2.scale") else None
        v = s.arg(name.replace(".", "_"), tensor(shape), "param", name, init)
        params.append((name, v, shape))
        return v

    emb = param("embed.weight", [V, D])
    pos = param("pos.weight", [S, D])
    blocks = []
    for l in range(a.layers):
        p = f"block{l}"
        blocks.append({k: param(f"{p}.{k}", shp) for k, shp in [
            ("ln1.scale", [D]), ("ln1.bias", [D]), ("attn.wq", [D, D]),
            ("attn.wk", [D, D]), ("attn.wv", [D, D]), ("attn.wo", [D, D]),
            ("ln2.scale", [D]), ("ln2.bias", [D]), ("mlp.w1", [D, F]),
            ("mlp.b1", [F]), ("mlp.w2", [F, D]), ("mlp.b2", [D])]})
    head_w = param("head.weight", [D, V])
    head_b = param("head.bias", [V])

    def ln(pfx, x, g, bias):
        stat = tensor([B, S])
        s.op(f"%{pfx}_y, %{pfx}_mean, %{pfx}_rstd",
             f"tg.layer_norm {x}, {g}, {bias} axis = 2 epsilon = 1.0e-05 : "
             f"({bsd}, {vec(D)}, {vec(D)}) -> ({bsd}, {stat}, {stat})",
             pfx.replace("_", "."))
        return f"%{pfx}_y"

    def split_heads(v, dst, loc):
        s.op(f"{dst}_r", f"tg.reshape {v} : ({bsd}) -> {bshd}", loc + ".split")
        s.op(dst, f"tg.transpose {dst}_r permutation = [0, 2, 1, 3] : "
             f"({bshd}) -> {bhsd}", loc + ".heads")
        return dst

    def merge_heads(v, dst, loc):
        s.op(f"{dst}_t", f"tg.transpose {v} permutation = [0, 2, 1, 3] : "
             f"({bhsd}) -> {bshd}", loc + ".unheads")
        s.op(dst, f"tg.reshape {dst}_t : ({bshd}) -> {bsd}", loc + ".merge")
        return dst

    def linear(x, w, din, dout, dst, loc, bias=None):
        xs, ys = tensor([B, S, din]), tensor([B, S, dout])
        s.op(dst if bias is None else dst + "_mm",
             f"tg.matmul {x}, {w} : ({xs}, {mat(din, dout)}) -> {ys}", loc)
        if bias is not None:
            s.op(dst, f"tg.add {dst}_mm, {bias} : ({ys}, {vec(dout)}) -> {ys}",
                 loc + ".bias_add")
        return dst

    def linear_grad(x, din, dy, dout, w, dst, loc, need_input=True):
        """Weight (and input) gradient of y = x @ w."""
        gw = weight_grad(s, x, [B, S, din], dy, [B, S, dout], f"{dst}_w",
                         loc + ".grad_weight")
        if not need_input:
            return gw, None
        s.op(f"{dst}_x", f"tg.matmul {dy}, {w} transpose_rhs : "
             f"({tensor([B, S, dout])}, {mat(din, dout)}) -> "
             f"{tensor([B, S, din])}", loc + ".grad_input")
        return gw, f"{dst}_x"

    def ln_grad(l, which, dy, x):
        """Backward of block l's layer norm `which`; returns d(input)."""
        p, stat, pre = f"b{l}", tensor([B, S]), f"%d_b{l}_{which}"
        s.op(f"{pre}_x, {pre}_g, {pre}_b",
             f"tg.layer_norm_grad {dy}, {x}, {blocks[l][which + '.scale']}, "
             f"%{p}_{which}_mean, %{p}_{which}_rstd axis = 2 : ({bsd}, {bsd}, "
             f"{vec(D)}, {stat}, {stat}) -> ({bsd}, {vec(D)}, {vec(D)})",
             f"block{l}.{which}.grad")
        grads[f"block{l}.{which}.scale"] = f"{pre}_g"
        grads[f"block{l}.{which}.bias"] = f"{pre}_b"
        return f"{pre}_x"

    scale = 1.0 / math.sqrt(Dh)
    s.comment("Forward: embeddings.")
    s.op("%tok", f"tg.gather {emb}[{ids}] : ({mat(V, D)}, {ids_t}) -> {bsd}",
         "embed")
    s.op("%x0", f"tg.add %tok, {pos} : ({bsd}, {mat(S, D)}) -> {bsd}",
         "pos.add")
    s.op("%attn_scale", f"tg.constant dense<{scale!r}> : {tensor([])}",
         "attn.scale")
    x, saved = "%x0", []
    for l, P in enumerate(blocks):
        p = f"b{l}"
        s.comment(f"Forward: block {l}, attention.")
        x1 = ln(f"{p}_ln1", x, P["ln1.scale"], P["ln1.bias"])
        heads = {}
        for k in "qkv":
            linear(x1, P[f"attn.w{k}"], D, D, f"%{p}_{k}",
                   f"block{l}.attn.{k}")
            heads[k] = split_heads(f"%{p}_{k}", f"%{p}_{k}h",
                                   f"block{l}.attn.{k}")
        s.op(f"%{p}_scores", f"tg.matmul {heads['q']}, {heads['k']} "
             f"transpose_rhs : ({bhsd}, {bhsd}) -> {bhss}",
             f"block{l}.attn.scores")
        s.op(f"%{p}_scaled", f"tg.mul %{p}_scores, %attn_scale : "
             f"({bhss}, {tensor([])}) -> {bhss}", f"block{l}.attn.scale")
        s.op(f"%{p}_probs", f"tg.softmax %{p}_scaled axis = 3 : ({bhss}) -> "
             f"{bhss}",
             f"block{l}.attn.softmax")
        s.op(f"%{p}_ctxh", f"tg.matmul %{p}_probs, {heads['v']} : "
             f"({bhss}, {bhsd}) -> {bhsd}", f"block{l}.attn.context")
        ctx = merge_heads(f"%{p}_ctxh", f"%{p}_ctx", f"block{l}.attn.context")
        linear(ctx, P["attn.wo"], D, D, f"%{p}_attn", f"block{l}.attn.out")
        s.op(f"%{p}_x2", f"tg.add {x}, %{p}_attn : ({bsd}, {bsd}) -> {bsd}",
             f"block{l}.attn.residual")
        s.comment(f"Forward: block {l}, MLP.")
        y = ln(f"{p}_ln2", f"%{p}_x2", P["ln2.scale"], P["ln2.bias"])
        u = linear(y, P["mlp.w1"], D, F, f"%{p}_u", f"block{l}.mlp.fc1",
                   P["mlp.b1"])
        s.op(f"%{p}_gelu", f"tg.gelu {u} : {tensor([B, S, F])}",
             f"block{l}.mlp.gelu")
        v = linear(f"%{p}_gelu", P["mlp.w2"], F, D, f"%{p}_mlp_out",
                   f"block{l}.mlp.fc2", P["mlp.b2"])
        s.op(f"%{p}_x3", f"tg.add %{p}_x2, {v} : ({bsd}, {bsd}) -> {bsd}",
             f"block{l}.mlp.residual")
        saved.append(dict(x=x, x1=x1, heads=heads, ctx=ctx, y=y, u=u))
        x = f"%{p}_x3"
    s.comment("Forward: head and loss.")
    bsv = tensor([B, S, V])
    linear(x, head_w, D, V, "%logits", "head", head_b)
    if not a.hand_written:
        s.result("%logits", tensor([B, S, V]), '{tg.output = "logits"}')
        return s
    s.op("%loss", f"tg.softmax_cross_entropy %logits, {labels} : "
         f"({bsv}, {ids_t}) -> {tensor([])}", "loss")

    s.comment("Backward: loss and head.")
    grads = {}
    s.op("%seed", f"tg.constant dense<1.0> : {tensor([])}", "loss.seed")
    s.op("%d_logits", f"tg.softmax_cross_entropy_grad %seed, %logits, "
         f"{labels} : ({tensor([])}, {bsv}, {ids_t}) -> {bsv}", "loss.grad")
    grads["head.bias"] = reduce_rows(s, "%d_logits", [B, S, V], "%d_head_b",
                                     "head.bias_add.grad")
    grads["head.weight"], dx = linear_grad(x, D, "%d_logits", V, head_w,
                                           "%d_head", "head")
    for l in reversed(range(a.layers)):
        P, sv, p = blocks[l], saved[l], f"b{l}"
        k = f"block{l}"
        s.comment(f"Backward: block {l}, MLP.")
        grads[f"{k}.mlp.b2"] = reduce_rows(s, dx, BSD, f"%d_{p}_b2",
                                           f"{k}.mlp.fc2.bias_add.grad")
        grads[f"{k}.mlp.w2"], dg = linear_grad(
            f"%{p}_gelu", F, dx, D, P["mlp.w2"], f"%d_{p}_fc2", f"{k}.mlp.fc2")
        s.op(f"%d_{p}_u", f"tg.gelu_grad {dg}, {sv['u']} : "
             f"{tensor([B, S, F])}", f"{k}.mlp.gelu.grad")
        grads[f"{k}.mlp.b1"] = reduce_rows(s, f"%d_{p}_u", [B, S, F],
                                           f"%d_{p}_b1",
                                           f"{k}.mlp.fc1.bias_add.grad")
        grads[f"{k}.mlp.w1"], dy = linear_grad(
            sv["y"], D, f"%d_{p}_u", F, P["mlp.w1"], f"%d_{p}_fc1",
            f"{k}.mlp.fc1")
        dln2 = ln_grad(l, "ln2", dy, f"%{p}_x2")
        s.op(f"%d_{p}_x2", f"tg.add {dx}, {dln2} : ({bsd}, {bsd}) -> "
             f"{bsd}", f"{k}.mlp.residual.grad")
        s.comment(f"Backward: block {l}, attention.")
        grads[f"{k}.attn.wo"], dctx = linear_grad(
            sv["ctx"], D, f"%d_{p}_x2", D, P["attn.wo"], f"%d_{p}_out",
            f"{k}.attn.out")
        dctxh = split_heads(dctx, f"%d_{p}_ctxh", f"{k}.attn.context.grad")
        h = sv["heads"]
        s.op(f"%d_{p}_probs", f"tg.matmul {dctxh}, {h['v']} transpose_rhs : "
             f"({bhsd}, {bhsd}) -> {bhss}", f"{k}.attn.context.grad_probs")
        s.op(f"%d_{p}_vh", f"tg.matmul %{p}_probs, {dctxh} transpose_lhs : "
             f"({bhss}, {bhsd}) -> {bhsd}", f"{k}.attn.context.grad_v")
        s.op(f"%d_{p}_scaled", f"tg.softmax_grad %d_{p}_probs, %{p}_probs "
             f"axis = 3 : ({bhss}, {bhss}) -> {bhss}",
             f"{k}.attn.softmax.grad")
        s.op(f"%d_{p}_scores", f"tg.mul %d_{p}_scaled, %attn_scale : "
             f"({bhss}, {tensor([])}) -> {bhss}", f"{k}.attn.scale.grad")
        s.op(f"%d_{p}_qh", f"tg.matmul %d_{p}_scores, {h['k']} : "
             f"({bhss}, {bhsd}) -> {bhsd}", f"{k}.attn.scores.grad_q")
        s.op(f"%d_{p}_kh", f"tg.matmul %d_{p}_scores, {h['q']} "
             f"transpose_lhs : ({bhss}, {bhsd}) -> {bhsd}",
             f"{k}.attn.scores.grad_k")
        dx1 = None
        for q in "qkv":
            dq = merge_heads(f"%d_{p}_{q}h", f"%d_{p}_{q}",
                             f"{k}.attn.{q}.grad")
            grads[f"{k}.attn.w{q}"], dxq = linear_grad(
                sv["x1"], D, dq, D, P[f"attn.w{q}"], f"%d_{p}_{q}lin",
                f"{k}.attn.{q}")
            if dx1 is None:
                dx1 = dxq
            else:
                s.op(f"%d_{p}_x1{q}", f"tg.add {dx1}, {dxq} : ({bsd}, {bsd}) "
                     f"-> {bsd}", f"{k}.attn.{q}.grad_sum")
                dx1 = f"%d_{p}_x1{q}"
        dln1 = ln_grad(l, "ln1", dx1, sv["x"])
        s.op(f"%d_{p}_x", f"tg.add %d_{p}_x2, {dln1} : ({bsd}, {bsd}) "
             f"-> {bsd}", f"{k}.attn.residual.grad")
        dx = f"%d_{p}_x"
    s.comment("Backward: embeddings.")
    s.op("%d_pos", f"tg.reduce_sum {dx} axes = [0] : ({bsd}) -> {mat(S, D)}",
         "pos.add.grad")
    grads["pos.weight"] = "%d_pos"
    s.op("%d_embed", f"tg.gather_grad {dx}[{ids}] : ({bsd}, {ids_t}) -> "
         f"{mat(V, D)}", "embed.grad")
    grads["embed.weight"] = "%d_embed"

    s.comment("Adam update.")
    s.result("%loss", tensor([]), "{tg.loss}")
    s.result("%logits", tensor([B, S, V]), '{tg.output = "logits"}')
    for name, v, shape in params:
        adam(s, name, v, grads[name], shape, a.lr)
    return s


def gen_resnet(a):
    """A ResNet-style CNN: a 3x3 stem, `--blocks` basic residual blocks per
    stage (two 3x3 conv + batch norm, the second stage downsampling with a
    strided 1x1 projection), global average pooling and a linear head. Batch
    norm keeps its running statistics as tg.state, updated by the forward
    function (tg.update)."""
    s = Step()
    b, hw, c0 = a.batch, a.image, a.width
    s.arg("x", tensor([b, a.channels, hw, hw]), "input", "x")
    s.arg("labels", tensor([b], "i32"), "label", "labels")
    updates = []

    def conv(name, x, cin, cout, size, k, stride, pad):
        w = s.arg(f"{name.replace('.', '_')}_w", tensor([cout, cin, k, k]),
                  "param", f"{name}.weight")
        out = (size + 2 * pad - k) // stride + 1
        y = f"%{name.replace('.', '_')}"
        s.op(y, f"tg.conv2d {x}, {w} strides = [{stride}, {stride}] "
             f"padding = [{pad}, {pad}, {pad}, {pad}] dilations = [1, 1] "
             f"groups = 1 : ({tensor([b, cin, size, size])}, "
             f"{tensor([cout, cin, k, k])}) -> {tensor([b, cout, out, out])}",
             name)
        return y, out

    def bn(name, x, ch, size):
        n = name.replace(".", "_")
        g = s.arg(f"{n}_g", tensor([ch]), "param", f"{name}.weight",
                  init="1.0")
        beta = s.arg(f"{n}_b", tensor([ch]), "param", f"{name}.bias")
        rm = s.arg(f"{n}_rm", tensor([ch]), "state", f"{name}.running_mean",
                   init="0.0")
        rv = s.arg(f"{n}_rv", tensor([ch]), "state", f"{name}.running_var",
                   init="1.0")
        act = tensor([b, ch, size, size])
        vec = tensor([ch])
        s.op(f"%{n}, %{n}_mean, %{n}_rstd, %{n}_nrm, %{n}_nrv",
             f"tg.batch_norm {x}, {g}, {beta}, {rm}, {rv} epsilon = 1.0e-05 "
             f"momentum = 1.0e-01 : ({act}, {vec}, {vec}, {vec}, {vec}) -> "
             f"({act}, {vec}, {vec}, {vec}, {vec})", name)
        updates.append((f"%{n}_nrm", vec, f"{name}.running_mean"))
        updates.append((f"%{n}_nrv", vec, f"{name}.running_var"))
        return f"%{n}"

    def relu(name, x, ch, size):
        y = f"%{name.replace('.', '_')}"
        s.op(y, f"tg.relu {x} : {tensor([b, ch, size, size])}", name)
        return y

    s.comment("Stem.")
    h, size = conv("stem.conv", "%x", a.channels, c0, hw, 3, 1, 1)
    h = relu("stem.relu", bn("stem.bn", h, c0, size), c0, size)
    ch = c0
    for stage in range(2):
        for block in range(a.blocks):
            name = f"layer{stage + 1}.{block}"
            down = stage > 0 and block == 0
            cout = c0 * (2 ** stage)
            stride = 2 if down else 1
            s.comment(f"Block {name}.")
            y, out = conv(f"{name}.conv1", h, ch, cout, size, 3, stride, 1)
            y = relu(f"{name}.relu1", bn(f"{name}.bn1", y, cout, out), cout,
                     out)
            y, _ = conv(f"{name}.conv2", y, cout, cout, out, 3, 1, 1)
            y = bn(f"{name}.bn2", y, cout, out)
            shortcut = h
            if down or cout != ch:
                shortcut, _ = conv(f"{name}.downsample.conv", h, ch, cout,
                                   size, 1, stride, 0)
                shortcut = bn(f"{name}.downsample.bn", shortcut, cout, out)
            act = tensor([b, cout, out, out])
            n = name.replace(".", "_")
            s.op(f"%{n}_sum", f"tg.add {y}, {shortcut} : ({act}, {act}) -> "
                 f"{act}", f"{name}.add")
            h = relu(f"{name}.relu2", f"%{n}_sum", cout, out)
            ch, size = cout, out
    s.comment("Head.")
    s.op("%pool", f"tg.reduce_mean {h} axes = [2, 3] : "
         f"({tensor([b, ch, size, size])}) -> {tensor([b, ch])}", "avgpool")
    w = s.arg("fc_w", tensor([ch, a.classes]), "param", "fc.weight")
    bias = s.arg("fc_b", tensor([a.classes]), "param", "fc.bias")
    s.op("%fc_mm", f"tg.matmul %pool, {w} : ({tensor([b, ch])}, "
         f"{tensor([ch, a.classes])}) -> {tensor([b, a.classes])}",
         "fc.matmul")
    s.op("%logits", f"tg.add %fc_mm, {bias} : ({tensor([b, a.classes])}, "
         f"{tensor([a.classes])}) -> {tensor([b, a.classes])}", "fc.bias_add")
    s.result("%logits", tensor([b, a.classes]), '{tg.output = "logits"}')
    for value, ty, name in updates:
        s.result(value, ty, f'{{tg.update = "{name}"}}')
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="model", required=True)
    m = sub.add_parser("mlp", help="MLP classifier step with SGD")
    m.add_argument("--batch", type=int, default=32)
    m.add_argument("--inputs", type=int, default=64)
    m.add_argument("--width", type=int, default=128)
    m.add_argument("--layers", type=int, default=1,
                   help="hidden layers (2 layers of weights for 1)")
    m.add_argument("--classes", type=int, default=10)
    m.add_argument("--lr", type=float, default=0.1)
    m.add_argument("--momentum", type=float, default=0.0)
    m.add_argument("--dropout", type=float, default=0.0,
                   help="dropout rate after each hidden layer (forward "
                        "function only)")
    t = sub.add_parser("transformer", help="encoder block step with Adam")
    t.add_argument("--batch", type=int, default=4)
    t.add_argument("--seq", type=int, default=16)
    t.add_argument("--d-model", type=int, default=64)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--ffn", type=int, default=256)
    t.add_argument("--vocab", type=int, default=100)
    t.add_argument("--layers", type=int, default=1, help="encoder blocks")
    t.add_argument("--lr", type=float, default=1e-3)
    r = sub.add_parser("resnet", help="ResNet-style CNN (forward only)")
    r.add_argument("--batch", type=int, default=32)
    r.add_argument("--image", type=int, default=16, help="image height and "
                   "width")
    r.add_argument("--channels", type=int, default=3)
    r.add_argument("--width", type=int, default=16,
                   help="channels of the first stage (doubled in the second)")
    r.add_argument("--blocks", type=int, default=1,
                   help="residual blocks per stage")
    r.add_argument("--layers", type=int, default=1, help=argparse.SUPPRESS)
    r.add_argument("--classes", type=int, default=10)
    for p in (m, t, r):
        p.add_argument("--hand-written", action="store_true",
                       help="emit a whole training step with a hand-written "
                            "loss, backward pass and update instead of the "
                            "forward function")
        p.add_argument("--min-ops", type=int, default=0,
                       help="add layers until the step has this many ops")
        p.add_argument("-o", "--output", default="-")
        p.add_argument("--source-name",
                       help="file name in the ops' locations (default: the "
                            "name of -o, else <model>_step.mlir)")
    a = ap.parse_args()
    for key, value in vars(a).items():
        if (isinstance(value, int) and not isinstance(value, bool)
                and key not in ("min_ops",) and value < 1):
            ap.error(f"--{key.replace('_', '-')} must be at least 1")

    if a.model == "mlp" and not 0 <= a.dropout < 1:
        ap.error("--dropout must be in [0, 1)")
    if a.model == "mlp" and a.dropout and a.hand_written:
        ap.error("--dropout needs the forward function (tg-make-train-step "
                 "builds its backward pass)")
    if a.model == "resnet":
        if a.hand_written:
            ap.error("resnet has no hand-written form: it is a forward "
                     "function for tg-make-train-step")
        a.blocks = max(a.blocks, a.layers)
    gen = {"mlp": gen_mlp, "transformer": gen_transformer,
           "resnet": gen_resnet}[a.model]
    step = gen(a)
    if a.min_ops > step.ops:
        # Ops grow linearly with layers: extrapolate from two sizes.
        per_layer = gen(argparse.Namespace(**{**vars(a), "layers":
                                              a.layers + 1})).ops - step.ops
        a.layers += -(-(a.min_ops - step.ops) // per_layer)
        step = gen(a)
    sizes = ", ".join(f"{k.replace('_', '-')}={v}" for k, v in vars(a).items()
                      if k not in ("model", "output", "min_ops", "source_name",
                                   "hand_written")
                      and not (a.model == "resnet" and k == "layers")
                      and not (k == "dropout" and not v)
                      and (a.hand_written or k not in ("lr", "momentum")))
    what = ("training step with a hand-written backward pass" if
            a.hand_written else "forward function")
    article = {"mlp": "An MLP", "transformer": "A transformer",
               "resnet": "A ResNet-style CNN"}[a.model]
    header = [f"{article} {what} generated by utils/generate-train-step.py"
              f"{' --hand-written' if a.hand_written else ''}.",
              f"{sizes}; {step.ops} ops.", ""]
    if not a.hand_written:
        header[-1:] = ["Train it with mp-runner, or make the training step "
                       "with mp-opt --tg-make-train-step.", ""]
    name = f"{a.model}_step" if a.hand_written else a.model
    source = a.source_name or (os.path.basename(a.output)
                               if a.output != "-" else f"{name}.mlir")
    text = step.render(name, header, source, forward=not a.hand_written)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
