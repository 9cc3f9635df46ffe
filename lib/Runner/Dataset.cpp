//===- Dataset.cpp - training data for mp-runner --------------------------===//

#include "mp/Runner/Dataset.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Support/Memory.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mp;
using namespace mp::runner;
using llvm::createStringError;

void Dataset::fillBatch(const std::map<unsigned, HostTensor> &split,
                        int64_t samples, int64_t index,
                        std::vector<HostTensor> &arguments, int64_t shard,
                        int64_t shards) const {
  for (auto &[arg, all] : split) {
    HostTensor &dst = arguments[arg];
    int64_t batch = dst.shape.empty() ? 1 : dst.shape[0];
    size_t rowBytes = dst.byteSize() / std::max<int64_t>(batch, 1);
    auto *out = static_cast<char *>(dst.data());
    const auto *in = static_cast<const char *>(all.data());
    // In 128 bits: a step index near 2^53 times the batch overflows 64.
    unsigned __int128 start =
        ((unsigned __int128)uint64_t(index) * uint64_t(shards) +
         uint64_t(shard)) *
        uint64_t(batch);
    for (int64_t r = 0; r < batch; ++r) {
      int64_t row = int64_t((start + uint64_t(r)) % uint64_t(samples));
      std::memcpy(out + r * rowBytes, in + row * rowBytes, rowBytes);
    }
  }
}

ModelShape runner::inspectModel(func::FuncOp step) {
  ModelShape shape;
  step.walk([&](Operation *op) {
    if (auto ce = dyn_cast<tg::SoftmaxCrossEntropyOp>(op))
      shape.classes = ce.getLogits().getType().getShape().back();
    if (auto gather = dyn_cast<tg::GatherOp>(op))
      if (auto ids = dyn_cast<BlockArgument>(gather.getIds())) {
        shape.vocabulary = gather.getTable().getType().getShape().front();
        if (auto name = step.getArgAttrOfType<StringAttr>(
                ids.getArgNumber(), tg::TGDialect::kInputAttr))
          shape.tokenInput = name.str();
      }
    if (auto conv = dyn_cast<tg::Conv2dOp>(op))
      shape.channelsLast |= conv.getChannelsLast();
  });
  return shape;
}

namespace {

/// A fixed random matrix [rows, cols] with N(0, 1/rows) entries.
std::vector<double> randomMatrix(std::mt19937_64 &rng, int64_t rows,
                                 int64_t cols) {
  std::normal_distribution<double> normal(0.0, 1.0 / std::sqrt(double(rows)));
  std::vector<double> m(rows * cols);
  for (double &v : m)
    v = normal(rng);
  return m;
}

int64_t rowSize(const StepTensor &t) {
  int64_t n = 1;
  for (size_t d = 1; d < t.shape.size(); ++d)
    n *= t.shape[d];
  return n;
}

std::vector<int64_t> withSamples(const StepTensor &t, int64_t samples) {
  std::vector<int64_t> shape = t.shape;
  shape[0] = samples;
  return shape;
}

} // namespace

