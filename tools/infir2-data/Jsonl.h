//===- Jsonl.h - Line-oriented input for infir2-data ------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TOOLS_INFIR2_DATA_JSONL_H
#define INFIR2_TOOLS_INFIR2_DATA_JSONL_H

#include "infir2/runtime/Expected.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace infir2::data {

/// Calls `onLine` for each non-blank line of `path` ("-" or empty: stdin).
/// A line's failure becomes "FILE:LINE: message"; reading stops there.
rt::Status
forEachLine(const std::string &path,
            const std::function<rt::Status(std::string_view)> &onLine);

/// One line's JSON value, or "not valid JSON: <why>".
rt::Expected<nlohmann::json> parseJsonLine(std::string_view line);

/// The text of one JSONL document line {"text": ...}; bytes that are not
/// valid UTF-8 are replaced by U+FFFD first (the tokenizer's own rule).
rt::Expected<std::string> documentText(std::string_view line);

/// The display name of an input path.
std::string inputName(const std::string &path);

} // namespace infir2::data

#endif // INFIR2_TOOLS_INFIR2_DATA_JSONL_H
