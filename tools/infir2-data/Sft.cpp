//===- Sft.cpp - infir2-data sft ------------------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Chat data for supervised fine-tuning: JSONL lines
//   {"messages": [{"role": "system"|"user"|"assistant", "content": "..."}]}
// rendered with Qwen2.5's chat template (ChatTemplate.h, shared with the
// trainer's --chat) as its tokenizer_config.json renders them for training
// (no tools, no generation prompt):
//   <|im_start|>system\n{system, or Qwen's default}<|im_end|>\n
//   <|im_start|>{role}\n{content}<|im_end|>\n      for every other message
// and written as a token dataset P plus a loss-mask dataset P.mask (uint8,
// the same documents): 1 on each assistant turn's content and its closing
// <|im_end|>, 0 elsewhere, so that every assistant turn of a multi-turn
// conversation trains and nothing else does.
//
// <|im_start|> and <|im_end|> are added tokens, which the tokenizer matches
// before splitting the text: encoding the pieces between them one by one
// gives the ids of encoding the whole rendered conversation. The one place
// a piece holds both masked and unmasked text, "assistant\n" + content, is
// encoded whole; the mask starts after the ids "assistant\n" alone encodes
// to (after the ids both share, should a content starting with newlines
// merge with the role's).
//
//===----------------------------------------------------------------------===//

#include "ChatTemplate.h"
#include "Commands.h"
#include "Jsonl.h"
#include "Tokenizer.h"
#include "Unicode.h"

#include "infir2/runtime/IndexedDataset.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

using namespace infir2;
using namespace infir2::data;
using rt::Expected;

namespace {

struct SftOptions {
  std::string tokenizer, input, outputPrefix, chatTemplate = "qwen2.5";
};

struct Message {
  std::string role, content;
};

Expected<std::vector<Message>> parseConversation(std::string_view line) {
  std::string repaired;
  Expected<nlohmann::json> parsed =
      parseJsonLine(rt::repairUtf8(line, repaired));
  if (!parsed)
    return parsed.failure();
  auto messages = parsed->is_object() ? parsed->find("messages") : parsed->end();
  if (!parsed->is_object() || messages == parsed->end() ||
      !messages->is_array() || messages->empty())
    return rt::fail("expected {\"messages\": [{\"role\": ..., \"content\": "
                    "...}, ...]}");
  std::vector<Message> out;
  bool answered = false;
  for (size_t i = 0; i < messages->size(); ++i) {
    const nlohmann::json &m = (*messages)[i];
    auto role = m.is_object() ? m.find("role") : m.end();
    auto content = m.is_object() ? m.find("content") : m.end();
    if (!m.is_object() || role == m.end() || !role->is_string() ||
        content == m.end() || !content->is_string())
      return rt::fail("message %zu needs a string \"role\" and \"content\"",
                      i);
    std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant")
      return rt::fail("message %zu: role '%s' (system, user or assistant)", i,
                      r.c_str());
    answered |= r == "assistant";
    out.push_back({r, content->get<std::string>()});
  }
  if (!answered)
    out.clear(); // nothing to train on: skipped, and counted
  return out;
}

class ChatEncoder {
public:
  static Expected<ChatEncoder> create(rt::Tokenizer tokenizer,
                                      const std::string &path) {
    ChatEncoder e(std::move(tokenizer));
    for (auto [text, id] : {std::pair{rt::chatml::kImStart, &e.start_},
                            std::pair{rt::chatml::kImEnd, &e.end_}}) {
      std::optional<uint32_t> found = e.tokenizer_.tokenId(text);
      if (!found)
        return rt::fail("%s has no '%s' token: not a ChatML (Qwen) tokenizer",
                        path.c_str(), text);
      *id = *found;
    }
    e.newline_ = e.encode("\n");
    return e;
  }

  /// A conversation's tokens and loss mask.
  void render(const std::vector<Message> &messages, std::vector<int64_t> &ids,
              std::vector<int64_t> &mask) {
    ids.clear();
    mask.clear();
    size_t first = 0;
    if (messages[0].role == "system")
      first = 1;
    turn("system", first ? messages[0].content : rt::chatml::kQwenDefaultSystem,
         false, ids, mask);
    for (size_t i = first; i < messages.size(); ++i)
      turn(messages[i].role, messages[i].content,
           messages[i].role == "assistant", ids, mask);
  }

  uint32_t vocabSize() const { return tokenizer_.vocabSize(); }

private:
  explicit ChatEncoder(rt::Tokenizer t) : tokenizer_(std::move(t)) {}

