//===- ModelFolder.cpp - Hugging Face model folders in and out ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "io/ModelFolder.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

using namespace infir2::rt;
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

/// "model-00002-of-00003.safetensors", the name transformers gives shards.
std::string shardName(size_t i, size_t n) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1,
                n);
  return name;
}

/// A file's whole text, or an error naming it.
Expected<std::string> readText(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (in.bad())
    return fail("%s: read failed: %s", path.c_str(), std::strerror(errno));
  return text;
}

/// A JSON object file, or an error naming it.
Expected<json> readJsonObject(const fs::path &path) {
  Expected<std::string> text = readText(path);
  if (!text)
    return text.failure();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return fail("%s: not a JSON object", path.c_str());
  return j;
}

} // namespace

Status infir2::rt::writeTextFile(const std::string &dir,
                                 const std::string &name,
                                 const std::string &text,
                                 FileDigests &digests) {
  fs::path path = fs::path(dir) / name;
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out)
    return fail("%s: cannot write: %s", path.c_str(), std::strerror(errno));
  FileDigest digest;
  extendDigest(digest, text.data(), text.size());
  digests[name] = digest;
  return Status::ok();
}

Expected<FileDigests>
infir2::rt::writeModelWeights(const std::string &dir,
                              const std::vector<TensorSource> &weights,
                              int64_t maxShardBytes, bool alwaysIndexed) {
  std::vector<std::vector<TensorSource>> shards(1);
  uint64_t inShard = 0, total = 0;
  for (const TensorSource &t : weights) {
    if (!shards.back().empty() && inShard + t.bytes > uint64_t(maxShardBytes)) {
      shards.emplace_back();
      inShard = 0;
    }
    shards.back().push_back(t);
    inShard += t.bytes;
    total += t.bytes;
  }
  FileDigests digests;
  std::string error;
  // transformers refuses a file whose metadata names no framework it knows.
  std::map<std::string, std::string> metadata = {{"format", "pt"}};
  if (shards.size() == 1 && !alwaysIndexed) {
    if (!writeSafetensors((fs::path(dir) / kModelWeightsFile).string(),
                          shards[0], metadata, error,
                          &digests[kModelWeightsFile]))
      return Failure{error};
    return digests;
  }
  json index;
  index["metadata"] = {{"total_size", total}};
  std::map<std::string, std::string> weightMap; // sorted, as transformers
  for (size_t i = 0; i < shards.size(); ++i) {
    std::string name = shardName(i, shards.size());
    if (!writeSafetensors((fs::path(dir) / name).string(), shards[i], metadata,
                          error, &digests[name]))
      return Failure{error};
    for (const TensorSource &t : shards[i])
      weightMap[t.name] = name;
  }
  index["weight_map"] = weightMap;
  INFIR2_RETURN_IF_ERROR(
      writeTextFile(dir, kModelIndexFile, index.dump(2) + "\n", digests));
  return digests;
}

std::string infir2::rt::modelConfigJson(const std::string &modelConfig,
                                        const std::string &torchDtype,
                                        const std::string &extra) {
  json config = json::parse(modelConfig, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object())
    config = json::object();
  // The stored type under both of transformers' names for it, and no
  // quantization of the source model's unless `extra` brings one.
  config["torch_dtype"] = torchDtype;
  if (config.contains("dtype"))
    config["dtype"] = torchDtype;
  config.erase("quantization_config");
  json more = json::parse(extra, nullptr, /*allow_exceptions=*/false);
  if (more.is_object())
    for (const auto &[key, value] : more.items())
      config[key] = value;
  return config.dump(2) + "\n";
}

std::string infir2::rt::generationConfigJson(const std::string &modelConfig) {
  json config = json::parse(modelConfig, nullptr, /*allow_exceptions=*/false);
  json g;
  g["_from_model_config"] = true;
  if (config.is_object())
    for (const char *key : {"bos_token_id", "eos_token_id", "pad_token_id"})
      if (auto it = config.find(key); it != config.end() && !it->is_null())
        g[key] = *it;
  return g.dump(2) + "\n";
}

