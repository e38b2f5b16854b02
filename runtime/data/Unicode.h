//===- Unicode.h - UTF-8 repair and Unicode normalization -------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The tokenizer works on valid UTF-8 only. Input that is not is repaired the
// way WHATWG's TextDecoder and Python's bytes.decode(errors="replace") do:
// every maximal subpart of an invalid sequence becomes one U+FFFD. Unicode
// normalization (NFC and its siblings) is utf8proc's.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DATA_UNICODE_H
#define INFIR2_RUNTIME_DATA_UNICODE_H

#include <string>
#include <string_view>

namespace infir2::rt {

/// `text` itself when it is valid UTF-8; otherwise a copy in `storage` with
/// each invalid sequence (its maximal subpart) replaced by U+FFFD.
std::string_view repairUtf8(std::string_view text, std::string &storage);

/// The Unicode normalization forms a tokenizer.json may name.
enum class NormalForm { NFC, NFD, NFKC, NFKD };

/// Normalizes valid UTF-8 `text` into `out` (ASCII text is its own normal
/// form in all four and is copied as is).
void normalize(std::string_view text, NormalForm form, std::string &out);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DATA_UNICODE_H
