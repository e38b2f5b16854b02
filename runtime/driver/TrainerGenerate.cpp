//===- TrainerGenerate.cpp - --generate: text from the decode step --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Generation with the decode step the compiler derived from the model
// (--infir2-derive-decode): the prompt's tokens go through it one at a
// time, filling the key/value caches, then each new token comes from the
// last logits (greedy, or sampled) and goes back in, until an end-of-turn
// or end-of-text token, --max-new-tokens, or the compiled cache length.
// The text is printed as it is produced; --log-jsonl records the token ids
// and, per new token, its logit and the softmax's log-normalizer.
//
//===----------------------------------------------------------------------===//

#include "Trainer.h"

#include "Sampling.h"
#include "Tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

using namespace infir2::rt;
namespace fs = std::filesystem;

namespace {

/// Qwen2.5's default system prompt, as its chat template writes it when a
/// conversation has none (and infir2-data sft renders training chats).
constexpr const char *kQwenDefaultSystem =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

/// The tokenizer.json of `source` (a file, or a folder holding one).
std::string tokenizerJson(const std::string &source) {
  std::error_code ec;
  if (fs::is_directory(source, ec))
    return (fs::path(source) / "tokenizer.json").string();
  return source;
}

/// Text to token ids and back: a tokenizer.json, or bytes (as --data-format
/// text reads text) for a byte-level model without one.
struct TextCodec {
  std::optional<Tokenizer> tokenizer;
  std::vector<uint32_t> stopIds;

  std::vector<uint32_t> encode(const std::string &text) {
    if (tokenizer)
      return tokenizer->encode(text, /*addSpecialTokens=*/false);
    return std::vector<uint32_t>(text.begin(), text.end());
  }
  Expected<std::string> decode(const std::vector<uint32_t> &ids) const {
    if (tokenizer)
      return tokenizer->decode(ids);
    return std::string(ids.begin(), ids.end());
  }
};

} // namespace

