//===- DataSource.cpp - Training data as token streams --------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "DataSource.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace infir2::rt;

std::string infir2::rt::resolveDataFormat(const std::string &path,
                                          const std::string &format) {
  if (format != "auto")
    return format;
  auto endsWith = [&](const std::string &s) {
    return path.size() >= s.size() &&
           path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  return endsWith(".u16") || endsWith(".bin") ? "u16"
         : endsWith(".u32")                   ? "u32"
                                              : "text";
}

Expected<std::vector<uint32_t>>
infir2::rt::decodeTokens(const std::string &path, const std::string &bytes,
                         const std::string &format) {
  std::vector<uint32_t> tokens;
  if (format == "text") {
    tokens.reserve(bytes.size());
    for (char c : bytes)
      tokens.push_back(static_cast<unsigned char>(c));
    return tokens;
  }
  if (format != "u16" && format != "u32")
    return fail("--data-format must be auto, text, u16 or u32, got '%s'",
                format.c_str());
  size_t width = format == "u16" ? 2 : 4;
  if (bytes.size() % width)
    return fail("%s: truncated: %zu bytes is not a whole number of %s tokens",
                path.c_str(), bytes.size(), format.c_str());
  tokens.resize(bytes.size() / width);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto *p =
        reinterpret_cast<const unsigned char *>(bytes.data()) + i * width;
    uint32_t v = 0;
    for (size_t b = width; b-- > 0;)
      v = (v << 8) | p[b]; // little-endian, whatever the host
    tokens[i] = v;
  }
  return tokens;
}

Expected<std::vector<uint32_t>>
infir2::rt::readTokens(const std::string &path, const std::string &format,
                       int64_t vocab, int64_t minTokens) {
  // Only a regular file has an end and a size to check: a directory, a
  // device (/dev/zero, /dev/urandom) or a pipe would fail to read or read
  // forever.
  std::error_code ec;
  std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec)
    return fail("%s: cannot open: %s", path.c_str(), ec.message().c_str());
  if (!std::filesystem::is_regular_file(status))
    return fail("%s: not a regular file (training data is read from a file, "
                "not a directory, device or pipe)",
                path.c_str());
  std::string resolved = resolveDataFormat(path, format);
  uintmax_t size = std::filesystem::file_size(path, ec);
  int64_t tokenBytes = resolved == "u32" ? 4 : resolved == "u16" ? 2 : 1;
  // Checked before reading, as after: the same message either way (a
  // truncated file is reported as such by decodeTokens).
  if (!ec && int64_t(size) % tokenBytes == 0 &&
      int64_t(size) / tokenBytes < minTokens)
    return fail("%s: %ju tokens, fewer than one sequence needs (%lld)",
                path.c_str(), uintmax_t(int64_t(size) / tokenBytes),
                (long long)minTokens);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  Expected<std::vector<uint32_t>> tokens = decodeTokens(path, bytes, resolved);
  if (!tokens)
    return tokens;
  for (size_t i = 0; i < tokens->size(); ++i)
    if ((*tokens)[i] >= uint64_t(vocab))
      return fail("%s: token %u at position %zu is not below the vocabulary "
                  "size %lld",
                  path.c_str(), (*tokens)[i], i, (long long)vocab);
  if (int64_t(tokens->size()) < minTokens)
    return fail("%s: %zu tokens, fewer than one sequence needs (%lld)",
                path.c_str(), tokens->size(), (long long)minTokens);
  return tokens;
}

void infir2::rt::fillSequences(const std::vector<uint32_t> &tokens,
                               int64_t &position, int64_t batch, int64_t seq,
                               int ranks, int rank, int32_t *ids,
                               int32_t *targets) {
  int64_t n = tokens.size();
  for (int64_t g = 0; g < ranks * batch; ++g) {
    if (position + seq + 1 > n)
      position = 0;
    int64_t b = g - rank * batch;
    if (b >= 0 && b < batch)
      for (int64_t t = 0; t < seq; ++t) {
        ids[b * seq + t] = int32_t(tokens[position + t]);
        targets[b * seq + t] = int32_t(tokens[position + t + 1]);
      }
    position += seq;
  }
}
