//===- Trainer.cpp - drives a compiled step -------------------------------===//

#include "mp/Runner/Trainer.h"

#include "mp/Support/Memory.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <random>

using namespace mp;
using namespace mp::runner;
using llvm::createStringError;

std::string runner::formatScale(const StepRecord &r) {
  if (!r.hasLossScale)
    return "-";
  return llvm::formatv("{0}", r.lossScale).str();
}

static uint64_t fnv1a(const void *data, size_t size, uint64_t h) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

Trainer::Trainer(std::string label, std::unique_ptr<CompiledStep> step)
    : name(std::move(label)), compiled(std::move(step)) {
  const StepSignature &sig = compiled->signature();
  for (const StepArgument &a : sig.arguments)
    buffers.emplace_back(a.type, a.shape);
  for (unsigned r : sig.destinations)
    buffers.emplace_back(sig.results[r].type, sig.results[r].shape);
  scaleArg = sig.findArgument("amp.loss_scale");
  goodStepsArg = sig.findArgument("amp.good_steps");
  foundInfResult = sig.findOutput("amp.found_inf");
  logitsResult = sig.findOutput("logits");
  firstNonfiniteResult = sig.findOutput("numerics.first_nonfinite");
  statsResult = sig.findOutput("numerics.stats");
  for (auto [k, a] : llvm::enumerate(sig.arguments))
    if (a.role == tg::ArgRole::Label)
      labelArg = k;
}

/// Checks that the host copies of the step's buffers fit in memory before
/// they are allocated: a batch size from an option can ask for petabytes.
static llvm::Error checkBufferSizes(const StepSignature &sig) {
  uint64_t total = 0, largest = 0;
  std::string largestName;
  auto add = [&](const StepTensor &t) {
    std::optional<uint64_t> bytes = checkedByteSize(t.type, t.shape);
    uint64_t b = bytes ? *bytes : UINT64_MAX;
    if (b >= largest) {
      largest = b;
      largestName = "'" + t.name + "' " + describeShape(t.type, t.shape);
    }
    if (__builtin_add_overflow(total, b, &total))
      total = UINT64_MAX;
  };
  for (const StepArgument &a : sig.arguments)
    add(a);
  for (unsigned r : sig.destinations)
    add(sig.results[r]);
  return checkAllocation(total,
                         "the step's tensors (the largest, " + largestName +
                             ", is " + formatBytes(largest) + ")");
}

llvm::Expected<std::unique_ptr<Trainer>>
Trainer::create(std::string label, std::unique_ptr<CompiledStep> step,
                Backend backend, bool useGraphs) {
  if (llvm::Error err = checkBufferSizes(step->signature()))
    return std::move(err);
  std::unique_ptr<Trainer> trainer(
      new Trainer(std::move(label), std::move(step)));
  auto executor = Executor::create(backend, *trainer->compiled,
                                   trainer->buffers, useGraphs);
  if (!executor)
    return executor.takeError();
  trainer->executor = std::move(*executor);
  return trainer;
}

// The executor goes first: it may still hold the compiled step's constants.
Trainer::~Trainer() { executor.reset(); }

int64_t Trainer::bufferBytes() const {
  int64_t bytes = 0;
  for (const HostTensor &t : buffers)
    bytes += int64_t(t.byteSize());
  return bytes;
}

bool Trainer::isBatch(unsigned arg) const {
  tg::ArgRole role = signature().arguments[arg].role;
  return role == tg::ArgRole::Input || role == tg::ArgRole::Label;
}

llvm::Error Trainer::uploadPersistent() {
  // Shadows follow their parameters: whatever set the parameters on the
  // host (initialisation, a checkpoint, weights from a file) sets them too.
  for (auto [k, a] : llvm::enumerate(signature().arguments))
    if (a.shadowOf) {
      const HostTensor &param = buffers[*a.shadowOf];
      HostTensor &shadow = buffers[k];
      const std::string &of = signature().arguments[*a.shadowOf].name;
      if (mpConvert(param.data(), param.type, shadow.data(), shadow.type,
                    param.numElements()) != MP_OK)
        return createStringError(std::errc::invalid_argument,
                                 "cannot round '%s' into its shadow '%s'",
                                 of.c_str(), a.name.c_str());
    }
  for (unsigned k = 0; k < signature().arguments.size(); ++k)
    if (isPersistent(k))
      if (llvm::Error err = executor->upload(k))
        return err;
  return llvm::Error::success();
}

