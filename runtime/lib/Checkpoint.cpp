//===- Checkpoint.cpp - safetensors reading and writing -------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// safetensors: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]},
//  "__metadata__": {...}}, then the data. The JSON reader below accepts what
// that header can hold (objects, arrays, strings, numbers) and nothing else.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Checkpoint.h"
#include "infir2/runtime/Float.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace infir2::rt;

namespace {

struct Json {
  enum Kind { Null, Number, String, Array, Object } kind = Null;
  double number = 0;
  std::string string;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json *field(const std::string &name) const {
    for (const auto &f : fields)
      if (f.first == name)
        return &f.second;
    return nullptr;
  }
};

class Parser {
public:
  explicit Parser(const std::string &text) : s(text) {}

  bool parse(Json &out) {
    if (!value(out))
      return false;
    skip();
    return i == s.size();
  }

private:
  void skip() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
  }
  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (s.compare(i, n, word) != 0)
      return false;
    i += n;
    return true;
  }
  bool str(std::string &out) {
    if (i >= s.size() || s[i] != '"')
      return false;
    for (++i; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\') {
        if (++i >= s.size())
          return false;
        char e = s[i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += s[i];
      }
    }
    if (i >= s.size())
      return false;
    ++i;
    return true;
  }
  bool value(Json &out) {
    skip();
    if (i >= s.size() || ++depth > 64)
      return false;
    char c = s[i];
    bool ok = true;
    if (c == '{') {
      out.kind = Json::Object;
      ++i;
      skip();
      if (i < s.size() && s[i] == '}') {
        ++i;
      } else {
        while (ok) {
          skip();
          std::string key;
          Json v;
          ok = str(key);
          skip();
          ok = ok && i < s.size() && s[i++] == ':' && value(v);
          if (ok)
            out.fields.emplace_back(std::move(key), std::move(v));
          skip();
          if (!ok || i >= s.size())
            return false;
          if (s[i] == '}') {
            ++i;
            break;
          }
          ok = s[i++] == ',';
        }
      }
    } else if (c == '[') {
      out.kind = Json::Array;
      ++i;
      skip();
      if (i < s.size() && s[i] == ']') {
        ++i;
      } else {
        while (ok) {
          Json v;
          ok = value(v);
          if (ok)
            out.items.push_back(std::move(v));
          skip();
          if (!ok || i >= s.size())
            return false;
          if (s[i] == ']') {
            ++i;
            break;
          }
          ok = s[i++] == ',';
        }
      }
    } else if (c == '"') {
      out.kind = Json::String;
      ok = str(out.string);
    } else if (literal("null") || literal("true") || literal("false")) {
      out.kind = Json::Null;
    } else {
      out.kind = Json::Number;
      char *end = nullptr;
      out.number = std::strtod(s.c_str() + i, &end);
      ok = end != s.c_str() + i;
      i = end - s.c_str();
    }
    --depth;
    return ok;
  }

  const std::string &s;
  size_t i = 0;
  int depth = 0;
};

int64_t dtypeSize(const std::string &dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64")
    return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32")
    return 4;
  if (dtype == "BF16" || dtype == "F16" || dtype == "I16" || dtype == "U16")
    return 2;
  if (dtype == "F8_E4M3" || dtype == "F8_E5M2" || dtype == "I8" ||
      dtype == "U8" || dtype == "BOOL")
    return 1;
  return 0;
}

} // namespace

bool infir2::rt::readSafetensors(const std::string &path,
                                 std::map<std::string, StoredTensor> &tensors,
                                 std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string blob = buffer.str();
  if (blob.size() < 8) {
    error = path + ": truncated (no header length)";
    return false;
  }
  uint64_t n = 0;
  for (int b = 7; b >= 0; --b)
    n = (n << 8) | static_cast<unsigned char>(blob[b]);
  if (n > blob.size() - 8) {
    error = path + ": truncated (header of " + std::to_string(n) +
            " bytes, file of " + std::to_string(blob.size()) + ")";
    return false;
  }
  Json header;
  if (!Parser(blob.substr(8, n)).parse(header) || header.kind != Json::Object) {
    error = path + ": the header is not a JSON object";
    return false;
  }
  uint64_t dataSize = blob.size() - 8 - n;
  for (const auto &[name, info] : header.fields) {
    if (name == "__metadata__")
      continue;
    const Json *dtype = info.field("dtype"), *shape = info.field("shape"),
               *offsets = info.field("data_offsets");
    if (!dtype || dtype->kind != Json::String || !shape ||
        shape->kind != Json::Array || !offsets ||
        offsets->kind != Json::Array || offsets->items.size() != 2) {
      error = path + ": tensor '" + name + "' has a malformed header entry";
      return false;
    }
    StoredTensor t;
    t.dtype = dtype->string;
    int64_t count = 1;
    for (const Json &d : shape->items) {
      t.shape.push_back(static_cast<int64_t>(d.number));
      count *= t.shape.back();
    }
    double begin = offsets->items[0].number, end = offsets->items[1].number;
    int64_t size = dtypeSize(t.dtype);
    if (size == 0 || begin < 0 || end < begin || end > double(dataSize) ||
        int64_t(end - begin) != count * size) {
      error = path + ": tensor '" + name + "' (" + t.dtype +
              ") has data offsets that do not match its shape or the file";
      return false;
    }
    t.bytes.assign(blob.begin() + 8 + n + int64_t(begin),
                   blob.begin() + 8 + n + int64_t(end));
    tensors[name] = std::move(t);
  }
  return true;
}

bool infir2::rt::writeSafetensors(
    const std::string &path,
    const std::vector<std::pair<std::string, const StoredTensor *>> &tensors,
    std::string &error) {
  std::string header = "{";
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const StoredTensor &t = *tensors[i].second;
    header += (i ? "," : "") + std::string("\"") + tensors[i].first +
              "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d)
      header += (d ? "," : "") + std::to_string(t.shape[d]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
  }
  header += "}";
  while (header.size() % 8)
    header += ' ';
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  uint64_t n = header.size();
  unsigned char len[8];
  for (int b = 0; b < 8; ++b)
    len[b] = static_cast<unsigned char>(n >> (8 * b));
  bool ok = std::fwrite(len, 1, 8, f) == 8 &&
            std::fwrite(header.data(), 1, n, f) == n;
  for (const auto &[name, t] : tensors)
    ok = ok &&
         std::fwrite(t->bytes.data(), 1, t->bytes.size(), f) == t->bytes.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok)
    error = path + ": write failed: " + std::strerror(errno);
  return ok;
}

float infir2::rt::storedFloat(const StoredTensor &t, int64_t i) {
  const uint8_t *p = t.bytes.data();
  if (t.dtype == "F32") {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  if (t.dtype == "F64") {
    double d;
    std::memcpy(&d, p + 8 * i, 8);
    return float(d);
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return t.dtype == "BF16" ? bf16ToFloat(h) : halfToFloat(h); // else F16
}
