//===- Manifest.cpp - The compiled model's manifest as JSON ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Manifest.h"

#include <nlohmann/json.hpp>

using namespace infir2::rt;
using json = nlohmann::ordered_json;

namespace {

constexpr const char *kSlotKinds[] = {"param",   "master", "moment1",
                                      "moment2", "grad",   "input",
                                      "output",  "cache",  "fp8_cache"};

constexpr const char *kFormat = "infir2-manifest";
constexpr const char *kWhat = "the compiled model's manifest";

/// Reads typed fields of a JSON object, naming a missing or mistyped one by
/// its path. The first problem sticks; later reads are no-ops.
class Reader {
public:
  explicit Reader(std::string &error) : error_(error) {}
  bool ok() const { return error_.empty(); }

  const json *field(const json &obj, const std::string &path, const char *key,
                    bool optional = false) {
    if (!ok())
      return nullptr;
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (!optional)
        error_ = std::string(kWhat) + ": " + join(path, key) + " is missing";
      return nullptr;
    }
    return &*it;
  }
  void mistyped(const std::string &path, const char *key, const char *want) {
    if (ok())
      error_ = std::string(kWhat) + ": " + join(path, key) + " must be " + want;
  }
  void integer(const json &obj, const std::string &path, const char *key,
               int64_t &out) {
    if (const json *v = field(obj, path, key)) {
      if (!v->is_number_integer())
        return mistyped(path, key, "an integer");
      out = v->get<int64_t>();
    }
  }
  void number(const json &obj, const std::string &path, const char *key,
              double &out) {
    if (const json *v = field(obj, path, key)) {
      if (!v->is_number())
        return mistyped(path, key, "a number");
      out = v->get<double>();
    }
  }
  void string(const json &obj, const std::string &path, const char *key,
              std::string &out) {
    if (const json *v = field(obj, path, key)) {
      if (!v->is_string())
        return mistyped(path, key, "a string");
      out = v->get<std::string>();
    }
  }
  const json *array(const json &obj, const std::string &path, const char *key) {
    const json *v = field(obj, path, key);
    if (v && !v->is_array()) {
      mistyped(path, key, "an array");
      return nullptr;
    }
    return v;
  }
  const json *object(const json &obj, const std::string &path, const char *key,
                     bool optional) {
    const json *v = field(obj, path, key, optional);
    if (v && !v->is_object()) {
      mistyped(path, key, "an object");
      return nullptr;
    }
    return v;
  }

  static std::string join(const std::string &path, const char *key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string at(const char *key, size_t i) {
    return std::string(key) + "[" + std::to_string(i) + "]";
  }

private:
  std::string &error_;
};

} // namespace

const char *infir2::rt::slotKindName(SlotKind kind) {
  return kSlotKinds[size_t(kind)];
}

std::optional<SlotKind> infir2::rt::parseSlotKind(std::string_view name) {
  for (size_t i = 0; i < std::size(kSlotKinds); ++i)
    if (name == kSlotKinds[i])
      return SlotKind(i);
  return std::nullopt;
}

int64_t ManifestSlot::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t infir2::rt::manifestDtypeSize(std::string_view dtype) {
  if (dtype == "f32" || dtype == "i32")
    return 4;
  if (dtype == "bf16" || dtype == "f16")
    return 2;
  if (dtype == "f64" || dtype == "i64")
    return 8;
  // i1, and the FP8 weight cache's codes (and E8M0 scales).
  if (dtype == "i1" || dtype == "f8E4M3FN" || dtype == "f8E5M2" ||
      dtype == "f8E8M0FNU")
    return 1;
  return 0;
}