llvm::Expected<Dataset> runner::makeSyntheticDataset(
    const StepSignature &sig, const ModelShape &model, uint64_t seed,
    int64_t trainSamples, int64_t evalSamples) {
  std::vector<unsigned> inputs, labels;
  for (auto [k, a] : llvm::enumerate(sig.arguments)) {
    if (a.role == tg::ArgRole::Input)
      inputs.push_back(k);
    if (a.role == tg::ArgRole::Label)
      labels.push_back(k);
  }
  auto unsupported = [&](const char *why) {
    return createStringError(
        std::errc::invalid_argument,
        "no built-in dataset fits this step (%s); give every input and label "
        "with --data=<name>=<file.npy>",
        why);
  };
  // A model that computes its own loss from token labels (a Hugging Face
  // model exported with labels=) takes them as an input named "labels".
  bool labelsInput = false;
  if (labels.empty() && !model.tokenInput.empty()) {
    auto named = [&](StringRef name) {
      return llvm::find_if(inputs, [&](unsigned k) {
        return sig.arguments[k].name == name;
      });
    };
    auto ids = named(model.tokenInput), given = named("labels");
    if (ids != inputs.end() && given != inputs.end() &&
        sig.arguments[*given].shape == sig.arguments[*ids].shape &&
        (sig.arguments[*given].type == MP_I32 ||
         sig.arguments[*given].type == MP_I64)) {
      labels.push_back(*given);
      inputs.erase(given);
      labelsInput = true;
    }
  }
  // A token model's other [B, T] integer inputs are attention masks (1 for
  // a token, 0 for padding).
  std::vector<unsigned> masks;
  if (inputs.size() > 1 && labels.size() == 1 && !model.tokenInput.empty()) {
    auto ids = llvm::find_if(inputs, [&](unsigned k) {
      return sig.arguments[k].name == model.tokenInput;
    });
    if (ids == inputs.end())
      return unsupported("it has several inputs");
    const StepArgument &tokens = sig.arguments[*ids];
    for (unsigned k : inputs) {
      const StepArgument &m = sig.arguments[k];
      if (k == *ids)
        continue;
      if ((m.type != MP_I32 && m.type != MP_I64) || m.shape != tokens.shape)
        return unsupported("its inputs other than the token ids must be "
                           "integer masks of the ids' shape");
      masks.push_back(k);
    }
    inputs.assign(1, *ids);
  }
  if (inputs.size() != 1 || labels.size() != 1)
    return unsupported("it needs exactly one input and one label");
  const StepArgument &x = sig.arguments[inputs[0]];
  const StepArgument &y = sig.arguments[labels[0]];
  if (x.shape.empty() || y.shape.empty() || x.shape[0] != y.shape[0])
    return unsupported("input and label must share a leading batch dimension");
  int64_t batch = x.shape[0];
  if (batch < 1)
    return unsupported("its batch dimension is empty");
  trainSamples = std::max(batch, trainSamples / batch * batch);
  evalSamples = std::max(batch, evalSamples / batch * batch);
  // Both splits of both arrays, checked before anything is allocated.
  uint64_t bytes = 0;
  std::vector<const StepArgument *> arrays{&x, &y};
  for (unsigned k : masks)
    arrays.push_back(&sig.arguments[k]);
  for (const StepArgument *a : arrays) {
    std::optional<uint64_t> perBatch = checkedByteSize(a->type, a->shape);
    uint64_t samples = uint64_t(trainSamples) + uint64_t(evalSamples), all;
    if (!perBatch || __builtin_mul_overflow(*perBatch / batch, samples, &all) ||
        __builtin_add_overflow(bytes, all, &bytes))
      bytes = UINT64_MAX;
  }
  if (llvm::Error err = checkAllocation(
          bytes, llvm::formatv("the synthetic dataset ({0} training and {1} "
                               "evaluation samples)",
                               trainSamples, evalSamples)))
    return std::move(err);

  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 12345);
  Dataset data;
  data.trainSamples = trainSamples;
  data.evalSamples = evalSamples;
  bool floatInput = x.type == MP_F32 || x.type == MP_F64 ||
                    x.type == MP_F16 || x.type == MP_BF16;
  bool intLabel = y.type == MP_I32 || y.type == MP_I64;

  if (floatInput && intLabel && y.shape.size() == 1 && x.shape.size() == 4) {
    // Images: a class's pattern somewhere in noise.
    int64_t classes = model.classes;
    if (classes < 2)
      return unsupported("the class count could not be read off a "
                         "tg.softmax_cross_entropy");
    bool last = model.channelsLast;
    int64_t channels = last ? x.shape[3] : x.shape[1],
            height = last ? x.shape[1] : x.shape[2],
            width = last ? x.shape[2] : x.shape[3];
    int64_t size = std::min<int64_t>({5, height, width});
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> patterns(classes * channels * size * size);
    for (double &v : patterns)
      v = normal(rng);
    std::uniform_int_distribution<int64_t> pickClass(0, classes - 1),
        pickY(0, height - size), pickX(0, width - size);
    auto make = [&](int64_t n, std::map<unsigned, HostTensor> &split) {
      HostTensor xs(x.type, withSamples(x, n)), ys(y.type, {n});
      int64_t pixels = channels * height * width;
      for (int64_t s = 0; s < n; ++s) {
        int64_t k = pickClass(rng), y0 = pickY(rng), x0 = pickX(rng);
        auto at = [&](int64_t c, int64_t yy, int64_t xx) {
          return s * pixels + (last ? (yy * width + xx) * channels + c
                                    : (c * height + yy) * width + xx);
        };
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t yy = 0; yy < height; ++yy)
            for (int64_t xx = 0; xx < width; ++xx) {
              double v = 0.5 * normal(rng);
              if (yy >= y0 && yy < y0 + size && xx >= x0 && xx < x0 + size)
                v += patterns[((k * channels + c) * size + (yy - y0)) * size +
                              (xx - x0)];
              xs.setFloat(at(c, yy, xx), v);
            }
        ys.setInt(s, k);
      }
      split[inputs[0]] = std::move(xs);
      split[labels[0]] = std::move(ys);
    };
    make(trainSamples, data.train);
    make(evalSamples, data.eval);
    data.description = "synthetic images: one of " + std::to_string(classes) +
                       " random " + std::to_string(size) + "x" +
                       std::to_string(size) + " patterns at a random place "
                       "in noise (" +
                       std::to_string(channels) + "x" +
                       std::to_string(height) + "x" + std::to_string(width) +
                       (last ? ", NHWC)" : ", NCHW)");
    return data;
  }

  if (floatInput && intLabel && y.shape.size() == 1) {
    // Classification by a random teacher network.
    int64_t features = rowSize(x), hidden = 64, classes = model.classes;
    if (classes < 2)
      return unsupported("the class count could not be read off a "
                         "tg.softmax_cross_entropy");
    std::vector<double> w1 = randomMatrix(rng, features, hidden);
    std::vector<double> w2 = randomMatrix(rng, hidden, classes);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> b1(hidden);
    for (double &v : b1)
      v = 0.5 * normal(rng);
    auto make = [&](int64_t n, std::map<unsigned, HostTensor> &split) {
      HostTensor xs(x.type, withSamples(x, n)), ys(y.type, {n});
      std::vector<double> row(features), h(hidden);
      for (int64_t s = 0; s < n; ++s) {
        for (int64_t f = 0; f < features; ++f) {
          row[f] = normal(rng);
          xs.setFloat(s * features + f, row[f]);
        }
        for (int64_t j = 0; j < hidden; ++j) {
          double acc = b1[j];
          for (int64_t f = 0; f < features; ++f)
            acc += row[f] * w1[f * hidden + j];
          h[j] = std::max(acc, 0.0);
        }
        int64_t best = 0;
        double bestValue = -INFINITY;
        for (int64_t c = 0; c < classes; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < hidden; ++j)
            acc += h[j] * w2[j * classes + c];
          if (acc > bestValue) {
            bestValue = acc;
            best = c;
          }
        }
        ys.setInt(s, best);
      }
      split[inputs[0]] = std::move(xs);
      split[labels[0]] = std::move(ys);
    };
    make(trainSamples, data.train);
    make(evalSamples, data.eval);
    data.description = "synthetic classification: " + std::to_string(features) +
                       " features, " + std::to_string(classes) +
                       " classes from a random ReLU teacher";
    return data;
  }

  bool perToken = x.shape == y.shape;
  if (!floatInput && intLabel && x.shape.size() == 2 &&
      (perToken || y.shape.size() == 1)) {
    // Previous-token prediction over a random token stream, or (one label
    // per sequence) the class of the first token. Masks pad each sequence
    // by up to half its length, on the left for odd samples and on the
    // right for even ones, as tokenizers of either side do.
    int64_t vocabulary = model.vocabulary, classes = model.classes;
    if (vocabulary < 2 || classes < 2)
      return unsupported("the vocabulary or class count could not be read "
                         "off a tg.gather of the input and a "
                         "tg.softmax_cross_entropy");
    int64_t length = x.shape[1];
    std::uniform_int_distribution<int64_t> token(0, vocabulary - 1);
    std::uniform_int_distribution<int64_t> padding(0, length / 2);
    auto make = [&](int64_t n, std::map<unsigned, HostTensor> &split) {
      HostTensor xs(x.type, withSamples(x, n)), ys(y.type, withSamples(y, n));
      for (int64_t s = 0; s < n; ++s)
        for (int64_t t = 0; t < length; ++t) {
          int64_t id = token(rng);
          xs.setInt(s * length + t, id);
          int64_t previous = t == 0 ? id : xs.getInt(s * length + t - 1);
          if (perToken)
            ys.setInt(s * length + t, previous % classes);
          else if (t == 0)
            ys.setInt(s, id % classes);
        }
      for (unsigned k : masks) {
        HostTensor ms(sig.arguments[k].type,
                      withSamples(sig.arguments[k], n));
        for (int64_t s = 0; s < n; ++s) {
          int64_t pad = padding(rng);
          for (int64_t t = 0; t < length; ++t) {
            bool token = s % 2 ? t >= pad : t < length - pad;
            ms.setInt(s * length + t, token);
            // Padding has no next-token label.
            if (perToken && !token)
              ys.setInt(s * length + t, kIgnoredLabel);
          }
        }
        split[k] = std::move(ms);
      }
      split[inputs[0]] = std::move(xs);
      split[labels[0]] = std::move(ys);
    };
    make(trainSamples, data.train);
    make(evalSamples, data.eval);
    data.description =
        std::string("synthetic sequences: ") +
        (perToken ? (labelsInput ? "labels are the previous token, which "
                                   "the model's own loss shifts"
                                 : "predict the previous token")
                  : "classify by the first token") +
        " (" + std::to_string(vocabulary) + " tokens, length " +
        std::to_string(length) +
        (masks.empty() ? "" : ", padded masks") + ")";
    return data;
  }

  if (floatInput && !intLabel && y.shape.size() == 2 && x.shape.size() == 2) {
    int64_t features = x.shape[1], outputs = y.shape[1];
    std::vector<double> a = randomMatrix(rng, features, outputs);
    std::normal_distribution<double> normal(0.0, 1.0);
    auto make = [&](int64_t n, std::map<unsigned, HostTensor> &split) {
      HostTensor xs(x.type, withSamples(x, n)), ys(y.type, withSamples(y, n));
      for (int64_t s = 0; s < n; ++s) {
        for (int64_t f = 0; f < features; ++f)
          xs.setFloat(s * features + f, normal(rng));
        for (int64_t o = 0; o < outputs; ++o) {
          double acc = 0;
          for (int64_t f = 0; f < features; ++f)
            acc += xs.getFloat(s * features + f) * a[f * outputs + o];
          ys.setFloat(s * outputs + o, std::tanh(acc));
        }
      }
      split[inputs[0]] = std::move(xs);
      split[labels[0]] = std::move(ys);
    };
    make(trainSamples, data.train);
    make(evalSamples, data.eval);
    data.description = "synthetic regression: tanh of a random linear map";
    return data;
  }
  return unsupported("its inputs match none of the built-in tasks");
}

