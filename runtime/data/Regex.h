//===- Regex.h - PCRE2 regexes for the tokenizer's splits -------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A compiled PCRE2 pattern (UTF, Unicode properties, JIT) and the splitting
// Hugging Face `tokenizers` does with one: the pattern's matches and the gaps
// between them, grouped by a SplitBehavior.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_REGEX_H
#define INFIR2_RUNTIME_DATA_REGEX_H

#include "infir2/runtime/Expected.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace infir2::rt {

class Regex {
public:
  /// Compiles `pattern` (UTF-8, Perl/Oniguruma syntax) with \p{..} and \s
  /// meaning their Unicode classes, and JIT-compiles it.
  static Expected<Regex> compile(const std::string &pattern);
  /// A pattern matching exactly `text` (used for literal String patterns and
  /// the added tokens' alternation).
  static std::string escape(std::string_view text);

  /// The leftmost match in `text` at or after byte `from`, as [begin, end);
  /// false when there is none. `text` must be valid UTF-8.
  bool find(std::string_view text, size_t from, size_t &begin,
            size_t &end) const;

private:
  struct State;
  std::shared_ptr<State> state_;
};

/// How Hugging Face's Split pre-tokenizer groups matches and gaps.
enum class SplitBehavior {
  Removed,
  Isolated,
  MergedWithPrevious,
  MergedWithNext,
  Contiguous
};

/// Appends the pieces of `text` (views into it, none empty) split by `regex`
/// as `tokenizers`' NormalizedString::split does; `invert` swaps matches and
/// gaps first.
void splitPieces(const Regex &regex, SplitBehavior behavior, bool invert,
                 std::string_view text, std::vector<std::string_view> &out);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DATA_REGEX_H
