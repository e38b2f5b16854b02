//===- Regex.cpp - PCRE2 regexes for the tokenizer's splits ---------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>

using namespace infir2::rt;

/// The compiled pattern and the buffers one match needs. A Tokenizer is used
/// by one thread at a time, so the match data is reused, not reallocated.
struct Regex::State {
  pcre2_code *code = nullptr;
  pcre2_match_data *match = nullptr;
  pcre2_match_context *context = nullptr;
  pcre2_jit_stack *stack = nullptr;
  ~State() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(match);
    pcre2_code_free(code);
  }
};

Expected<Regex> Regex::compile(const std::string &pattern) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  auto state = std::make_shared<State>();
  state->code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
      PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &code, &offset, nullptr);
  if (!state->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof(message));
    return fail("cannot compile the regex at offset %zu: %s", size_t(offset),
                reinterpret_cast<const char *>(message));
  }
  // Without JIT (an exotic platform) PCRE2 interprets the pattern: slower,
  // same matches.
  if (pcre2_jit_compile(state->code, PCRE2_JIT_COMPLETE) == 0) {
    state->stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    state->context = pcre2_match_context_create(nullptr);
    if (state->stack && state->context)
      pcre2_jit_stack_assign(state->context, nullptr, state->stack);
  }
  state->match = pcre2_match_data_create_from_pattern(state->code, nullptr);
  if (!state->match)
    return fail("out of memory compiling a regex");
  Regex regex;
  regex.state_ = std::move(state);
  return regex;
}

std::string Regex::escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    // A backslash makes any ASCII non-alphanumeric literal in PCRE2; bytes of
    // multi-byte characters are literal already.
    if (u < 0x80 && !std::isalnum(u))
      out += '\\';
    out += c;
  }
  return out;
}

bool Regex::find(std::string_view text, size_t from, size_t &begin,
                 size_t &end) const {
  int rc = pcre2_match(state_->code, reinterpret_cast<PCRE2_SPTR>(text.data()),
                       text.size(), from, PCRE2_NO_UTF_CHECK, state_->match,
                       state_->context);
  if (rc < 0)
    return false;
  PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(state_->match);
  begin = ovector[0];
  end = ovector[1];
  return true;
}

namespace {

/// The length of the UTF-8 character that starts with byte `b`.
size_t charLength(unsigned char b) {
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

struct Span {
  size_t begin, end;
  bool match;
};

} // namespace

void infir2::rt::splitPieces(const Regex &regex, SplitBehavior behavior,
                             bool invert, std::string_view text,
                             std::vector<std::string_view> &out) {
  // The matches and the gaps between them, covering the text. As in
  // `tokenizers`, an empty match is a (zero-length) match of its own, and the
  // search goes on one character after it.
  thread_local std::vector<Span> spans;
  spans.clear();
  size_t prev = 0, from = 0, b, e;
  while (from <= text.size() && regex.find(text, from, b, e)) {
    if (b > prev)
      spans.push_back({prev, b, invert});
    spans.push_back({b, e, !invert});
    prev = e;
    from = e > b ? e : e + (e < text.size() ? charLength(text[e]) : 1);
  }
  if (prev < text.size())
    spans.push_back({prev, text.size(), invert});

  // Group them by the behavior (tokenizers' SplitDelimiterBehavior).
  thread_local std::vector<Span> pieces;
  pieces.clear();
  bool previousMatch = false;
  switch (behavior) {
  case SplitBehavior::Removed:
    for (const Span &s : spans)
      if (!s.match)
        pieces.push_back(s);
    break;
  case SplitBehavior::Isolated:
    pieces = spans;
    break;
  case SplitBehavior::MergedWithPrevious:
    for (const Span &s : spans) {
      if (s.match && !previousMatch && !pieces.empty())
        pieces.back().end = s.end;
      else
        pieces.push_back(s);
      previousMatch = s.match;
    }
    break;
  case SplitBehavior::MergedWithNext:
    for (size_t i = spans.size(); i-- > 0;) {
      const Span &s = spans[i];
      if (s.match && !previousMatch && !pieces.empty())
        pieces.back().begin = s.begin;
      else
        pieces.push_back(s);
      previousMatch = s.match;
    }
    std::reverse(pieces.begin(), pieces.end());
    break;
  case SplitBehavior::Contiguous:
    for (const Span &s : spans) {
      if (s.match == previousMatch && !pieces.empty())
        pieces.back().end = s.end;
      else
        pieces.push_back(s);
      previousMatch = s.match;
    }
    break;
  }
  for (const Span &s : pieces)
    if (s.end > s.begin)
      out.push_back(text.substr(s.begin, s.end - s.begin));
}