/// Reads one `name=path.npy` per input and label of `sig` into `split`;
/// returns the common sample count.
static llvm::Expected<int64_t>
loadNpyArrays(const StepSignature &sig, llvm::ArrayRef<std::string> specs,
              llvm::StringRef option, std::map<unsigned, HostTensor> &split,
              std::map<unsigned, std::string> &sources,
              std::vector<std::string> &warnings) {
  int64_t samples = -1;
  for (const std::string &spec : specs) {
    auto [name, path] = llvm::StringRef(spec).split('=');
    if (path.empty())
      return createStringError(std::errc::invalid_argument,
                               "%s expects <name>=<file.npy>, got '%s'",
                               option.str().c_str(), spec.c_str());
    std::optional<unsigned> arg = sig.findArgument(name);
    if (!arg || (sig.arguments[*arg].role != tg::ArgRole::Input &&
                 sig.arguments[*arg].role != tg::ArgRole::Label))
      return createStringError(std::errc::invalid_argument,
                               "%s: the step has no input or label named "
                               "'%s'",
                               option.str().c_str(), name.str().c_str());
    if (split.count(*arg))
      return createStringError(std::errc::invalid_argument,
                               "%s: '%s' is given twice", option.str().c_str(),
                               name.str().c_str());
    llvm::Expected<HostTensor> array = readNpy(path);
    if (!array)
      return array.takeError();
    const StepArgument &a = sig.arguments[*arg];
    bool shapeOk = array->type == a.type && !a.shape.empty() &&
                   array->shape.size() == a.shape.size() &&
                   std::equal(a.shape.begin() + 1, a.shape.end(),
                              array->shape.begin() + 1) &&
                   array->shape[0] >= a.shape[0];
    if (!shapeOk) {
      std::string want = std::string(elementTypeName(a.type)) + "[N";
      for (size_t d = 1; d < a.shape.size(); ++d)
        want += ", " + std::to_string(a.shape[d]);
      want += "]";
      return createStringError(
          std::errc::invalid_argument,
          "%s: holds %s, but '%s' needs %s with N >= %lld (its batch)",
          path.str().c_str(), array->describe().c_str(), name.str().c_str(),
          want.c_str(), (long long)(a.shape.empty() ? 1 : a.shape[0]));
    }
    if (samples >= 0 && array->shape[0] != samples)
      return createStringError(std::errc::invalid_argument,
                               "%s: has %lld samples, other arrays %lld",
                               path.str().c_str(),
                               (long long)array->shape[0], (long long)samples);
    samples = array->shape[0];
    int64_t first = 0;
    if (int64_t bad = countNonFinite(*array, &first)) {
      int64_t perSample = array->numElements() / std::max<int64_t>(samples, 1);
      warnings.push_back(llvm::formatv(
          "{0} holds {1} NaN or infinite values (the first in sample {2}); "
          "training on them as given",
          path, bad, first / std::max<int64_t>(perSample, 1)));
    }
    split[*arg] = std::move(*array);
    sources[*arg] = path.str();
  }
  for (auto [k, a] : llvm::enumerate(sig.arguments))
    if ((a.role == tg::ArgRole::Input || a.role == tg::ArgRole::Label) &&
        !split.count(k))
      return createStringError(std::errc::invalid_argument,
                               "%s: no array for '%s'", option.str().c_str(),
                               a.name.c_str());
  return samples;
}