Status Trainer::generate() {
  if (comm_.size() > 1)
    return fail("--generate runs one process, not %d ranks", comm_.size());
  const ManifestSlot *ids = layout_.find("input", "decode.input_ids");
  const ManifestSlot *pos = layout_.find("input", "decode.positions");
  const ManifestSlot *logits = layout_.find("output", "decode.logits");
  const ManifestSlot *cache = nullptr;
  for (const ManifestSlot &s : m_.slots)
    if (s.kind == "cache")
      cache = &s;
  if (!model_.decodeStep || !ids || !pos || !logits)
    return fail("this trainer has no decode step, so it cannot generate: "
                "its model is not a causal language model the compiler can "
                "decode, or it was compiled with decode-length=0");
  // Without attention there is no cache, and no limit but the positions'.
  int64_t maxLength = cache ? cache->shape[1] : INT32_MAX;
  int64_t vocab = logits->shape.back();

  TextCodec codec;
  std::string source = tokenizerSource();
  if (!source.empty()) {
    Expected<Tokenizer> t = Tokenizer::load(tokenizerJson(source));
    if (!t)
      return t.failure();
    codec.tokenizer.emplace(std::move(*t));
    for (const char *stop : {"<|im_end|>", "<|endoftext|>"})
      if (std::optional<uint32_t> id = codec.tokenizer->tokenId(stop))
        codec.stopIds.push_back(*id);
  } else if (vocab < 256) {
    return fail("--generate needs --tokenizer (a tokenizer.json or a folder "
                "with one): no tokenizer came with the model, and its %lld "
                "tokens are too few to be bytes",
                (long long)vocab);
  }
  std::string text = o_.prompt;
  if (o_.chat) {
    if (!codec.tokenizer || !codec.tokenizer->tokenId("<|im_start|>"))
      return fail("--chat needs a ChatML (Qwen) tokenizer with <|im_start|> "
                  "and <|im_end|> tokens");
    text = std::string("<|im_start|>system\n") + kQwenDefaultSystem +
           "<|im_end|>\n<|im_start|>user\n" + o_.prompt +
           "<|im_end|>\n<|im_start|>assistant\n";
  }
  std::vector<uint32_t> prompt = codec.encode(text);
  if (int64_t(prompt.size()) > maxLength)
    return fail("the prompt is %zu tokens, longer than the %lld the decode "
                "step was compiled for (its key/value cache; recompile with "
                "--recipe-options=\"decode-length=N\")",
                prompt.size(), (long long)maxLength);
  for (uint32_t id : prompt)
    if (int64_t(id) >= vocab)
      return fail("the prompt's token %u is outside the model's %lld-token "
                  "vocabulary (a tokenizer for another model?)",
                  id, (long long)vocab);

  // One token through the decode step at `position`: its next-token logits.
  std::vector<float> next(size_t(vocab), 0.0f);
  auto step = [&](uint32_t token, int64_t position) -> Status {
    writeElement(ids->dtype, bytesAt(*ids), 0, float(token));
    writeElement(pos->dtype, bytesAt(*pos), 0, float(position));
    INFIR2_RETURN_IF_ERROR(upload(*ids));
    INFIR2_RETURN_IF_ERROR(upload(*pos));
    INFIR2_RETURN_IF_ERROR(call(model_.decodeStep, "decode step", position));
    INFIR2_RETURN_IF_ERROR(download(*logits));
    for (int64_t i = 0; i < vocab; ++i)
      next[size_t(i)] = readElement(logits->dtype, bytesAt(*logits), i);
    return Status::ok();
  };
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < prompt.size(); ++i)
    INFIR2_RETURN_IF_ERROR(step(prompt[i], int64_t(i)));
  double prefill = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();

  std::mt19937_64 rng(uint64_t(o_.seed));
  std::vector<uint32_t> generated;
  // Per new token, for checks against other implementations: the chosen
  // token's logit and the log of the softmax's normalizer.
  std::vector<double> chosenLogits, logNormalizers;
  std::string printed, stop = "max-new-tokens";
  for (;;) {
    Expected<int64_t> token =
        sampleToken(next.data(), vocab, o_.temperature, o_.topP, rng);
    if (!token)
      return fail("after %zu new tokens: %s", generated.size(),
                  token.message().c_str());
    uint32_t t = uint32_t(*token);
    double top = *std::max_element(next.begin(), next.end()), sum = 0.0;
    for (float x : next)
      sum += std::exp(double(x) - top);
    chosenLogits.push_back(next[t]);
    logNormalizers.push_back(top + std::log(sum));
    if (std::find(codec.stopIds.begin(), codec.stopIds.end(), t) !=
        codec.stopIds.end()) {
      stop = "end-of-turn";
      generated.push_back(t);
      break;
    }
    generated.push_back(t);
    // Print what is complete of the text so far (a token can end inside a
    // character); decoding the whole keeps byte-level merges right.
    Expected<std::string> sofar = codec.decode(generated);
    if (!sofar)
      return sofar.failure();
    size_t complete = completeUtf8Prefix(*sofar);
    if (complete > printed.size()) {
      std::fwrite(sofar->data() + printed.size(), 1,
                  complete - printed.size(), stdout);
      std::fflush(stdout);
      printed.assign(*sofar, 0, complete);
    }
    int64_t length = int64_t(prompt.size() + generated.size());
    if (int64_t(generated.size()) >= o_.maxNewTokens)
      break;
    if (length >= maxLength) {
      stop = "max-length";
      break;
    }
    INFIR2_RETURN_IF_ERROR(step(t, length - 1));
  }
  std::vector<uint32_t> shown = generated;
  if (stop == "end-of-turn")
    shown.pop_back();
  Expected<std::string> all = codec.decode(shown);
  if (!all)
    return all.failure();
  if (all->size() > printed.size())
    std::fwrite(all->data() + printed.size(), 1, all->size() - printed.size(),
                stdout);
  std::printf("\n");
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  std::fprintf(stderr,
               "generate: %zu prompt tokens in %.2f s, %zu new tokens in "
               "%.2f s (%.1f tokens/s), stopped by %s%s\n",
               prompt.size(), prefill, generated.size(), seconds - prefill,
               double(generated.size()) / std::max(seconds - prefill, 1e-9),
               stop.c_str(),
               stop == "max-length"
                   ? " (the decode step's compiled cache length)"
                   : "");
  if (o_.logJsonl.empty())
    return Status::ok();
  nlohmann::json record = {{"prompt_ids", prompt},
                           {"generated_ids", generated},
                           {"chosen_logits", chosenLogits},
                           {"log_normalizers", logNormalizers},
                           {"text", *all},
                           {"stop", stop}};
  std::ofstream out(o_.logJsonl);
  out << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
      << "\n";
  if (!out.flush())
    return fail("cannot write %s", o_.logJsonl.c_str());
  return Status::ok();
}