Status infir2::rt::copyTokenizer(const std::string &tokenizer,
                                 const std::string &dir, FileDigests &digests) {
  // The files transformers' tokenizers read, wherever they are present.
  static const char *const kFiles[] = {"tokenizer.json",
                                       "tokenizer_config.json",
                                       "special_tokens_map.json",
                                       "vocab.json",
                                       "merges.txt",
                                       "added_tokens.json",
                                       "tokenizer.model",
                                       "chat_template.jinja"};
  std::error_code ec;
  fs::path from = fs::is_directory(tokenizer, ec)
                      ? fs::path(tokenizer)
                      : fs::path(tokenizer).parent_path();
  if (from.empty())
    from = ".";
  bool any = false;
  if (!fs::is_directory(tokenizer, ec)) {
    // The file named is the tokenizer, whatever its name.
    Expected<std::string> text = readText(tokenizer);
    if (!text)
      return text.failure();
    INFIR2_RETURN_IF_ERROR(
        writeTextFile(dir, "tokenizer.json", *text, digests));
    any = true;
  }
  for (const char *name : kFiles) {
    if (any && std::string(name) == "tokenizer.json")
      continue;
    if (!fs::exists(from / name, ec))
      continue;
    Expected<std::string> text = readText(from / name);
    if (!text)
      return text.failure();
    INFIR2_RETURN_IF_ERROR(writeTextFile(dir, name, *text, digests));
    any = true;
  }
  if (!any)
    return fail("--tokenizer %s: no tokenizer.json (or tokenizer.model) to "
                "copy",
                tokenizer.c_str());
  return Status::ok();
}

Status infir2::rt::checkModelConfig(const std::string &path,
                                    const std::string &compiled) {
  Expected<json> folder = readJsonObject(path);
  if (!folder)
    return folder.failure();
  json model = json::parse(compiled, nullptr, /*allow_exceptions=*/false);
  if (!model.is_object())
    return Status::ok(); // a model written by hand: only shapes are checked
  // A field's value as the model reads it, with transformers' defaults for
  // the ones a config may leave out.
  auto value = [](const json &c, const std::string &key) -> json {
    if (auto it = c.find(key); it != c.end() && !it->is_null())
      return *it;
    // transformers 5 keeps RoPE's settings under rope_parameters.
    if (auto rope = c.find("rope_parameters");
        key == "rope_theta" && rope != c.end() && rope->is_object() &&
        rope->contains("rope_theta"))
      return (*rope)["rope_theta"];
    auto number = [&](const char *k) {
      auto it = c.find(k);
      return it != c.end() && it->is_number() ? it->get<double>() : 0.0;
    };
    if (key == "num_key_value_heads")
      return number("num_attention_heads");
    if (key == "head_dim" && number("num_attention_heads") > 0)
      return number("hidden_size") / number("num_attention_heads");
    if (key == "tie_word_embeddings")
      return false;
    return nullptr;
  };
  // Keys whose absence means "none" (no RoPE scaling, no sliding window):
  // compared even when the compiled config lacks them.
  static const std::set<std::string> absentIsNone = {"rope_scaling",
                                                     "use_sliding_window"};
  for (const char *key :
       {"model_type", "vocab_size", "hidden_size", "intermediate_size",
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "head_dim", "tie_word_embeddings", "rms_norm_eps", "rope_theta",
        "hidden_act", "attention_bias", "rope_scaling", "use_sliding_window"}) {
    json want = value(model, key), got = value(*folder, key);
    if (absentIsNone.count(key)) {
      if (want == false)
        want = nullptr;
      if (got == false)
        got = nullptr;
    } else if (want.is_null()) {
      continue;
    }
    bool same = want.is_number() && got.is_number()
                    ? want.get<double>() == got.get<double>()
                    : want == got;
    if (!same)
      return fail("%s: %s is %s, but the trainer was compiled for %s "
                  "(recompile it from this config with infir2-import)",
                  path.c_str(), key,
                  got.is_null() ? "missing" : got.dump().c_str(),
                  want.dump().c_str());
  }
  return Status::ok();
}