llvm::Error Trainer::downloadPersistent() {
  for (unsigned k = 0; k < signature().arguments.size(); ++k)
    if (isPersistent(k))
      if (llvm::Error err = executor->download(k))
        return err;
  return executor->finish();
}

llvm::Error Trainer::uploadBatch() {
  for (unsigned k = 0; k < signature().arguments.size(); ++k)
    if (isBatch(k))
      if (llvm::Error err = executor->upload(k))
        return err;
  return executor->finish();
}

llvm::Error Trainer::runStep(llvm::ArrayRef<unsigned> results) {
  if (llvm::Error err = executor->run())
    return err;
  for (unsigned k : results)
    if (llvm::Error err = executor->download(k))
      return err;
  return executor->finish();
}

bool Trainer::isPersistent(unsigned arg) const {
  tg::ArgRole role = signature().arguments[arg].role;
  return role == tg::ArgRole::Param || role == tg::ArgRole::State;
}

unsigned Trainer::resultBuffer(unsigned r) const {
  const StepSignature &sig = signature();
  auto it = llvm::find(sig.destinations, r);
  return sig.arguments.size() + (it - sig.destinations.begin());
}

const HostTensor &Trainer::result(unsigned r) const {
  return buffers[resultBuffer(r)];
}

llvm::Error Trainer::initialize(uint64_t seed) {
  for (auto [k, a] : llvm::enumerate(signature().arguments)) {
    if (!isPersistent(k))
      continue;
    HostTensor &t = buffers[k];
    if (a.init) {
      if (llvm::Error err = assignElements(t, a.init, a.name))
        return err;
      continue;
    }
    if (a.role != tg::ArgRole::Param || a.shape.size() < 2) {
      std::fill(t.storage.begin(), t.storage.end(), 0);
      continue;
    }
    // Seeded by the name, so variants of one model (FP32, AMP) start equal.
    std::mt19937_64 rng(fnv1a(a.name.data(), a.name.size(),
                              0xcbf29ce484222325ull ^ seed));
    // Matrices are [in, out]; convolution filters [out, in / groups, kh,
    // kw], whose fan-in is the rest of the filter.
    int64_t fanIn = a.shape.size() == 4 ? t.numElements() / a.shape.front()
                                        : t.numElements() / a.shape.back();
    double bound = 1.0 / std::sqrt(double(fanIn));
    std::uniform_real_distribution<double> uniform(-bound, bound);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.setFloat(i, uniform(rng));
  }
  return uploadPersistent();
}

llvm::Expected<uint64_t> Trainer::weightsHash(bool parametersOnly) {
  if (llvm::Error err = downloadPersistent())
    return std::move(err);
  uint64_t h = 0xcbf29ce484222325ull;
  for (auto [k, a] : llvm::enumerate(signature().arguments))
    if (isPersistent(k) && !llvm::StringRef(a.name).starts_with("amp.") &&
        (!parametersOnly || a.role == tg::ArgRole::Param))
      h = fnv1a(buffers[k].data(), buffers[k].byteSize(), h);
  return h;
}

