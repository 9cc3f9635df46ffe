#!/usr/bin/env python3
"""JAX (jax.jit, XLA CPU) training steps: the reference for benchmarks.

The JAX side of benchmarks/cpu_step_times.py: the same models that
utils/generate-train-step.py emits as forward functions (`mlp` and
`transformer`), with the training step that mp-runner derives from them
(`tg-make-train-step` defaults): softmax cross-entropy with integer labels,
averaged over every labelled position, and plain SGD (lr 0.01, no momentum).
Parameters start as mp-runner starts them: matrices uniform in
+-1/sqrt(fan-in), biases zero, layer-norm scales one.

Precisions:

  fp32  everything in float32.
  bf16  an AMP-style policy: parameters (the master weights) stay float32
        and are cast to bfloat16 for the forward pass; matmuls, forward
        and backward, take and return bfloat16; elementwise ops (bias
        adds, relu, gelu, residuals, the attention scale) run in bfloat16;
        layer norm, softmax, the loss and the SGD update run in float32.
        No loss scaling (bfloat16 has float32's exponent range). XLA's CPU
        backend has no bfloat16 GEMM: it converts the operands and runs
        the dot in float32, rounding the result to bfloat16.

usage: benchmarks/jax_steps.py mlp --precision bf16 --steps 20 --batch 512
       benchmarks/jax_steps.py transformer --steps 20 --d-model 256

Prints one JSON line: the model, the precision, the minimum and median step
time in ms over --steps timed steps (after 2 compiling warm-up steps), and
the JAX version.
"""

import argparse
import json
import math
import statistics
import time

import jax
import jax.numpy as jnp

F32 = jnp.float32

# mp-runner's learning rate for --optimizer=sgd on a forward function.
DEFAULT_LR = 0.01


def _compute_dtype(precision):
    if precision == "fp32":
        return F32
    if precision == "bf16":
        return jnp.bfloat16
    raise ValueError(f"unknown precision {precision!r}")


def _init_params(key, shapes):
    """mp-runner's initialisation (lib/Runner/Trainer.cpp), not its values:
    matrices [in, out] uniform in +-1/sqrt(in), vectors zero, layer-norm
    scales one."""
    params = {}
    keys = jax.random.split(key, len(shapes))
    for k, (name, shape) in zip(keys, shapes):
        if name.endswith(".scale"):
            params[name] = jnp.ones(shape, F32)
        elif len(shape) < 2:
            params[name] = jnp.zeros(shape, F32)
        else:
            bound = 1.0 / math.sqrt(math.prod(shape[:-1]))
            params[name] = jax.random.uniform(k, shape, F32, -bound, bound)
    return params


def _matmul(x, w, cd):
    # Not preferred_element_type=f32: JAX differentiates such a dot with
    # f32 operands, which would leave the whole backward pass in f32. A
    # plain bf16 dot keeps the backward matmuls in bf16 as in mp's AMP
    # steps, and XLA's CPU backend computes it in f32 anyway.
    return jnp.matmul(x.astype(cd), w.astype(cd))