llvm::Expected<Dataset>
runner::loadNpyDataset(const StepSignature &sig,
                       llvm::ArrayRef<std::string> specs,
                       llvm::ArrayRef<std::string> evalSpecs) {
  Dataset data;
  llvm::Expected<int64_t> samples =
      loadNpyArrays(sig, specs, "--data", data.train, data.trainSource,
                    data.warnings);
  if (!samples)
    return samples.takeError();
  data.trainSamples = *samples;
  if (evalSpecs.empty()) {
    data.eval = data.train;
    data.evalSource = data.trainSource;
    data.evalSamples = data.trainSamples;
    data.evalHeldOut = false;
    data.description = "arrays from .npy files (" + std::to_string(*samples) +
                       " samples; no --eval-data: accuracy is measured on "
                       "the training arrays)";
    return data;
  }
  llvm::Expected<int64_t> evalSamples =
      loadNpyArrays(sig, evalSpecs, "--eval-data", data.eval, data.evalSource,
                    data.warnings);
  if (!evalSamples)
    return evalSamples.takeError();
  data.evalSamples = *evalSamples;
  data.description = "arrays from .npy files (" + std::to_string(*samples) +
                     " training samples, " + std::to_string(*evalSamples) +
                     " held out)";
  return data;
}

llvm::Error runner::checkLabels(const StepSignature &sig,
                                const ModelShape &model, const Dataset &data) {
  if (model.classes < 1)
    return llvm::Error::success();
  auto check = [&](const std::map<unsigned, HostTensor> &split,
                   const std::map<unsigned, std::string> &sources,
                   bool training) -> llvm::Error {
    for (auto &[arg, array] : split) {
      const StepArgument &a = sig.arguments[arg];
      if (a.role != tg::ArgRole::Label ||
          (array.type != MP_I32 && array.type != MP_I64))
        continue;
      int64_t perSample = array.shape.empty() || array.shape[0] == 0
                              ? 1
                              : array.numElements() / array.shape[0];
      int64_t batch = a.shape.empty() ? 1 : a.shape[0];
      for (int64_t i = 0, e = array.numElements(); i < e; ++i) {
        int64_t label = array.getInt(i);
        if ((label >= 0 && label < model.classes) || label == kIgnoredLabel)
          continue;
        int64_t sample = i / perSample;
        auto source = sources.find(arg);
        std::string where =
            source != sources.end() ? source->second : "'" + a.name + "'";
        std::string at = "sample " + std::to_string(sample);
        if (perSample > 1)
          at += ", position " + std::to_string(i % perSample);
        std::string use =
            training ? "first read by step " +
                           std::to_string(sample / batch + 1) +
                           " at batch position " +
                           std::to_string(sample % batch)
                     : "in evaluation batch " +
                           std::to_string(sample / batch + 1) +
                           " at position " + std::to_string(sample % batch);
        return createStringError(
            std::errc::invalid_argument,
            "%s: %s has label %lld, outside [0, %lld) (the classes of the "
            "logits) and not -100 (an ignored position); %s",
            where.c_str(), at.c_str(), (long long)label,
            (long long)model.classes, use.c_str());
      }
    }
    return llvm::Error::success();
  };
  if (llvm::Error err = check(data.train, data.trainSource, true))
    return err;
  if (data.evalHeldOut)
    return check(data.eval, data.evalSource, false);
  return llvm::Error::success();
}