llvm::Expected<StepRecord> Trainer::step(int64_t index, const Dataset &data) {
  int64_t shard = ranks ? ranks->rank() : 0, shards = ranks ? ranks->size() : 1;
  data.fillBatch(data.train, data.trainSamples, index, buffers, shard, shards);
  // What the record reads: the loss, the skip predicate, the loss scale.
  const StepSignature &sig = signature();
  llvm::SmallVector<unsigned> wanted{resultBuffer(sig.lossResult)};
  if (foundInfResult)
    wanted.push_back(resultBuffer(*foundInfResult));
  if (scaleArg)
    wanted.push_back(*scaleArg);
  if (goodStepsArg)
    wanted.push_back(*goodStepsArg);
  if (firstNonfiniteResult)
    wanted.push_back(resultBuffer(*firstNonfiniteResult));
  // The step time covers the step and reading its scalars back, not the
  // batch's upload (a data loader's job, overlapped in real training).
  if (llvm::Error err = uploadBatch())
    return std::move(err);
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error err = runStep(wanted))
    return std::move(err);
  auto end = std::chrono::steady_clock::now();
  StepRecord record;
  record.step = index + 1;
  record.milliseconds =
      std::chrono::duration<double, std::milli>(end - start).count();
  record.loss = result(signature().lossResult).getFloat(0);
  if (scaleArg) {
    record.hasLossScale = true;
    record.lossScale = buffers[*scaleArg].getFloat(0);
  }
  if (goodStepsArg)
    record.goodSteps = buffers[*goodStepsArg].getInt(0);
  if (foundInfResult)
    record.skipped = result(*foundInfResult).getInt(0) != 0;
  if (firstNonfiniteResult)
    record.firstNonfinite = result(*firstNonfiniteResult).getInt(0);
  if (ranks && ranks->size() > 1) {
    // Every rank reduced the same gradients, so every rank must have
    // skipped alike and hold the same scale; the loss is the global mean.
    // One message: (skipped, scale, loss) of every rank.
    llvm::Expected<std::vector<double>> all = ranks->gather(
        {double(record.skipped), record.lossScale, record.loss},
        "step's results (skip flag, loss scale, loss)");
    if (!all)
      return all.takeError();
    double loss = 0;
    for (int r = 0; r < ranks->size(); ++r) {
      const double *theirs = all->data() + 3 * r;
      static const char *const what[] = {"skipping the step",
                                         "the loss scale"};
      for (int k = 0; k < 2; ++k) {
        double a = (*all)[k], b = theirs[k];
        if (!(a == b || (std::isnan(a) && std::isnan(b))))
          return llvm::createStringError(
              std::errc::state_not_recoverable,
              "step %lld: the ranks disagree on %s (rank 0: %g, rank %d: %g)",
              (long long)record.step, what[k], a, r, b);
      }
      loss += theirs[2];
    }
    record.loss = loss / ranks->size();
  }
  skipped += record.skipped;
  record.skippedTotal = skipped;
  return record;
}

int64_t Trainer::evaluationBatches(const Dataset &data,
                                   int64_t maxSamples) const {
  const StepSignature &sig = signature();
  if (!logitsResult || !labelArg || sig.forwardEntry.empty())
    return 0;
  const HostTensor &logits = result(*logitsResult);
  const HostTensor &labels = buffers[*labelArg];
  if (logits.shape.empty() ||
      labels.numElements() * logits.shape.back() != logits.numElements() ||
      (labels.type != MP_I32 && labels.type != MP_I64))
    return 0;
  int64_t batch = labels.shape.empty() ? 1 : labels.shape.front();
  int64_t samples = data.evalSamples;
  if (maxSamples > 0)
    samples = std::min(samples, maxSamples);
  return std::max<int64_t>(samples / batch, samples > 0 ? 1 : 0);
}