Expected<std::unique_ptr<ModelWeights>>
ModelWeights::open(const std::string &path) {
  auto w = std::make_unique<ModelWeights>();
  std::error_code ec;
  fs::path dir = path;
  std::vector<std::pair<std::string, std::set<std::string>>> files;
  if (!fs::is_directory(dir, ec)) {
    files.push_back({path, {}});
  } else if (fs::exists(dir / kModelIndexFile, ec)) {
    fs::path indexPath = dir / kModelIndexFile;
    Expected<json> index = readJsonObject(indexPath);
    if (!index)
      return index.failure();
    auto map = index->find("weight_map");
    if (map == index->end() || !map->is_object() || map->empty())
      return fail("%s: 'weight_map' is missing or not an object of tensor "
                  "names to files",
                  indexPath.c_str());
    std::map<std::string, std::set<std::string>> byFile;
    for (const auto &[tensor, file] : map->items()) {
      std::string name = file.is_string() ? file.get<std::string>() : "";
      if (name.empty() || name == "." || name == ".." ||
          name.find('/') != std::string::npos)
        return fail("%s: tensor '%s' maps to %s, not a file of the folder",
                    indexPath.c_str(), tensor.c_str(), file.dump().c_str());
      byFile[name].insert(tensor);
    }
    for (auto &[name, tensors] : byFile) {
      if (!fs::exists(dir / name, ec))
        return fail("%s: names %s, which is missing from %s", indexPath.c_str(),
                    name.c_str(), dir.c_str());
      files.push_back({(dir / name).string(), std::move(tensors)});
    }
    // A shard the index does not name: the remains of another save, whose
    // tensors might be taken for these.
    static const std::regex shard(R"(model-\d+-of-\d+\.safetensors)");
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      std::string name = it->path().filename().string();
      if ((std::regex_match(name, shard) || name == kModelWeightsFile) &&
          !byFile.count(name))
        return fail("%s: %s is not named by %s (a shard of another save?)",
                    dir.c_str(), name.c_str(), kModelIndexFile);
    }
  } else if (fs::exists(dir / kModelWeightsFile, ec)) {
    files.push_back({(dir / kModelWeightsFile).string(), {}});
  } else {
    return fail("%s: no %s or %s (not a model folder)", path.c_str(),
                kModelWeightsFile, kModelIndexFile);
  }
  for (auto &[file, assigned] : files) {
    auto f = std::make_unique<SafetensorsFile>();
    std::string error;
    if (!f->open(file, error))
      return Failure{error};
    for (const auto &[name, entry] : f->tensors()) {
      if (!assigned.empty() && !assigned.count(name))
        return fail("%s: holds tensor '%s', which %s does not place in it",
                    file.c_str(), name.c_str(), kModelIndexFile);
      if (!w->entries_.emplace(name, entry).second)
        return fail("%s: tensor '%s' is also in %s", file.c_str(), name.c_str(),
                    w->owner_[name]->path().c_str());
      w->owner_[name] = f.get();
    }
    for (const std::string &name : assigned)
      if (!f->tensors().count(name))
        return fail("%s: lacks tensor '%s', which %s says it holds",
                    file.c_str(), name.c_str(), kModelIndexFile);
    w->files_.push_back(std::move(f));
  }
  return w;
}

const std::string &ModelWeights::fileOf(const std::string &name) const {
  return owner_.at(name)->path();
}

Status ModelWeights::read(const std::string &name, StoredTensor &out) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    return fail("no tensor '%s'", name.c_str());
  out.dtype = it->second.dtype;
  out.shape = it->second.shape;
  std::string error;
  if (!owner_.at(name)->read(name, out.bytes, error))
    return Failure{error};
  return Status::ok();
}
