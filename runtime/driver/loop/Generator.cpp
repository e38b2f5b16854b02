//===- Generator.cpp - --generate: text from the decode step --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Generation with the decode step the compiler derived from the model
// (--infir2-derive-decode): the prompt's tokens go through it one at a
// time, filling the key/value caches, then each new token comes from the
// last logits (greedy, or sampled) and goes back in, until an end-of-turn
// or end-of-text token, --max-new-tokens, or the compiled cache length L:
// the prompt and the new tokens together are at most L tokens (the last
// new token is never fed back, so its row of the cache is not needed).
// Only ids the text can be decoded from are chosen: the tokenizer's (a
// model's embedding is often padded beyond them, as Qwen's), or bytes for
// a model without a tokenizer.
// The text is printed as it is produced; --log-jsonl records the token ids
// and, per new token, its logit and the softmax's log-normalizer.
//
//===----------------------------------------------------------------------===//

#include "loop/Generator.h"

#include "ChatTemplate.h"
#include "Tokenizer.h"
#include "loop/Sampling.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

using namespace infir2::rt;
namespace fs = std::filesystem;

namespace {

/// The tokenizer.json of `source` (a file, or a folder holding one).
std::string tokenizerJson(const std::string &source) {
  std::error_code ec;
  if (fs::is_directory(source, ec))
    return (fs::path(source) / "tokenizer.json").string();
  return source;
}

/// Text to token ids and back: a tokenizer.json, or bytes (as --data-format
/// text reads text, 0 to 255) for a byte-level model without one.
struct TextCodec {
  std::optional<Tokenizer> tokenizer;
  std::vector<uint32_t> stopIds;

  /// One more than the largest id there is text for.
  int64_t vocabSize() const {
    return tokenizer ? int64_t(tokenizer->vocabSize()) : 256;
  }
  std::vector<uint32_t> encode(const std::string &text) {
    if (tokenizer)
      return tokenizer->encode(text, /*addSpecialTokens=*/false);
    std::vector<uint32_t> bytes;
    for (char c : text)
      bytes.push_back(static_cast<unsigned char>(c));
    return bytes;
  }
  /// The bytes of `ids`: each id's bytes one after another (as
  /// Tokenizer::decode joins them), so a token decodes alone.
  Expected<std::string> decode(const std::vector<uint32_t> &ids) const {
    if (tokenizer)
      return tokenizer->decode(ids);
    std::string bytes;
    for (uint32_t id : ids) {
      if (id > 255)
        return fail("token %u is not a byte, and the model has no tokenizer "
                    "to decode it with (give --tokenizer)",
                    id);
      bytes.push_back(char(id));
    }
    return bytes;
  }
};

} // namespace