llvm::Expected<std::vector<bool>>
Trainer::evaluate(const Dataset &data, int64_t maxSamples,
                  llvm::function_ref<void(int64_t, int64_t)> progress) {
  int64_t batches = evaluationBatches(data, maxSamples);
  const HostTensor &logits = result(*logitsResult);
  const HostTensor &labels = buffers[*labelArg];
  int64_t classes = logits.shape.back();
  // Per position of every batch: 0 not scored (or another rank's batch),
  // 1 wrong, 2 right. Ranks take every size()-th batch and sum.
  int64_t perBatch = labels.numElements();
  std::vector<int64_t> scores(size_t(batches * perBatch), 0);
  int64_t shard = ranks ? ranks->rank() : 0, shards = ranks ? ranks->size() : 1;
  for (int64_t b = 0; b < batches; ++b) {
    if (b % shards != shard) {
      progress(b + 1, batches);
      continue;
    }
    data.fillBatch(data.eval, data.evalSamples, b, buffers);
    if (llvm::Error err = uploadBatch())
      return std::move(err);
    if (llvm::Error err = executor->runForward())
      return std::move(err);
    if (llvm::Error err = executor->download(resultBuffer(*logitsResult)))
      return std::move(err);
    if (llvm::Error err = executor->finish())
      return std::move(err);
    for (int64_t i = 0; i < labels.numElements(); ++i) {
      // Ignored positions (a label outside [0, classes), such as -100 on
      // padding) are not scored, as the loss does not count them.
      int64_t label = labels.getInt(i);
      if (label < 0 || label >= classes)
        continue;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (logits.getFloat(i * classes + c) >
            logits.getFloat(i * classes + best))
          best = c;
      scores[b * perBatch + i] = best == label ? 2 : 1;
    }
    progress(b + 1, batches);
  }
  if (ranks && shards > 1)
    if (llvm::Error err = ranks->sum(scores))
      return std::move(err);
  std::vector<bool> correct;
  for (int64_t s : scores)
    if (s)
      correct.push_back(s == 2);
  return correct;
}

llvm::Expected<Checkpoint>
Trainer::checkpoint(int64_t step, std::map<std::string, std::string> metadata) {
  if (llvm::Error err = downloadPersistent())
    return std::move(err);
  Checkpoint ckpt;
  // A shadow is its parameter rounded: not saved, set again on restore.
  for (auto [k, a] : llvm::enumerate(signature().arguments))
    if (isPersistent(k) && !a.shadowOf)
      ckpt.tensors[a.name] = buffers[k];
  ckpt.metadata = std::move(metadata);
  ckpt.metadata["step"] = std::to_string(step);
  ckpt.metadata["skipped_steps"] = std::to_string(skipped);
  ckpt.metadata["entry"] = signature().entry;
  return ckpt;
}

llvm::Expected<unsigned> Trainer::loadWeights(const Checkpoint &weights,
                                              llvm::StringRef path) {
  auto fail = [&](const llvm::Twine &why) {
    return createStringError(std::errc::invalid_argument, "%s: %s",
                             path.str().c_str(), why.str().c_str());
  };
  unsigned loaded = 0;
  for (const auto &[name, tensor] : weights.tensors) {
    std::optional<unsigned> arg = signature().findArgument(name);
    if (!arg || signature().arguments[*arg].role != tg::ArgRole::Param)
      return fail("holds '" + name + "', which is not a parameter of '" +
                  signature().entry + "'");
    HostTensor &t = buffers[*arg];
    bool floats = tensor.type != MP_I32 && tensor.type != MP_I64 &&
                  tensor.type != MP_I1;
    if (tensor.shape != t.shape || !floats)
      return fail("'" + name + "' is " + tensor.describe() +
                  ", the parameter is " + t.describe());
    int64_t first = 0;
    if (int64_t bad = countNonFinite(tensor, &first))
      return fail("'" + name + "' holds " + llvm::Twine(bad) +
                  " NaN or infinite values (the first at element " +
                  llvm::Twine(first) + ")");
    if (tensor.type == t.type)
      llvm::copy(tensor.storage, t.storage.begin());
    else
      for (int64_t i = 0, n = t.numElements(); i < n; ++i)
        t.setFloat(i, tensor.getFloat(i));
    ++loaded;
  }
  if (llvm::Error err = uploadPersistent())
    return std::move(err);
  return loaded;
}

llvm::Expected<std::vector<float>> Trainer::numericsStats() {
  if (!statsResult)
    return std::vector<float>();
  unsigned k = resultBuffer(*statsResult);
  if (llvm::Error err = executor->download(k))
    return std::move(err);
  if (llvm::Error err = executor->finish())
    return std::move(err);
  const HostTensor &t = buffers[k];
  std::vector<float> rows(t.numElements());
  for (int64_t i = 0; i < t.numElements(); ++i)
    rows[i] = float(t.getFloat(i));
  return rows;
}