def _layer_norm(x, scale, bias, cd):
    # Statistics in f32 (tg.layer_norm is on the AMP deny list); biased
    # variance and epsilon 1e-5 as in the generator.
    x = x.astype(F32)
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    y = (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale + bias
    return y.astype(cd)


def _cross_entropy(logits, labels):
    """Mean over every labelled position, like tg.softmax_cross_entropy."""
    logp = jax.nn.log_softmax(logits.astype(F32), axis=-1)
    picked = jnp.take_along_axis(logp, labels[..., None].astype(jnp.int32),
                                 axis=-1)
    return -jnp.mean(picked)


def _mlp(sizes):
    widths = ([sizes["inputs"]] + [sizes["width"]] * sizes["layers"]
              + [sizes["classes"]])
    names = [f"fc{i + 1}" for i in range(sizes["layers"])] + ["head"]
    shapes = []
    for i, name in enumerate(names):
        shapes.append((f"{name}.weight", (widths[i], widths[i + 1])))
        shapes.append((f"{name}.bias", (widths[i + 1],)))

    def forward(params, x, cd):
        h = x.astype(cd)
        for name in names:
            z = _matmul(h, params[f"{name}.weight"], cd) + \
                params[f"{name}.bias"].astype(cd)
            h = z if name == "head" else jax.nn.relu(z)
        return h

    def make_batch(key):
        kx, ky = jax.random.split(key)
        x = jax.random.normal(kx, (sizes["batch"], sizes["inputs"]), F32)
        labels = jax.random.randint(ky, (sizes["batch"],), 0,
                                    sizes["classes"], jnp.int32)
        return x, labels

    return shapes, forward, make_batch


def _transformer(sizes):
    B, S, D = sizes["batch"], sizes["seq"], sizes["d_model"]
    H, F, V, L = sizes["heads"], sizes["ffn"], sizes["vocab"], sizes["layers"]
    if D % H:
        raise ValueError(f"d_model {D} is not divisible by heads {H}")
    Dh = D // H
    scale = 1.0 / math.sqrt(Dh)
    shapes = [("embed.weight", (V, D)), ("pos.weight", (S, D))]
    for i in range(L):
        p = f"block{i}"
        shapes += [(f"{p}.ln1.scale", (D,)), (f"{p}.ln1.bias", (D,)),
                   (f"{p}.attn.wq", (D, D)), (f"{p}.attn.wk", (D, D)),
                   (f"{p}.attn.wv", (D, D)), (f"{p}.attn.wo", (D, D)),
                   (f"{p}.ln2.scale", (D,)), (f"{p}.ln2.bias", (D,)),
                   (f"{p}.mlp.w1", (D, F)), (f"{p}.mlp.b1", (F,)),
                   (f"{p}.mlp.w2", (F, D)), (f"{p}.mlp.b2", (D,))]
    shapes += [("head.weight", (D, V)), ("head.bias", (V,))]

    def heads(t):
        return t.reshape(B, S, H, Dh).transpose(0, 2, 1, 3)

    def forward(params, ids, cd):
        # Gather, then cast: the same values as casting the whole table.
        x = params["embed.weight"][ids].astype(cd) + \
            params["pos.weight"].astype(cd)
        for i in range(L):
            prefix = f"block{i}."
            P = {name[len(prefix):]: value for name, value in params.items()
                 if name.startswith(prefix)}
            # Pre-norm attention: no biases on q, k, v or the output
            # projection, no mask.
            x1 = _layer_norm(x, P["ln1.scale"], P["ln1.bias"], cd)
            q = heads(_matmul(x1, P["attn.wq"], cd))
            k = heads(_matmul(x1, P["attn.wk"], cd))
            v = heads(_matmul(x1, P["attn.wv"], cd))
            scores = _matmul(q, k.transpose(0, 1, 3, 2), cd) * \
                jnp.asarray(scale, cd)
            probs = jax.nn.softmax(scores.astype(F32), axis=-1)
            ctx = _matmul(probs, v, cd).transpose(0, 2, 1, 3).reshape(B, S, D)
            x2 = x + _matmul(ctx, P["attn.wo"], cd)
            # Pre-norm MLP with the exact (erf) GELU, tg.gelu's default.
            y = _layer_norm(x2, P["ln2.scale"], P["ln2.bias"], cd)
            u = _matmul(y, P["mlp.w1"], cd) + P["mlp.b1"].astype(cd)
            g = jax.nn.gelu(u, approximate=False)
            x = x2 + _matmul(g, P["mlp.w2"], cd) + P["mlp.b2"].astype(cd)
        # The generator has no final layer norm before the head.
        return _matmul(x, params["head.weight"], cd) + \
            params["head.bias"].astype(cd)

    def make_batch(key):
        ki, kl = jax.random.split(key)
        ids = jax.random.randint(ki, (B, S), 0, V, jnp.int32)
        labels = jax.random.randint(kl, (B, S), 0, V, jnp.int32)
        return ids, labels

    return shapes, forward, make_batch


MODELS = {
    "mlp": (_mlp, dict(batch=32, inputs=64, width=128, layers=1,
                       classes=10)),
    "transformer": (_transformer, dict(batch=4, seq=16, d_model=64, heads=4,
                                       ffn=256, vocab=100, layers=1)),
}


def build(model, precision, lr=DEFAULT_LR, seed=0, **sizes):
    """Returns (step_fn, state, batch) for `model` at `sizes` (the
    generator's flags, its defaults for those not given).

    `step_fn(state, batch) -> (new_state, loss)` is jitted and donates the
    state, so a caller keeps only the state it returns."""
    factory, defaults = MODELS[model]
    unknown = set(sizes) - set(defaults)
    if unknown:
        raise TypeError(f"unknown sizes for {model}: {sorted(unknown)}")
    sizes = {**defaults, **sizes}
    cd = _compute_dtype(precision)
    shapes, forward, make_batch = factory(sizes)
    kp, kb = jax.random.split(jax.random.PRNGKey(seed))
    state = _init_params(kp, shapes)
    batch = make_batch(kb)

    def loss_fn(params, batch):
        inputs, labels = batch
        return _cross_entropy(forward(params, inputs, cd), labels)

    def step(params, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        new = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        return new, loss

    return jax.jit(step, donate_argnums=0), state, batch


def time_steps(step_fn, state, batch, steps):
    """Per-step milliseconds of `steps` steps after 2 warm-up steps (the
    first compiles). Blocks on each loss so that a step's time is its
    own."""
    for _ in range(2):
        state, loss = step_fn(state, batch)
        jax.block_until_ready(loss)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        state, loss = step_fn(state, batch)
        jax.block_until_ready(loss)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="model", required=True)
    for model, (_, defaults) in MODELS.items():
        p = sub.add_parser(model)
        p.add_argument("--precision", choices=["fp32", "bf16"],
                       default="fp32")
        p.add_argument("--steps", type=int, default=20)
        p.add_argument("--lr", type=float, default=DEFAULT_LR)
        for name, value in defaults.items():
            p.add_argument("--" + name.replace("_", "-"), type=int,
                           default=value)
    a = ap.parse_args()
    if a.steps < 1:
        ap.error("--steps must be at least 1")
    sizes = {k: getattr(a, k) for k in MODELS[a.model][1]}
    step_fn, state, batch = build(a.model, a.precision, lr=a.lr, **sizes)
    times = time_steps(step_fn, state, batch, a.steps)
    print(json.dumps({"model": a.model, "precision": a.precision,
                      "min_ms": round(min(times), 3),
                      "median_ms": round(statistics.median(times), 3),
                      "steps": a.steps, "jax": jax.__version__}))


if __name__ == "__main__":
    main()