Status Generator::run() {
  if (s_.comm.size() > 1)
    return fail("--generate runs one process, not %d ranks", s_.comm.size());
  const ManifestSlot *ids = s_.layout.find(SlotKind::Input, "decode.input_ids");
  const ManifestSlot *pos = s_.layout.find(SlotKind::Input, "decode.positions");
  const ManifestSlot *logits =
      s_.layout.find(SlotKind::Output, "decode.logits");
  const ManifestSlot *cache = nullptr;
  for (const ManifestSlot &s : s_.m.slots)
    if (s.kind == SlotKind::Cache)
      cache = &s;
  if (!s_.model.decodeStep || !ids || !pos || !logits)
    return fail("this trainer has no decode step, so it cannot generate: "
                "its model is not a causal language model the compiler can "
                "decode, or it was compiled with decode-length=0");
  // Without attention there is no cache, and no limit but the positions'.
  int64_t maxLength = cache ? cache->shape[1] : INT32_MAX;
  int64_t vocab = logits->shape.back();

  TextCodec codec;
  std::string source = s_.tokenizerSource();
  if (!source.empty()) {
    Expected<Tokenizer> t = Tokenizer::load(tokenizerJson(source));
    if (!t)
      return t.failure();
    codec.tokenizer.emplace(std::move(*t));
    for (const char *stop : {chatml::kImEnd, "<|endoftext|>"})
      if (std::optional<uint32_t> id = codec.tokenizer->tokenId(stop))
        codec.stopIds.push_back(*id);
  } else if (vocab < 256) {
    return fail("--generate needs --tokenizer (a tokenizer.json or a folder "
                "with one): no tokenizer came with the model, and its %lld "
                "tokens are too few to be bytes",
                (long long)vocab);
  }
  std::string text = s_.o.prompt;
  if (s_.o.chat) {
    if (!codec.tokenizer || !codec.tokenizer->tokenId(chatml::kImStart) ||
        !codec.tokenizer->tokenId(chatml::kImEnd))
      return fail("--chat needs a ChatML (Qwen) tokenizer with %s and %s "
                  "tokens",
                  chatml::kImStart, chatml::kImEnd);
    text = chatml::promptForAnswer(s_.o.prompt);
  }
  std::vector<uint32_t> prompt = codec.encode(text);
  if (prompt.empty())
    return fail("the prompt encodes to no tokens");
  if (int64_t(prompt.size()) >= maxLength)
    return fail("the prompt is %zu tokens, but the decode step was compiled "
                "for %lld, the prompt and the new tokens together (its "
                "key/value cache; recompile with "
                "--recipe-options=\"decode-length=N\" for N > %zu)",
                prompt.size(), (long long)maxLength, prompt.size());
  for (uint32_t id : prompt)
    if (int64_t(id) >= vocab)
      return fail("the prompt's token %u is outside the model's %lld-token "
                  "vocabulary (a tokenizer for another model?)",
                  id, (long long)vocab);

  // The ids that may be chosen: those below both the model's and the
  // codec's vocabulary sizes that decode (a tokenizer may skip ids). Every
  // other row of the logits is masked (the lowest float: never the largest,
  // and 0 after the softmax).
  int64_t choosable = std::min(vocab, codec.vocabSize());
  std::vector<int64_t> holes;
  for (int64_t i = 0; codec.tokenizer && i < choosable; ++i)
    if (!codec.decode({uint32_t(i)}))
      holes.push_back(i);

  // One token through the decode step at `position`: its next-token logits.
  std::vector<float> next(size_t(vocab), 0.0f);
  auto step = [&](uint32_t token, int64_t position) -> Status {
    writeElement(ids->dtype, s_.bytesAt(*ids), 0, float(token));
    writeElement(pos->dtype, s_.bytesAt(*pos), 0, float(position));
    INFIR2_RETURN_IF_ERROR(s_.upload(*ids));
    INFIR2_RETURN_IF_ERROR(s_.upload(*pos));
    INFIR2_RETURN_IF_ERROR(
        s_.call(s_.model.decodeStep, "decode step", position));
    INFIR2_RETURN_IF_ERROR(s_.download(*logits));
    for (int64_t i = 0; i < vocab; ++i)
      next[size_t(i)] = readElement(logits->dtype, s_.bytesAt(*logits), i);
    return Status::ok();
  };
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < prompt.size(); ++i)
    INFIR2_RETURN_IF_ERROR(step(prompt[i], int64_t(i)));
  double prefill =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  std::mt19937_64 rng(uint64_t(s_.o.seed));
  std::vector<uint32_t> generated;
  // Per new token, for checks against other implementations: the chosen
  // token's logit and the log of the softmax's normalizer.
  std::vector<double> chosenLogits, logNormalizers;
  // The decoded bytes not printed yet: the end of the text when it stops
  // inside a UTF-8 character.
  std::string pending, stop = "max-new-tokens";
  for (;;) {
    // Over all of the model's logits, as another implementation of the
    // forward computes them, before the mask.
    double top = *std::max_element(next.begin(), next.end()), sum = 0.0;
    for (float x : next)
      sum += std::exp(double(x) - top);
    for (int64_t i : holes)
      next[size_t(i)] = std::numeric_limits<float>::lowest();
    Expected<int64_t> token =
        sampleToken(next.data(), choosable, s_.o.temperature, s_.o.topP, rng);
    if (!token)
      return fail("after %zu new tokens: %s", generated.size(),
                  token.message().c_str());
    uint32_t t = uint32_t(*token);
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
    // character).
    Expected<std::string> piece = codec.decode({t});
    if (!piece)
      return piece.failure();
    pending += *piece;
    if (size_t complete = completeUtf8Prefix(pending)) {
      std::fwrite(pending.data(), 1, complete, stdout);
      std::fflush(stdout);
      pending.erase(0, complete);
    }
    int64_t length = int64_t(prompt.size() + generated.size());
    if (int64_t(generated.size()) >= s_.o.maxNewTokens)
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
  std::fwrite(pending.data(), 1, pending.size(), stdout);
  std::printf("\n");
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::fprintf(
      stderr,
      "generate: %zu prompt tokens in %.2f s, %zu new tokens in "
      "%.2f s (%.1f tokens/s), stopped by %s%s\n",
      prompt.size(), prefill, generated.size(), seconds - prefill,
      double(generated.size()) / std::max(seconds - prefill, 1e-9),
      stop.c_str(),
      stop == "max-length" ? " (the decode step's compiled cache length)" : "");
  if (s_.o.logJsonl.empty())
    return Status::ok();
  nlohmann::json record = {{"prompt_ids", prompt},
                           {"generated_ids", generated},
                           {"chosen_logits", chosenLogits},
                           {"log_normalizers", logNormalizers},
                           {"text", *all},
                           {"stop", stop}};
  std::ofstream out(s_.o.logJsonl);
  out << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
      << "\n";
  if (!out.flush())
    return fail("cannot write %s", s_.o.logJsonl.c_str());
  return Status::ok();
}
