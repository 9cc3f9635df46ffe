//===- Passes.td - tg transformation passes -----------------*- tablegen -*-===//

#ifndef MP_DIALECT_TG_TRANSFORMS_PASSES_TD
#define MP_DIALECT_TG_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TGMakeTrainStep : Pass<"tg-make-train-step", "::mlir::ModuleOp"> {
  let summary = "Differentiate a forward function into a training step";
  let description = [{
    Turns every forward function (`tg.forward`, or the function named by
    `entry`) into a training step that follows docs/TrainingStep.md:

    1. the loss: the result marked `tg.loss` (or the only result, when it
       is a scalar), or, with `loss=softmax-cross-entropy` or `loss=mse` (or
       `auto`, the default, when the function returns no loss: chosen by
       the label's type), a loss op over the result marked
       `tg.output = "logits"` (or the only result) and the `tg.label`
       argument; the logits stay a `tg.output`;
    2. reverse-mode differentiation from the loss, seeded by
       `tg.constant dense<1.0>`: ops are visited in reverse program order,
       each op on a path from a parameter to the loss builds the adjoints of
       its operands through `DifferentiableOpInterface`, and adjoints of a
       value used several times are summed;
    3. an optimizer update per parameter (`sgd` with momentum, Nesterov and
       weight decay; `adam`; `adamw`), its state (momentum buffers, moments,
       step counters) added as `tg.state` arguments with zero `tg.init`;
       parameters matching a `no-decay` glob get no weight decay;
    4. dead-code elimination and CSE.

    An op on a path from a parameter to the loss that is not differentiable
    is a located error; a parameter that does not reach the loss is a
    warning (it is returned unchanged). docs/Autodiff.md explains the
    algorithm.

    Before:

    ```mlir
    func.func @f(%x: tensor<8x4xf32> {tg.input = "x"},
                 %y: tensor<8xi32> {tg.label = "y"},
                 %w: tensor<4x3xf32> {tg.param = "w"})
        -> (tensor<8x3xf32> {tg.output = "logits"}) attributes {tg.forward} {
      %logits = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
      return %logits : tensor<8x3xf32>
    }
    ```

    After (`loss=softmax-cross-entropy optimizer=sgd lr=0.1`):

    ```mlir
    func.func @f(...) -> (tensor<f32> {tg.loss},
                          tensor<8x3xf32> {tg.output = "logits"},
                          tensor<4x3xf32> {tg.update = "w"})
        attributes {tg.train_step} {
      %logits = tg.matmul %x, %w : ...
      %loss = tg.softmax_cross_entropy %logits, %y : ...
      %seed = tg.constant dense<1.0> : tensor<f32>
      %dlogits = tg.softmax_cross_entropy_grad %seed, %logits, %y : ...
      %dw = tg.matmul %x, %dlogits transpose_lhs : ...
      %w1 = tg.sgd_update %w, %dw {lr = 1.0e-01 : f32} : ...
      return %loss, %logits, %w1 : ...
    }
    ```
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The forward function (default: every function marked "
           "tg.forward)">,
    Option<"loss", "loss", "std::string", /*default=*/"\"auto\"",
           "auto (the function's own loss if it returns one, else "
           "softmax-cross-entropy for integer labels and mse for float "
           "ones), none (the function returns its loss), "
           "softmax-cross-entropy or mse">,
    Option<"label", "label", "std::string", /*default=*/"\"\"",
           "The tg.label argument the loss compares with (default: the only "
           "one)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, adam, adamw, or none (no update: each parameter's gradient "
           "is returned as tg.output \"grad.<name>\")">,
    Option<"lr", "lr", "double", /*default=*/"0.0",
           "Learning rate (default: 0.01 for sgd, 0.001 for adam and adamw)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum, in [0, 1)">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "Nesterov momentum (SGD, needs momentum > 0)">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Weight decay (default: 0.01 for adamw, 0 otherwise); coupled "
           "(L2) for sgd and adam, decoupled for adamw">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9",
           "Adam's first-moment decay, in [0, 1)">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999",
           "Adam's second-moment decay, in [0, 1)">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1e-8",
           "Adam's epsilon (> 0)">,
    ListOption<"noDecay", "no-decay", "std::string",
               "Globs of parameter names without weight decay (biases and "
               "norm scales: \"*.bias,*norm*\")">,
  ];
}

def TGRaiseDecomposedOps : Pass<"tg-raise-decomposed-ops"> {
  let summary = "Replace decomposed LayerNorm, GELU and softmax subgraphs "
                "with tg.layer_norm, tg.gelu and tg.softmax";
  let description = [{
    Exporters (PyTorch, tf2onnx) often write a layer norm, a GELU or a
    softmax as a chain of elementwise ops and reductions. Mixed precision
    cannot treat such a chain as a unit: it would run the reductions and
    the `x - mean` of a norm in f32 but the arithmetic between them in f16,
    and would miss that a softmax wants f32 as a whole. This pass finds the
    chains and replaces each with the one tg op, so the precision lists
    (`docs/MixedPrecision.md`) apply to it:

    * GELU, exact: `x * 0.5 * (1 + erf(x / sqrt(2)))` in any association
      and order of the product, with `x * (1/sqrt(2))` accepted for the
      division; `tg.gelu`.
    * GELU, tanh form: `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 *
      x^3)))`; `tg.gelu tanh_approx`.
    * Softmax: `exp(x - reduce_max(x)) / reduce_sum(exp(...))` over one axis
      (with or without the max), and log-softmax
      `z - log(reduce_sum(exp(z)))` with `z = x - reduce_max(x)`.
    * LayerNorm: `d = x - reduce_mean(x)`,
      `(d / sqrt(reduce_mean(d^2) + eps)) * gamma + beta` over trailing
      axes, with `d * rsqrt(...)` accepted and the affine part optional;
      `tg.layer_norm`.

    Constants must match to within 1e-4 relative (exporters round sqrt(2)
    and sqrt(2/pi) differently). The replacement is named after the module
    the matched ops share (`/encoder/layer.0/act/Gelu` for ops named
    `/encoder/layer.0/act/Div`, `.../Erf`, ...). Every intermediate value
    must have no other use; otherwise the chain is left alone.

    Before:

    ```mlir
    %0 = tg.div %x, %c1_414 : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
    %1 = tg.erf %0 : tensor<8x64xf32>
    %2 = tg.add %1, %c1 : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
    %3 = tg.mul %x, %2 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    %4 = tg.mul %3, %c0_5 : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
    ```

    After:

    ```mlir
    %4 = tg.gelu %x : tensor<8x64xf32>
    ```
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
}

def TGAutoMixedPrecision : Pass<"tg-auto-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Decide per op whether a training step runs in f16/bf16 or f32";
  let description = [{
    Colours every function of the module the way TensorFlow's Grappler AMP
    does, from the allow / infer / clear / deny lists of the precision
    interface, in time linear in ops plus edges:

    1. allow-list ops are low precision;
    2. deny spreads forward through infer and clear ops along paths that end
       at a deny or infer op;
    3. infer and clear ops lying between allow ops become low precision;
    4. an infer op fed by a low-precision op and by no deny op becomes low
       precision;
    5. low precision spreads through clear ops in both directions.

    It then rewrites the function with as few casts as it can:

    * low-precision ops read and write `compute-type` storage; allow ops
      (matmul) accumulate in f32, infer and clear ops compute in the low
      type;
    * deny-list ops compute in f32 but read whatever storage their operands
      have, and write low-precision storage when every consumer wants it;
    * a matmul writes f32 when a consumer needs f32 (the logits of the loss,
      the gradient of an optimizer update);
    * one cast per (value, type), placed right after the value's definition
      and shared by all users: a parameter is cast once per step for its
      forward and backward uses; exact round trips fold away;
    * parameters, optimizer state, function arguments and results keep
      their types.

    Before:

    ```mlir
    %h = tg.matmul %x, %w : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %y = tg.relu %h : tensor<32x128xf32>
    ```

    After (`compute-type=f16`):

    ```mlir
    %xh = tg.cast %x : tensor<32x64xf32> to tensor<32x64xf16>
    %wh = tg.cast %w : tensor<64x128xf32> to tensor<64x128xf16>
    %h = tg.matmul %xh, %wh compute(f32) : (tensor<32x64xf16>, tensor<64x128xf16>) -> tensor<32x128xf16>
    %y = tg.relu %h compute(f16) : tensor<32x128xf16>
    ```

    `report=<file>` writes every decision as JSON and `report-dot=<file>`
    the graph coloured by precision; see docs/MixedPrecision.md.
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    Option<"computeType", "compute-type", "std::string", /*default=*/"\"f16\"",
           "The low-precision type: f16 or bf16">,
    ListOption<"addAllow", "add-allow", "std::string",
               "Op names to put on the allow list">,
    ListOption<"addInfer", "add-infer", "std::string",
               "Op names to put on the infer list">,
    ListOption<"addClear", "add-clear", "std::string",
               "Op names to put on the clear list">,
    ListOption<"addDeny", "add-deny", "std::string",
               "Op names to put on the deny list">,
    ListOption<"removeAllow", "remove-allow", "std::string",
               "Op names to take off the allow list">,
    ListOption<"removeInfer", "remove-infer", "std::string",
               "Op names to take off the infer list">,
    ListOption<"removeClear", "remove-clear", "std::string",
               "Op names to take off the clear list">,
    ListOption<"removeDeny", "remove-deny", "std::string",
               "Op names to take off the deny list">,
    Option<"policyFile", "policy", "std::string", /*default=*/"\"\"",
           "JSON file with list edits and per-op overrides">,
    Option<"level", "level", "std::string", /*default=*/"\"default\"",
           "default, infer-as-deny (treat infer ops as deny) or force-all "
           "(every listed op in low precision)">,
    Option<"target", "target", "std::string", /*default=*/"\"generic\"",
           "The hardware: generic, cpu, sm_70, sm_75, sm_80, sm_86, sm_89, "
           "sm_90, sm_100 or sm_120">,
    Option<"strictPolicy", "strict-policy", "bool", /*default=*/"false",
           "Make a policy override that matches no op an error (it is a "
           "warning otherwise)">,
    Option<"changeSignature", "change-signature", "bool", /*default=*/"false",
           "Let the function signature change: arguments used only in low "
           "precision (never parameters or state) are taken in the low type, "
           "and low-precision results are returned as such">,
    Option<"reportFile", "report", "std::string", /*default=*/"\"\"",
           "Write the precision report (JSON) to this file">,
    Option<"reportDotFile", "report-dot", "std::string", /*default=*/"\"\"",
           "Write the graph coloured by precision (Graphviz DOT) to this "
           "file">,
  ];
}

def TGAssignLayout : Pass<"tg-assign-layout", "::mlir::ModuleOp"> {
  let summary = "Choose NCHW or NHWC for convolutions, pooling and batch "
                "norm, with the fewest transposes";
  let description = [{
    Convolutions, pooling and batch norm (forward and gradient ops) take
    their activations in NCHW or, with `channels_last`, in NHWC; filters
    stay OIHW. Which one is fast depends on the target and the precision:
    oneDNN's direct convolutions on the CPU (AVX2, AVX-512, AVX512_BF16)
    take NHWC and run NCHW as im2col GEMMs, and tensor cores want NHWC for
    f16 and bf16. This pass gives every such op of a function the layout
    chosen for the function, and keeps the rest of the function as it was:

    1. each op whose layout changes reads `tg.transpose`d activations and
       its activation results are transposed back;
    2. transposes sink through layout-agnostic elementwise ops (arithmetic,
       activations and their gradients, casts) whose other operands permute
       for free: scalars, per-channel or per-sample tensors whose size-1
       dimensions alone move, splat constants, broadcasts of such tensors,
       and elementwise ops of these; reductions absorb a transpose by
       renumbering their axes;
    3. a transpose of a value that permutes for free is rebuilt without
       it (a reshape where it moves only size-1 dimensions), and a
       transpose of a transpose composes (back-to-back pairs vanish).

    What stays is a transpose at each edge of the region: the input image,
    and activations that reach an op the pass cannot see through. With
    `layout=auto` the target decides: `cpu` takes NHWC at every precision
    (measured: `docs/Layout.md`); `cuda` keeps NCHW, which its direct
    convolution kernels read coalesced (NHWC pays once convolutions go to
    cuDNN's tensor-core kernels, which they do not yet). `layout=off` (and a
    function without convolutions, pooling or batch norm) changes nothing.
    Dropout and random numbers depend on element positions, so a transpose
    does not cross them.

    Before:

    ```mlir
    %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
        : (tensor<8x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<8x16x32x32xf32>
    %r = tg.relu %y : tensor<8x16x32x32xf32>
    ```

    After (`layout=nhwc`):

    ```mlir
    %0 = tg.transpose %x permutation = [0, 2, 3, 1] : ...
    %y = tg.conv2d %0, %w ... channels_last : ... -> tensor<8x32x32x16xf32>
    %r = tg.relu %y : tensor<8x32x32x16xf32>
    %1 = tg.transpose %r permutation = [0, 3, 1, 2] : ...
    ```

    `report=<file>` writes, per function, the layout, why, every op
    changed and the transposes left (count and elements per step), as JSON.
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    Option<"layout", "layout", "std::string", /*default=*/"\"auto\"",
           "auto (the target's preference), nhwc, nchw, or off">,
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "Whose preference layout=auto follows: cpu or cuda">,
    Option<"reportFile", "report", "std::string", /*default=*/"\"\"",
           "Write the layout report (JSON) to this file">,
  ];
}

def TGDataParallel : Pass<"tg-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Average the gradients of a training step across the ranks "
                "of a data-parallel run";
  let description = [{
    Rewrites every training step (`tg.train_step`) so that N processes, each
    running it on its own shard of the batch, take the same update as one
    process on the whole batch: every gradient an optimizer update
    (`OptimizerOpInterface`) reads is replaced by its mean over the ranks,
    computed by `tg.all_reduce mean`.

    * **Buckets.** Gradients are grouped in the order the backward pass
      produces them, into buckets of at most `bucket-mb` MiB of one element
      type (`0`: one all-reduce per gradient; a gradient larger than the cap
      is a bucket of its own), as PyTorch DDP does. Each `tg.all_reduce`
      sits right after the last producer of its bucket, so a runtime whose
      collectives run asynchronously can overlap it with the rest of the
      backward pass.
    * **Mixed precision.** Run before `tg-mixed-precision`: `tg.all_reduce`
      is on the allow list, so under AMP the gradients travel in the low
      type with f32 accumulation (half the bytes), and a policy with
      `all_reduce` on its deny list keeps them in f32. The precision report
      lists every bucket's decision.
    * **Loss scaling.** On an already loss-scaled step, the scaled gradients
      are reduced before `tg.unscale_grads`. Either way the overflow check
      reads the reduced gradients, identical on every rank, so every rank
      skips the same steps and keeps the same loss scale.

    The number of ranks is not in the IR: the runtime's communicator
    divides, so one compiled step serves any number of ranks (and runs
    unchanged on one). A step that already holds `tg.all_reduce` is left as
    it is.

    ```mlir
    %gw = tg.matmul %x, %dy transpose_lhs : ... -> tensor<64x128xf32>
    %gb = tg.reduce_sum %dy axes = [0] : ... -> tensor<128xf32>
    %r:2 = tg.all_reduce mean %gw, %gb
        : (tensor<64x128xf32>, tensor<128xf32>) -> (tensor<64x128xf32>, tensor<128xf32>)
    %w1 = tg.sgd_update %w, %r#0 {lr = 0.1 : f32} : ...
    ```
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "The most MiB of gradients one all-reduce sends (0: one per "
           "gradient)">,
  ];
}

def TGFoldTransposes : Pass<"tg-fold-transposes", "::mlir::ModuleOp"> {
  let summary = "Fold transposes of the last two dimensions into the matmuls "
                "that read or produce them";
  let description = [{
    A `tg.transpose` that swaps the two innermost dimensions of a matmul
    operand is the matmul's own `transpose_lhs` / `transpose_rhs`: the GEMM
    libraries read a transposed operand through its strides (oneDNN's
    memory descriptors, cuBLAS's `CUBLAS_OP_T`) instead of a copy written
    and read back. Imported models are full of them: PyTorch exports a
    linear layer's `x W^T` as a transpose of the weight and a matmul, and
    the weight's gradient then arrives transposed, as a matmul followed by
    a transpose. The pass

    * sets the matmul's flag for each `tg.matmul` or `tg.fused_matmul`
      operand produced by such a transpose, and reads the transpose's input
      instead (flipping a flag that was already set);
    * rewrites a transpose of the result of a `tg.matmul` that has no other
      use, `(op(A) op(B))^T = op(B)^T op(A)^T`, as one matmul of the
      swapped operands with both flags flipped, when neither operand is
      broadcast over the batch (a batched activation times a weight runs as
      one GEMM with the batch folded into its rows; swapped, it would be a
      GEMM per batch entry); likewise a `tg.fused_matmul` whose epilogue is
      only its alpha, which mp-runner leaves by running the pass again
      after `tg-fuse-epilogues` (a scaling that moved into alpha stood
      between a transpose and its matmul);
    * erases the transposes left without uses.

    Only the swap of the last two dimensions folds (every other dimension
    is a batch dimension and stays where it is), so batch broadcasting is
    unchanged. The products are the same sums of the same terms, in the
    order the library chooses for the strides it gets, so results can
    differ from the unfolded step in the last bits of f32.

    ```mlir
    %wt = tg.transpose %w permutation = [1, 0] : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %y = tg.matmul %x, %wt : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %g = tg.matmul %x, %dy transpose_lhs : (tensor<32x64xf32>, tensor<32x128xf32>) -> tensor<64x128xf32>
    %gt = tg.transpose %g permutation = [1, 0] : (tensor<64x128xf32>) -> tensor<128x64xf32>
    // becomes
    %y = tg.matmul %x, %w transpose_rhs : (tensor<32x64xf32>, tensor<128x64xf32>) -> tensor<32x128xf32>
    %gt = tg.matmul %dy, %x transpose_lhs : (tensor<32x128xf32>, tensor<32x64xf32>) -> tensor<128x64xf32>
    ```

    Run it after differentiation and mixed precision (the transposes of a
    training step exist only then) and before `tg-fuse-epilogues`, which
    only grows chains from plain `tg.matmul`s.

    With `report=<file>`, the pass writes what became of every
    `tg.transpose` that had readers as JSON (to a temporary file renamed
    over `<file>`): its location, function, permutation and result type;
    how many matmul operands now read it through a flag; whether the
    product it transposes was computed swapped instead, or why not (other
    readers, an operand broadcast over the batch, an epilogue that does not
    commute); whether it was erased, and if not, the ops that still read
    it (a transpose that moves more than the last two dimensions says so).
    Keys are in alphabetical order.
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    Option<"reportFile", "report", "std::string", /*default=*/"\"\"",
           "Write the report (JSON): each transpose the step reads, and "
           "whether it was folded, swapped or kept, and why">,
  ];
  let statistics = [
    Statistic<"numOperandsFolded", "operands-folded",
              "Matmul operands read through a transpose flag"
              " instead of a tg.transpose">,
    Statistic<"numProductsSwapped", "products-swapped",
              "Transposed matmul results computed as swapped matmuls">,
    Statistic<"numTransposesErased", "transposes-erased",
              "tg.transpose ops erased">,
  ];
}

def TGShadowWeights : Pass<"tg-shadow-weights", "::mlir::ModuleOp"> {
  let summary = "Keep each master weight's low-precision copy as step state, "
                "written by its optimizer update";
  let description = [{
    After mixed precision, a training step casts its f32 master weights to
    f16 or bf16 at the start of every step, reading every parameter once
    more than the update that wrote it at the end of the previous one. For
    each `tg.param` of f32 that is cast to one narrower type and updated by
    one `tg.sgd_update` or `tg.adam_update` whose new value is its
    `tg.update` result, this pass

    * adds a `tg.state` argument `amp.shadow.<name>` of the cast's type,
      marked `tg.shadow_of = "<name>"`, and makes the casts' users read it;
    * casts the updated parameter to that type right after the update and
      returns it as the shadow's `tg.update`.

    The lowering (`convert-tg-to-runtime`) then writes that cast inside the
    update's own pass over the parameter (`mpSgdUpdateWithCopy`), so the
    step no longer reads its master weights to cast them. The values are
    the same: the shadow is the parameter rounded, as the cast was. A
    runtime must set each shadow from its parameter whenever it sets the
    parameter from outside the step (initialisation, a checkpoint, weights
    from a file); `mp-runner` does, and leaves shadows out of checkpoints.

    ```mlir
    func.func @step(%w: tensor<64x32xf32> {tg.param = "w"}, ...) {
      %wb = tg.cast %w : tensor<64x32xf32> to tensor<64x32xbf16>
      ...
      %w1 = tg.sgd_update %w, %dw {lr = 0.1 : f32} : ...
      return %w1, ...
    // becomes
    func.func @step(%w: tensor<64x32xf32> {tg.param = "w"}, ...,
        %s: tensor<64x32xbf16> {tg.shadow_of = "w",
                                tg.state = "amp.shadow.w"}) {
      ... (%s where %wb was read)
      %w1 = tg.sgd_update %w, %dw {lr = 0.1 : f32} : ...
      %s1 = tg.cast %w1 : tensor<64x32xf32> to tensor<64x32xbf16>
      return %w1, ..., %s1
    ```

    Parameters that are not cast, are cast to more than one type, or have
    no single update returned as theirs are left as they are, and so are
    steps that are called (their signature stays). Run it last
    before lowering: after mixed precision, loss scaling and the layout and
    fusion passes.

    With `report=<file>`, the pass writes what it decided for every
    parameter of the steps it rewrites as JSON (to a temporary file renamed
    over `<file>`): the parameter's name, location and type, and either
    its shadow (name, type, the update that refreshes it, the casts it
    replaced) or why it has none (not f32, never cast, cast to both low
    types, no single optimizer update, another value returned as its new
    value). Steps left alone because they are called are listed with that
    reason. Keys are in alphabetical order.
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    Option<"reportFile", "report", "std::string", /*default=*/"\"\"",
           "Write the report (JSON): each parameter, and its shadow or why "
           "it has none">,
  ];
  let statistics = [
    Statistic<"numShadows", "shadows", "Parameters given a shadow">,
    Statistic<"numCastsReplaced", "casts-replaced",
              "Casts of parameters replaced by a shadow">,
  ];
}

def TGFuseEpilogues : Pass<"tg-fuse-epilogues", "::mlir::ModuleOp"> {
  let summary = "Fuse the bias, residual and activation that follow a matmul "
                "into its epilogue";
  let description = [{
    Replaces a `tg.matmul` and the elementwise ops that consume only its
    result by one `tg.fused_matmul`, whose epilogue the GEMM libraries apply
    on the accumulators (oneDNN post-ops on the CPU, cuBLASLt epilogues on
    CUDA), so the product is written once instead of being written, read
    and written again by every op after it:

    * with `scale`, `tg.mul`s by a constant scalar (an attention's
      1/sqrt(d)), which become the product's `alpha`; then either
    * with `optimizer`, a plain `tg.sgd_update` of the product (a weight
      gradient; no momentum, weight decay or `skip_if`): the parameter
      becomes the residual and `-lr` joins alpha, so the gradient is never
      stored and the update makes no pass of its own, or
    * a `tg.add` of a vector of the last dimension (the bias of a dense
      layer), then
    * with `residual`, a `tg.add` of a tensor of the product's type (the
      skip connection of a transformer block or a residual network), then
    * with `activation`, a `tg.relu` or `tg.gelu`.

    Each op joins only when the value before it has no other use, so
    nothing is computed twice. With `scale`, a matmul's operand that is a
    `tg.mul` by a constant scalar is read unscaled, its scalar moving into
    alpha, when every use of that product is an operand of a matmul (the
    attention's scaled queries and keys, and their gradients): the
    multiplication is removed. The one exception is the gradient of the
    ReLU: `tg.relu_grad` reads the pre-activation only to test `x > 0`,
    which the ReLU's output answers as well (`relu(x) > 0` exactly when
    `x > 0`), so its reads are moved to the output and the pre-activation
    need not be kept. A GELU's gradient needs the pre-activation itself, so
    in a training step a GELU stays outside.

    With `bias-grad`, a weight gradient also takes over the bias gradient
    of its layer: a `tg.reduce_sum` over every dimension but the last of
    the output gradient that the product reads with k along its rows (a
    transposed lhs, `dy^T x` for `y = x w^T + b`, or a plain rhs, `x^T dy`
    for `y = x w + b`), through reshapes that keep that last dimension,
    summing in the product's compute type. The fused op's `bias_grad`
    result replaces the sum, which the CPU's packed GEMM computes while it
    packs that operand and cuBLASLt in its BGRADA/BGRADB epilogue, instead
    of a pass of its own over the gradient. Every use of the sum must come
    after the fused op, and an operand read unscaled (`scale`) does not
    sum.

    ```mlir
    %db = tg.reduce_sum %dy axes = [0] : (tensor<512x256xf32>) -> tensor<256xf32>
    %dw = tg.matmul %dy, %x transpose_lhs : ... -> tensor<256x1024xf32>
    // becomes
    %dw, %db = tg.fused_matmul %dy, %x transpose_lhs bias_grad(lhs) : ...
    ```

    The epilogue is computed in the compute type and rounded once, so a
    fused step can differ from the unfused one by the roundings it saves
    (none in f32: the unfused ops add and rectify in f32 too). A matmul
    that accumulates in a low-precision type is left alone. Run it last,
    after differentiation, mixed precision and layout assignment: the fused
    op has no adjoint.

    ```mlir
    %mm = tg.matmul %x, %w compute(f32) : ... -> tensor<32x128xbf16>
    %z = tg.add %mm, %b compute(bf16) : (tensor<32x128xbf16>, tensor<128xbf16>) -> tensor<32x128xbf16>
    %h = tg.relu %z compute(bf16) : tensor<32x128xbf16>
    %dz = tg.relu_grad %dh, %z compute(bf16) : tensor<32x128xbf16>
    // becomes
    %h = tg.fused_matmul %x, %w bias(%b) activation(relu) compute(f32) : ...
    %dz = tg.relu_grad %dh, %h compute(bf16) : tensor<32x128xbf16>
    ```

    With `report=<file>`, the pass writes what it decided for every
    `tg.matmul` as JSON (to a temporary file renamed over `<file>`): the
    matmul's location, function, result type and compute type; the ops
    that joined its epilogue, in order, with the alpha, the operands read
    unscaled and the bias gradient taken over; and the ops that read the
    value where its chain stopped, which say why it stopped there (a GELU
    whose gradient also reads its input, a softmax, a second reader).
    Matmuls that accumulate in a low-precision type are listed with that
    reason. Keys are in alphabetical order.
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    Option<"activation", "activation", "bool", /*default=*/"true",
           "Fuse a following tg.relu or tg.gelu">,
    Option<"residual", "residual", "bool", /*default=*/"true",
           "Fuse a following tg.add of a tensor of the product's type">,
    Option<"scale", "scale", "bool", /*default=*/"true",
           "Fold multiplications of the product or its operands by "
           "constant scalars into alpha">,
    Option<"optimizer", "optimizer", "bool", /*default=*/"true",
           "Fold a plain SGD update of the product into its epilogue">,
    Option<"biasGrad", "bias-grad", "bool", /*default=*/"true",
           "Fold the sum of a weight gradient's output-gradient operand "
           "(its layer's bias gradient) into the product">,
    Option<"reportFile", "report", "std::string", /*default=*/"\"\"",
           "Write the fusion report (JSON): each matmul, what joined its "
           "epilogue, and what reads the value where its chain stopped">,
  ];
  let statistics = [
    Statistic<"numFused", "fused", "Matmuls given an epilogue">,
    Statistic<"numOpsRemoved", "ops-removed",
              "Elementwise ops folded into epilogues">,
    Statistic<"numBiasGrads", "bias-grads",
              "Bias gradients summed by a weight gradient's GEMM">,
  ];
}

def TGInsertLossScaling : Pass<"tg-insert-loss-scaling", "::mlir::ModuleOp"> {
  let summary = "Scale the loss, unscale and check the gradients, skip the "
                "step on overflow, and update the scale, all in the step";
  let description = [{
    Rewrites every training step (`tg.train_step`) with the semantics of
    `torch.amp.GradScaler`, without a host round trip:

    * the seed of the backward pass (the loss-gradient operand of every
      `LossGradientOpInterface` op) is multiplied by the scale S
      (`tg.apply_loss_scale`), so every gradient carries S;
    * the optimizer updates (`OptimizerOpInterface`) move to the end of the
      step, after one `tg.unscale_grads` over all their gradients, which
      multiplies them by 1/S and reports whether any element is not finite;
    * every update reads the unscaled gradient and skips (returns its inputs
      bit-identical) when that predicate is true;
    * in dynamic mode, `tg.update_loss_scale` backs S off on overflow and
      grows it after `growth-interval` clean steps. S and the count of good
      steps become `tg.state` arguments (`amp.loss_scale`,
      `amp.good_steps`, with their initial values in `tg.init`) updated by
      new results. In static mode S is a constant.

    Parameters and optimizer state stay f32 master weights: the pass never
    retypes them. A step already loss-scaled is left as it is.

    Before:

    ```mlir
    %seed = tg.constant dense<1.0> : tensor<f32>
    %dl = tg.softmax_cross_entropy_grad %seed, %logits, %y : ...
    ...
    %w1 = tg.sgd_update %w, %dw {lr = 0.1 : f32} : ...
    ```

    After (dynamic):

    ```mlir
    %scaled = tg.apply_loss_scale %seed, %loss_scale : ...
    %dl = tg.softmax_cross_entropy_grad %scaled, %logits, %y : ...
    ...
    %dwu, %found_inf = tg.unscale_grads %dw by %loss_scale : ...
    %w1 = tg.sgd_update %w, %dwu skip_if(%found_inf) {lr = 0.1 : f32} : ...
    %s1, %n1 = tg.update_loss_scale %loss_scale, %good_steps, %found_inf ...
    ```
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"auto\"",
           "dynamic, static, none, or auto (dynamic when the step stores "
           "any value in f16, none otherwise)">,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "The initial (dynamic) or fixed (static) scale">,
    Option<"growthFactor", "growth-factor", "double", /*default=*/"2.0",
           "Scale multiplier after growth-interval clean steps (> 1)">,
    Option<"backoffFactor", "backoff-factor", "double", /*default=*/"0.5",
           "Scale multiplier on overflow (in (0, 1))">,
    Option<"growthInterval", "growth-interval", "int64_t",
           /*default=*/"2000", "Clean steps before the scale grows (>= 1)">,
    Option<"minScale", "min-scale", "double", /*default=*/"0.0",
           "Lower bound of the scale (0: none)">,
    Option<"maxScale", "max-scale", "double", /*default=*/"0.0",
           "Upper bound of the scale (0: none)">,
  ];
}

def TGCheckNumerics : Pass<"tg-check-numerics", "::mlir::ModuleOp"> {
  let summary = "Find, inside the step, the first op that produces an "
                "infinity or a NaN, and the ranges of its operands";
  let description = [{
    Instruments every training step (`tg.train_step`) so that one run
    answers "which op produced the first non-finite value", without a host
    round trip inside the step:

    * after every checked op (every op but constants, or those `ops`
      selects, within `scope`), `tg.tensor_stats` of each floating-point
      result, and of each floating-point operand that is not already
      watched (function arguments, results of unchecked ops): min, max,
      amax, the smallest non-zero magnitude and the counts of NaNs and
      infinities;
    * a chain of `tg.record_nonfinite`, one per checked op in program
      order, that keeps the id of the first op with a non-finite result;
    * two new outputs: `numerics.first_nonfinite` (`tensor<i64>`, the op id
      or -1) and `numerics.stats` (`tensor<Nx6xf32>`, one row per watched
      value, for this step);
    * the attribute `tg.numerics` on the function, one entry per checked op:
      its id, name (location name, as in the precision report), op name,
      source location, compute type, operand and result storage types, the
      rows of `numerics.stats` that describe its operands and results,
      whether it is a gradient op (downstream of the loss seed), and the
      names to pin to f32 to keep it out of low precision (`pin`: the op
      itself, or, for a `tg.cast`, the ops that read the cast).

    Run it after `tg-mixed-precision`, so that it watches the values as they
    are stored. `scope=backward` watches the gradient ops only: the cheap
    way to learn which gradient overflowed in a step that loss scaling
    skipped. docs/Numerics.md describes how `mp-runner --check-numerics`,
    `--adapt-precision` and `--range-stats` use it.

    After (one op, `%h = tg.matmul %x, %w`, with id 3):

    ```mlir
    %none = tg.constant dense<-1> : tensor<i64>
    %sx = tg.tensor_stats %x : tensor<32x64xf16> -> tensor<1x6xf32>
    %sw = tg.tensor_stats %w : tensor<64x128xf16> -> tensor<1x6xf32>
    %h = tg.matmul %x, %w compute(f32) : ...
    %sh = tg.tensor_stats %h : tensor<32x128xf16> -> tensor<1x6xf32>
    %s3 = tg.record_nonfinite %none, %sh {op_id = 3 : i64}
        : (tensor<i64>, tensor<1x6xf32>) -> tensor<i64>
    ...
    %rows = tg.concat %sx, %sw, %sh, ... axis = 0 : ...
    return ..., %s_last, %rows : ..., tensor<i64>, tensor<Nx6xf32>
    ```
  }];
  let dependentDialects = ["::mp::tg::TGDialect"];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "Globs of op names (fc1.*) or op kinds (tg.matmul) to check "
               "(default: every op)">,
    Option<"scope", "scope", "std::string", /*default=*/"\"all\"",
           "all, forward (ops before the loss seed) or backward (the "
           "gradient ops, downstream of the loss seed)">,
  ];
}

#endif // MP_DIALECT_TG_TRANSFORMS_PASSES_TD