std::string infir2::rt::toJson(const Manifest &m) {
  json j;
  j["format"] = kFormat;
  j["abi_version"] = m.abiVersion;
  j["state_bytes"] = m.stateBytes;
  j["scratch_bytes"] = m.scratchBytes;
  j["batch"] = m.batch;
  j["seq"] = m.seq;
  j["vocab"] = m.vocab;
  j["zero1_world_size"] = m.zero1WorldSize;
  if (m.tensorParallel != 1)
    j["tensor_parallel"] = m.tensorParallel;
  if (const auto &o = m.optimizer) {
    json opt;
    opt["kind"] = o->kind;
    if (o->kind != "sgd") {
      opt["beta1"] = o->beta1;
      opt["beta2"] = o->beta2;
      opt["eps"] = o->eps;
    }
    opt["weight_decay"] = o->weightDecay;
    opt["grad_clip"] = o->gradClip;
    j["optimizer"] = std::move(opt);
  }
  json slots = json::array();
  for (const ManifestSlot &s : m.slots) {
    slots.push_back({{"kind", slotKindName(s.kind)},
                     {"name", s.name},
                     {"dtype", s.dtype},
                     {"offset", s.offset},
                     {"bytes", s.bytes},
                     {"shape", s.shape},
                     {"init", s.init},
                     {"std", s.std}});
    if (s.tpDim >= 0)
      slots.back()["tp_dim"] = s.tpDim;
  }
  j["slots"] = std::move(slots);
  json functions = json::array();
  for (const ManifestFunction &f : m.functions)
    functions.push_back(
        {{"symbol", f.symbol}, {"scratch_bytes", f.scratchBytes}});
  j["functions"] = std::move(functions);
  if (!m.modelConfig.empty()) {
    json config = json::parse(m.modelConfig, nullptr,
                              /*allow_exceptions=*/false);
    if (config.is_object())
      j["model_config"] = std::move(config);
  }
  if (!m.fp8Weights.empty()) {
    json weights = json::array();
    for (const ManifestFp8Weight &w : m.fp8Weights)
      weights.push_back({{"name", w.name},
                         {"block", {w.blockRows, w.blockCols}},
                         {"format", w.format},
                         {"scales", w.scales}});
    j["fp8_weights"] = std::move(weights);
  }
  if (m.fp8Gemms) {
    json gemms = json::array();
    if (m.fp8Gemms & INFIR2RT_FP8_GEMM_BLOCK128)
      gemms.push_back("block128");
    if (m.fp8Gemms & INFIR2RT_FP8_GEMM_MX)
      gemms.push_back("mx");
    if (m.fp8Gemms & INFIR2RT_FP8_GEMM_E5M2_PAIR)
      gemms.push_back("e5m2_pair");
    j["fp8_gemms"] = std::move(gemms);
  }
  // Replacing invalid UTF-8 instead of throwing: the compiler calling this
  // is built without exceptions.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<Manifest> infir2::rt::parseManifest(std::string_view text,
                                                  std::string &error) {
  error.clear();
  // ABI 2 and older wrote a text manifest, one record per line.
  if (text.rfind("infir2-model", 0) == 0) {
    error = "the model was compiled for runtime ABI 2 or older, this "
            "runtime is " +
            std::to_string(INFIR2RT_ABI_VERSION) + ": recompile it";
    return std::nullopt;
  }
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception &e) {
    error = std::string(kWhat) + " is not valid JSON: " + e.what();
    return std::nullopt;
  }
  if (!j.is_object()) {
    error = std::string(kWhat) + " is not a JSON object";
    return std::nullopt;
  }
  Reader r(error);
  Manifest m;
  std::string format;
  r.string(j, "", "format", format);
  if (r.ok() && format != kFormat)
    error = std::string(kWhat) + " has format '" + format + "', expected '" +
            kFormat + "'";
  r.integer(j, "", "abi_version", m.abiVersion);
  if (r.ok() && m.abiVersion != INFIR2RT_ABI_VERSION)
    error = "the model was compiled for runtime ABI " +
            std::to_string(m.abiVersion) + ", this runtime is " +
            std::to_string(INFIR2RT_ABI_VERSION) + ": recompile it";
  r.integer(j, "", "state_bytes", m.stateBytes);
  r.integer(j, "", "scratch_bytes", m.scratchBytes);
  r.integer(j, "", "batch", m.batch);
  r.integer(j, "", "seq", m.seq);
  r.integer(j, "", "vocab", m.vocab);
  r.integer(j, "", "zero1_world_size", m.zero1WorldSize);
  if (j.contains("tensor_parallel")) {
    r.integer(j, "", "tensor_parallel", m.tensorParallel);
    if (r.ok() && m.tensorParallel < 1)
      r.mistyped("", "tensor_parallel", "a positive integer");
  }
  if (const json *o = r.object(j, "", "optimizer", /*optional=*/true)) {
    ManifestOptimizer opt;
    r.string(*o, "optimizer", "kind", opt.kind);
    if (r.ok() && opt.kind != "adamw" && opt.kind != "sgd")
      r.mistyped("optimizer", "kind", "adamw or sgd");
    if (opt.kind == "adamw") {
      r.number(*o, "optimizer", "beta1", opt.beta1);
      r.number(*o, "optimizer", "beta2", opt.beta2);
      r.number(*o, "optimizer", "eps", opt.eps);
    }
    r.number(*o, "optimizer", "weight_decay", opt.weightDecay);
    r.number(*o, "optimizer", "grad_clip", opt.gradClip);
    m.optimizer = opt;
  }
  if (const json *slots = r.array(j, "", "slots"))
    for (size_t i = 0; i < slots->size() && r.ok(); ++i) {
      const json &s = (*slots)[i];
      std::string path = Reader::at("slots", i);
      if (!s.is_object()) {
        error = std::string(kWhat) + ": " + path + " must be an object";
        break;
      }
      ManifestSlot slot;
      std::string kind;
      r.string(s, path, "kind", kind);
      if (std::optional<SlotKind> k = parseSlotKind(kind))
        slot.kind = *k;
      else
        r.mistyped(path, "kind",
                   "param, master, moment1, moment2, grad, input, output, "
                   "cache or fp8_cache");
      r.string(s, path, "name", slot.name);
      r.string(s, path, "dtype", slot.dtype);
      if (r.ok() && !manifestDtypeSize(slot.dtype))
        r.mistyped(path, "dtype",
                   "f32, bf16, f16, f64, i32, i64, i1, f8E4M3FN, f8E5M2 or "
                   "f8E8M0FNU");
      r.integer(s, path, "offset", slot.offset);
      r.integer(s, path, "bytes", slot.bytes);
      if (const json *shape = r.array(s, path, "shape"))
        for (const json &d : *shape) {
          if (!d.is_number_integer() || d.get<int64_t>() < 0) {
            r.mistyped(path, "shape", "an array of non-negative integers");
            break;
          }
          slot.shape.push_back(d.get<int64_t>());
        }
      r.string(s, path, "init", slot.init);
      r.number(s, path, "std", slot.std);
      if (s.contains("tp_dim")) {
        r.integer(s, path, "tp_dim", slot.tpDim);
        bool state =
            slot.kind == SlotKind::Param || slot.kind == SlotKind::Master ||
            slot.kind == SlotKind::Moment1 || slot.kind == SlotKind::Moment2 ||
            slot.kind == SlotKind::Grad;
        if (r.ok() &&
            (slot.tpDim < 0 || slot.tpDim >= int64_t(slot.shape.size())))
          r.mistyped(path, "tp_dim", "a dimension of the slot's shape");
        else if (r.ok() && (!state || m.tensorParallel < 2))
          r.mistyped(path, "tp_dim",
                     "absent (only a parameter or its state of a "
                     "tensor-parallel model is sharded)");
      }
      m.slots.push_back(std::move(slot));
    }
  if (const json *fns = r.array(j, "", "functions"))
    for (size_t i = 0; i < fns->size() && r.ok(); ++i) {
      const json &f = (*fns)[i];
      std::string path = Reader::at("functions", i);
      if (!f.is_object()) {
        error = std::string(kWhat) + ": " + path + " must be an object";
        break;
      }
      ManifestFunction fn;
      r.string(f, path, "symbol", fn.symbol);
      r.integer(f, path, "scratch_bytes", fn.scratchBytes);
      m.functions.push_back(std::move(fn));
    }
  if (const json *config = r.object(j, "", "model_config", /*optional=*/true))
    m.modelConfig = config->dump();
  if (const json *weights = r.field(j, "", "fp8_weights", /*optional=*/true)) {
    if (!weights->is_array())
      r.mistyped("", "fp8_weights", "an array");
    for (size_t i = 0; r.ok() && i < weights->size(); ++i) {
      const json &w = (*weights)[i];
      std::string path = Reader::at("fp8_weights", i);
      ManifestFp8Weight weight;
      const json *block = w.is_object() ? r.array(w, path, "block") : nullptr;
      if (!block || block->size() != 2 || !(*block)[0].is_number_integer() ||
          !(*block)[1].is_number_integer() || (*block)[0].get<int64_t>() < 1 ||
          (*block)[1].get<int64_t>() < 1) {
        r.mistyped("", path.c_str(),
                   "an object with a name and a block [rows, cols]");
        break;
      }
      weight.blockRows = (*block)[0].get<int64_t>();
      weight.blockCols = (*block)[1].get<int64_t>();
      r.string(w, path, "name", weight.name);
      r.string(w, path, "format", weight.format);
      r.string(w, path, "scales", weight.scales);
      m.fp8Weights.push_back(std::move(weight));
    }
  }
  if (const json *gemms = r.field(j, "", "fp8_gemms", /*optional=*/true)) {
    for (size_t i = 0; r.ok() && i < (gemms->is_array() ? gemms->size() : 1);
         ++i) {
      const json *g = gemms->is_array() ? &(*gemms)[i] : nullptr;
      std::string kind = g && g->is_string() ? g->get<std::string>() : "";
      if (kind == "block128")
        m.fp8Gemms |= INFIR2RT_FP8_GEMM_BLOCK128;
      else if (kind == "mx")
        m.fp8Gemms |= INFIR2RT_FP8_GEMM_MX;
      else if (kind == "e5m2_pair")
        m.fp8Gemms |= INFIR2RT_FP8_GEMM_E5M2_PAIR;
      else
        r.mistyped("", "fp8_gemms",
                   "an array of \"block128\", \"mx\" and \"e5m2_pair\"");
    }
  }
  if (!r.ok())
    return std::nullopt;
  return m;
}
