//===- RunConfigFile.cpp - The trainer's --config file --------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// JSON through nlohmann-json, TOML through toml++ (header-only; the driver is
// built with exceptions, which both report syntax errors by). Either file is
// first reduced to the same list of keys and typed values, so that the two
// formats are checked by one piece of code and cannot come to differ.
//
//===----------------------------------------------------------------------===//

#include "config/RunConfigFile.h"

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace infir2::rt;

namespace {

/// One key of the file, its value reduced to what flags can take.
struct Entry {
  enum Type { String, Integer, Float, Boolean, Other };
  std::string key; ///< as the file writes it
  Type type;
  std::string text; ///< the value as an argument (all but Other)
  const char *what; ///< the value's type, for errors ("an array")
};

/// The shortest text that reads back as `x`.
std::string formatReal(double x) {
  char s[40];
  for (int digits : {15, 16, 17}) {
    std::snprintf(s, sizeof s, "%.*g", digits, x);
    if (std::strtod(s, nullptr) == x)
      break;
  }
  return s;
}

Entry integerEntry(std::string key, int64_t x) {
  return {std::move(key), Entry::Integer, std::to_string(x), "an integer"};
}

Entry floatEntry(std::string key, double x) {
  return {std::move(key), Entry::Float, formatReal(x),
          "a floating-point number"};
}

Entry booleanEntry(std::string key, bool x) {
  return {std::move(key), Entry::Boolean, x ? "true" : "false", "a boolean"};
}

Expected<std::vector<Entry>> readJson(const std::string &path,
                                      const std::string &text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error &e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 5:
    // syntax error while parsing ...": the position as a compiler writes it.
    std::string what = e.what();
    size_t line = 0, column = 0, at = what.find("at line ");
    size_t colon = what.find(": ", at == std::string::npos ? 0 : at);
    if (at == std::string::npos || colon == std::string::npos ||
        std::sscanf(what.c_str() + at, "at line %zu, column %zu", &line,
                    &column) != 2)
      return fail("%s: invalid JSON: %s", path.c_str(), what.c_str());
    // Column 0: the error is the line's end (its newline, read and put back).
    std::string where = std::to_string(line);
    if (column)
      where += ":" + std::to_string(column);
    return fail("%s:%s: invalid JSON: %s", path.c_str(), where.c_str(),
                what.c_str() + colon + 2);
  }
  if (!doc.is_object())
    return fail("%s: expected a JSON object of options, as {\"steps\": 100}",
                path.c_str());
  std::vector<Entry> entries;
  for (const auto &[key, v] : doc.items()) {
    if (v.is_string())
      entries.push_back({key, Entry::String, v.get<std::string>(), "a string"});
    else if (v.is_number_float())
      entries.push_back(floatEntry(key, v.get<double>()));
    else if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
      entries.push_back({key, Entry::Integer, std::to_string(v.get<uint64_t>()),
                         "an integer"});
    else if (v.is_number())
      entries.push_back(integerEntry(key, v.get<int64_t>()));
    else if (v.is_boolean())
      entries.push_back(booleanEntry(key, v.get<bool>()));
    else
      entries.push_back({key, Entry::Other, "",
                         v.is_null()    ? "null"
                         : v.is_array() ? "an array"
                                        : "an object"});
  }
  return entries;
}

Expected<std::vector<Entry>> readToml(const std::string &path,
                                      const std::string &text) {
  toml::table doc;
  try {
    doc = toml::parse(std::string_view(text), std::string_view(path));
  } catch (const toml::parse_error &e) {
    std::string_view why = e.description();
    return fail("%s:%u:%u: invalid TOML: %.*s", path.c_str(),
                unsigned(e.source().begin.line),
                unsigned(e.source().begin.column), int(why.size()), why.data());
  }
  std::vector<Entry> entries;
  for (auto &&[k, v] : doc) {
    std::string key(k.str());
    if (auto s = v.value_exact<std::string>())
      entries.push_back({key, Entry::String, *s, "a string"});
    else if (auto i = v.value_exact<int64_t>())
      entries.push_back(integerEntry(key, *i));
    else if (auto x = v.value_exact<double>())
      entries.push_back(floatEntry(key, *x));
    else if (auto b = v.value_exact<bool>())
      entries.push_back(booleanEntry(key, *b));
    else
      entries.push_back({key, Entry::Other, "",
                         v.is_array()   ? "an array"
                         : v.is_table() ? "a table"
                                        : "a date or time"});
  }
  return entries;
}

bool accepts(ValueKind kind, Entry::Type type) {
  switch (kind) {
  case ValueKind::Text:
    return type == Entry::String;
  case ValueKind::Integer:
    return type == Entry::Integer;
  case ValueKind::Real:
    return type == Entry::Integer || type == Entry::Float;
  case ValueKind::Bool:
    return type == Entry::Boolean;
  case ValueKind::Size:
    return type == Entry::Integer || type == Entry::String;
  }
  return false;
}

const char *expected(ValueKind kind) {
  switch (kind) {
  case ValueKind::Text:
    return "a string";
  case ValueKind::Integer:
    return "an integer";
  case ValueKind::Real:
    return "a number";
  case ValueKind::Bool:
    return "true or false";
  case ValueKind::Size:
    return "a number of bytes or a string such as \"5GB\"";
  }
  return "";
}

} // namespace

Expected<std::vector<std::string>>
infir2::rt::readConfigFile(const std::string &path,
                           const std::map<std::string, ValueKind> &keys) {
  auto endsWith = [&](const char *ext) {
    size_t n = std::strlen(ext);
    return path.size() > n && path.compare(path.size() - n, n, ext) == 0;
  };
  bool json = endsWith(".json");
  if (!json && !endsWith(".toml"))
    return fail("%s: a config file must be .json or .toml", path.c_str());
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad() || text.bad())
    return fail("%s: cannot read: %s", path.c_str(), std::strerror(errno));
  Expected<std::vector<Entry>> entries =
      json ? readJson(path, text.str()) : readToml(path, text.str());
  if (!entries)
    return entries.failure();

  std::vector<std::string> args;
  std::map<std::string, std::string> seen; // name -> the key as written
  for (const Entry &e : *entries) {
    std::string name = e.key;
    std::replace(name.begin(), name.end(), '_', '-');
    auto kind = keys.find(name);
    if (kind == keys.end())
      return fail("%s: unknown key '%s'", path.c_str(), e.key.c_str());
    if (auto [first, fresh] = seen.emplace(name, e.key); !fresh)
      return fail("%s: '%s' and '%s' are the same key", path.c_str(),
                  first->second.c_str(), e.key.c_str());
    if (!accepts(kind->second, e.type))
      return fail("%s: '%s' must be %s, not %s", path.c_str(), e.key.c_str(),
                  expected(kind->second), e.what);
    if (name == "config")
      continue;
    // "--save=" would be a flag without its value; a separate empty
    // argument is the empty string.
    if (e.text.empty()) {
      args.push_back("--" + name);
      args.emplace_back();
    } else {
      args.push_back("--" + name + "=" + e.text);
    }
  }
  return args;
}
