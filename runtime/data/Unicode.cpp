//===- Unicode.cpp - UTF-8 repair and normalization -----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Unicode.h"

#include <cstdint>
#include <cstdlib>
#include <utf8proc.h>

using namespace infir2::rt;

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

/// The length of the valid UTF-8 sequence at `s[i]`, or 0 when it is invalid.
/// `subpart` is then the length of its maximal subpart (at least 1): the
/// bytes WHATWG's decoder consumes before it emits U+FFFD.
size_t sequenceLength(std::string_view s, size_t i, size_t &subpart) {
  auto b = uint8_t(s[i]);
  if (b < 0x80)
    return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0)
      lo = 0xA0; // overlong
    if (b == 0xED)
      hi = 0x9F; // surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0)
      lo = 0x90; // overlong
    if (b == 0xF4)
      hi = 0x8F; // above U+10FFFF
  } else {
    subpart = 1;
    return 0;
  }
  size_t j = i + 1;
  for (size_t k = 0; k < need; ++k, ++j) {
    if (j >= s.size() || uint8_t(s[j]) < lo || uint8_t(s[j]) > hi) {
      subpart = j - i;
      return 0;
    }
    lo = 0x80;
    hi = 0xBF;
  }
  return need + 1;
}

bool isAscii(std::string_view s) {
  for (char c : s)
    if (uint8_t(c) >= 0x80)
      return false;
  return true;
}

} // namespace

std::string_view infir2::rt::repairUtf8(std::string_view text,
                                        std::string &storage) {
  size_t i = 0, subpart = 0;
  // Most text is valid: scan without copying until the first invalid byte.
  while (i < text.size()) {
    size_t n = sequenceLength(text, i, subpart);
    if (n == 0)
      break;
    i += n;
  }
  if (i == text.size())
    return text;
  storage.assign(text.substr(0, i));
  while (i < text.size()) {
    size_t n = sequenceLength(text, i, subpart);
    if (n == 0) {
      storage += kReplacement;
      i += subpart;
    } else {
      storage.append(text.substr(i, n));
      i += n;
    }
  }
  return storage;
}

void infir2::rt::normalize(std::string_view text, NormalForm form,
                           std::string &out) {
  if (isAscii(text)) {
    out.assign(text);
    return;
  }
  int options = UTF8PROC_STABLE;
  switch (form) {
  case NormalForm::NFC:
    options |= UTF8PROC_COMPOSE;
    break;
  case NormalForm::NFD:
    options |= UTF8PROC_DECOMPOSE;
    break;
  case NormalForm::NFKC:
    options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    break;
  case NormalForm::NFKD:
    options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    break;
  }
  utf8proc_uint8_t *result = nullptr;
  utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
      utf8proc_ssize_t(text.size()), &result, utf8proc_option_t(options));
  // The text was repaired before, so utf8proc can only fail to allocate; the
  // text is then tokenized unnormalized rather than dropped.
  if (n < 0) {
    out.assign(text);
    return;
  }
  out.assign(reinterpret_cast<const char *>(result), size_t(n));
  std::free(result);
}