llvm::Expected<CarriedState> Trainer::adoptState(Trainer &from) {
  if (llvm::Error err = from.downloadPersistent())
    return std::move(err);
  CarriedState state;
  state.hashBefore = state.hashAfter = 0xcbf29ce484222325ull;
  std::vector<unsigned> carried;
  for (auto [k, a] : llvm::enumerate(signature().arguments)) {
    if (!isPersistent(k) || a.shadowOf)
      continue;
    std::optional<unsigned> source = from.signature().findArgument(a.name);
    if (!source || !from.isPersistent(*source)) {
      state.initialised.push_back(a.name);
      continue;
    }
    const HostTensor &src = from.buffers[*source];
    HostTensor &dst = buffers[k];
    if (src.type != dst.type || src.shape != dst.shape)
      return createStringError(std::errc::invalid_argument,
                               "cannot carry '%s' over: it is %s in '%s' "
                               "and %s in '%s'",
                               a.name.c_str(), src.describe().c_str(),
                               from.label().c_str(), dst.describe().c_str(),
                               label().c_str());
    llvm::copy(src.storage, dst.storage.begin());
    state.hashBefore = fnv1a(src.data(), src.byteSize(), state.hashBefore);
    carried.push_back(k);
  }
  if (llvm::Error err = uploadPersistent())
    return std::move(err);
  // Read back what the new step will use, so the hash checks the upload.
  if (llvm::Error err = downloadPersistent())
    return std::move(err);
  for (unsigned k : carried)
    state.hashAfter =
        fnv1a(buffers[k].data(), buffers[k].byteSize(), state.hashAfter);
  state.carried = carried.size();
  skipped = from.skipped;
  return state;
}

llvm::Expected<int64_t> Trainer::restore(const Checkpoint &ckpt,
                                         llvm::StringRef path,
                                         bool ampStateMayBeMissing) {
  auto fail = [&](const llvm::Twine &why) {
    return createStringError(std::errc::invalid_argument, "%s: %s",
                             path.str().c_str(), why.str().c_str());
  };
  auto entry = ckpt.metadata.find("entry");
  if (entry == ckpt.metadata.end() || entry->second != signature().entry)
    return fail("was written for step function '" +
                (entry == ckpt.metadata.end() ? std::string("?")
                                              : entry->second) +
                "', not '" + signature().entry + "'");
  int64_t step = 0;
  auto stepIt = ckpt.metadata.find("step");
  if (stepIt == ckpt.metadata.end() ||
      llvm::StringRef(stepIt->second).getAsInteger(10, step) || step < 0)
    return fail("has no valid 'step' in its metadata");
  if (step > kMaxSteps)
    return fail("its step " + llvm::Twine(step) +
                " is out of range (a run counts at most 2^53 steps)");
  for (auto [k, a] : llvm::enumerate(signature().arguments)) {
    if (!isPersistent(k) || a.shadowOf)
      continue;
    auto it = ckpt.tensors.find(a.name);
    if (it == ckpt.tensors.end() && ampStateMayBeMissing &&
        llvm::StringRef(a.name).starts_with("amp."))
      continue;
    if (it == ckpt.tensors.end())
      return fail("has no tensor '" + a.name + "'");
    if (it->second.type != buffers[k].type ||
        it->second.shape != buffers[k].shape)
      return fail("tensor '" + a.name + "' is " + it->second.describe() +
                  ", the step needs " + buffers[k].describe());
    int64_t first = 0;
    if (int64_t bad = countNonFinite(it->second, &first))
      return fail("tensor '" + a.name + "' holds " + llvm::Twine(bad) +
                  " NaN or infinite values (the first at element " +
                  llvm::Twine(first) +
                  "): the run that wrote it had diverged; resume from an "
                  "earlier checkpoint");
    // In place: the executor's buffers (and a captured graph) keep
    // pointing at these.
    llvm::copy(it->second.storage, buffers[k].storage.begin());
  }
  auto skippedIt = ckpt.metadata.find("skipped_steps");
  if (skippedIt != ckpt.metadata.end())
    (void)llvm::StringRef(skippedIt->second).getAsInteger(10, skipped);
  if (llvm::Error err = uploadPersistent())
    return std::move(err);
  return step;
}
