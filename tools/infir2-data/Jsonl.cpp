//===- Jsonl.cpp - Line-oriented input for infir2-data --------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Jsonl.h"

#include "Unicode.h"

#include <fstream>
#include <iostream>

using namespace infir2;
using namespace infir2::data;

std::string data::inputName(const std::string &path) {
  return path.empty() || path == "-" ? "<stdin>" : path;
}

rt::Expected<nlohmann::json> data::parseJsonLine(std::string_view line) {
  try {
    return nlohmann::json::parse(line.begin(), line.end());
  } catch (const nlohmann::json::exception &e) {
    return rt::fail("not valid JSON: %s", e.what());
  }
}

rt::Expected<std::string> data::documentText(std::string_view line) {
  std::string repaired;
  std::string_view valid = rt::repairUtf8(line, repaired);
  rt::Expected<nlohmann::json> parsed = parseJsonLine(valid);
  if (!parsed)
    return parsed.failure();
  const nlohmann::json &doc = *parsed;
  if (!doc.is_object())
    return rt::fail("expected an object {\"text\": ...}");
  auto it = doc.find("text");
  if (it == doc.end())
    return rt::fail("\"text\" is missing");
  if (!it->is_string())
    return rt::fail("\"text\" must be a string");
  return it->get<std::string>();
}

rt::Status
data::forEachLine(const std::string &path,
                  const std::function<rt::Status(std::string_view)> &onLine) {
  std::ifstream file;
  std::istream *in = &std::cin;
  if (!path.empty() && path != "-") {
    file.open(path, std::ios::binary);
    if (!file)
      return rt::fail("%s: cannot open", path.c_str());
    in = &file;
  }
  std::string line;
  for (size_t number = 1; std::getline(*in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    rt::Status status = onLine(line);
    if (!status)
      return rt::fail("%s:%zu: %s", inputName(path).c_str(), number,
                      status.message().c_str());
  }
  if (in->bad())
    return rt::fail("%s: read error", inputName(path).c_str());
  return rt::Status::ok();
}