  std::vector<int64_t> encode(const std::string &text) {
    std::vector<uint32_t> t = tokenizer_.encode(text, /*addSpecial=*/false);
    return std::vector<int64_t>(t.begin(), t.end());
  }

  /// rt::chatml::turn(role, content), encoded piece by piece for the mask.
  void turn(const std::string &role, const std::string &content, bool trains,
            std::vector<int64_t> &ids, std::vector<int64_t> &mask) {
    auto put = [&](const std::vector<int64_t> &t, bool on) {
      ids.insert(ids.end(), t.begin(), t.end());
      mask.insert(mask.end(), t.size(), on ? 1 : 0);
    };
    put({start_}, false);
    std::vector<int64_t> head = encode(role + "\n"),
                         body = encode(role + "\n" + content);
    size_t shared = 0;
    while (shared < head.size() && shared < body.size() &&
           head[shared] == body[shared])
      ++shared;
    put(std::vector<int64_t>(body.begin(), body.begin() + long(shared)), false);
    put(std::vector<int64_t>(body.begin() + long(shared), body.end()), trains);
    put({end_}, trains);
    put(newline_, false);
  }

  rt::Tokenizer tokenizer_;
  int64_t start_ = 0, end_ = 0;
  std::vector<int64_t> newline_;
};

rt::Status runSft(const SftOptions &o) {
  if (o.chatTemplate != "qwen2.5")
    return rt::fail("--chat-template '%s': only qwen2.5 (ChatML) is known",
                    o.chatTemplate.c_str());
  Expected<rt::Tokenizer> tokenizer = rt::Tokenizer::load(o.tokenizer);
  if (!tokenizer)
    return tokenizer.failure();
  Expected<ChatEncoder> chat =
      ChatEncoder::create(std::move(*tokenizer), o.tokenizer);
  if (!chat)
    return chat.failure();
  Expected<rt::IndexedDatasetWriter> tokens = rt::IndexedDatasetWriter::create(
      o.outputPrefix, rt::tokenDTypeFor(chat->vocabSize()));
  if (!tokens)
    return tokens.failure();
  Expected<rt::IndexedDatasetWriter> masks = rt::IndexedDatasetWriter::create(
      o.outputPrefix + ".mask", rt::IndexedDType::UInt8);
  if (!masks)
    return masks.failure();
  std::vector<int64_t> ids, mask;
  int64_t trained = 0, skipped = 0;
  INFIR2_RETURN_IF_ERROR(
      forEachLine(o.input, [&](std::string_view line) -> rt::Status {
        Expected<std::vector<Message>> messages = parseConversation(line);
        if (!messages)
          return messages.failure();
        if (messages->empty()) {
          ++skipped;
          return rt::Status::ok();
        }
        chat->render(*messages, ids, mask);
        for (int64_t m : mask)
          trained += m;
        INFIR2_RETURN_IF_ERROR(
            tokens->addDocument(ids.data(), int64_t(ids.size())));
        return masks->addDocument(mask.data(), int64_t(mask.size()));
      }));
  // The mask first: a mask without its tokens is never read, tokens without
  // their mask would train on every token.
  INFIR2_RETURN_IF_ERROR(masks->finish());
  INFIR2_RETURN_IF_ERROR(tokens->finish());
  std::printf("sft: wrote %s and %s.mask: %lld conversations, %lld tokens, "
              "%lld of them trained on; %lld conversations without an "
              "assistant message skipped\n",
              o.outputPrefix.c_str(), o.outputPrefix.c_str(),
              (long long)tokens->numDocuments(),
              (long long)tokens->numElements(), (long long)trained,
              (long long)skipped);
  return rt::Status::ok();
}

} // namespace

Command data::addSftCommand(CLI::App &app) {
  auto options = std::make_shared<SftOptions>();
  CLI::App *cmd = app.add_subcommand(
      "sft", "chat JSONL -> token dataset PREFIX and loss mask PREFIX.mask");
  cmd->add_option("--tokenizer", options->tokenizer,
                  "a Hugging Face tokenizer.json with ChatML's tokens")
      ->required();
  cmd->add_option("--input", options->input,
                  "JSONL of {\"messages\": [...]} (default: standard input)");
  cmd->add_option("--output-prefix", options->outputPrefix,
                  "writes PREFIX.bin/.idx and PREFIX.mask.bin/.idx")
      ->required();
  cmd->add_option("--chat-template", options->chatTemplate,
                  "the chat template (qwen2.5, the default)");
  return {cmd, [options] { return runSft(*options); }};
}
