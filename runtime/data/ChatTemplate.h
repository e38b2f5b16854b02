//===- ChatTemplate.h - Qwen2.5's ChatML chat template ----------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The one definition of the chat template both `infir2-data sft` (which
// renders training conversations) and the trainer's `--generate --chat`
// (which renders a prompt) use, so that a model is prompted as it was
// trained. Qwen2.5's tokenizer_config.json template, without tools:
//   <|im_start|>system\n{system, or Qwen's default}<|im_end|>\n
//   <|im_start|>{role}\n{content}<|im_end|>\n      for every other message
// and, to ask for an answer, <|im_start|>assistant\n.
//
// Header-only: the tokenizer library (infir2rt_tokenizer) puts this folder
// on the include path of everything that links it, infir2-data and the
// trainers alike.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_CHATTEMPLATE_H
#define INFIR2_RUNTIME_DATA_CHATTEMPLATE_H

#include <string>
#include <string_view>

namespace infir2::rt::chatml {

/// The added tokens that open and close a turn.
inline constexpr const char *kImStart = "<|im_start|>";
inline constexpr const char *kImEnd = "<|im_end|>";

/// Qwen2.5's default system prompt, which its template writes when a
/// conversation has none.
inline constexpr const char *kQwenDefaultSystem =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

/// One turn: <|im_start|>{role}\n{content}<|im_end|>\n
inline std::string turn(std::string_view role, std::string_view content) {
  std::string s = kImStart;
  s.append(role).append("\n").append(content).append(kImEnd).append("\n");
  return s;
}

/// A one-question conversation (the default system turn, then `user`'s
/// turn) followed by the generation prompt that opens the assistant's turn.
inline std::string promptForAnswer(std::string_view user) {
  return turn("system", kQwenDefaultSystem) + turn("user", user) + kImStart +
         "assistant\n";
}

} // namespace infir2::rt::chatml

#endif // INFIR2_RUNTIME_DATA_CHATTEMPLATE_H
