//===- DataSource.cpp - Training data as token streams --------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "DataSource.h"

#include "Blend.h"
#include "DocumentStream.h"
#include "PackedDocuments.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

using namespace infir2::rt;
namespace fs = std::filesystem;

TokenSource::~TokenSource() = default;

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A file of raw token ids or text, read whole: sample i is the window at
/// token (i mod W)·seq, W the windows that fit.
class RawTokens : public TokenSource {
public:
  RawTokens(std::string path, DataFormat format, std::vector<uint32_t> t,
            int64_t seq)
      : path_(std::move(path)), format_(format), tokens_(std::move(t)),
        seq_(seq) {}
  Status sample(int64_t index, int32_t *tokens, float *weights,
                int32_t *segments) override {
    int64_t at = (index % samplesPerEpoch()) * seq_;
    for (int64_t t = 0; t <= seq_; ++t)
      tokens[t] = int32_t(tokens_[size_t(at + t)]);
    std::fill(weights, weights + seq_, 1.0f);
    std::fill(segments, segments + seq_, 0);
    return Status::ok();
  }
  int64_t samplesPerEpoch() const override {
    return (int64_t(tokens_.size()) - 1) / seq_;
  }
  std::string describe() const override {
    return path_ + ": " + std::to_string(tokens_.size()) + " tokens (" +
           nameOf(format_) + ")";
  }

private:
  std::string path_;
  DataFormat format_;
  std::vector<uint32_t> tokens_;
  int64_t seq_;
};

/// The offset of the first byte of `text` that is not well-formed UTF-8
/// (or a NUL, which text does not hold), or npos.
size_t firstNonText(const std::string &text) {
  const auto *p = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (c == 0 || len == 0 || i + len > n)
      return i;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80)
        return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      return i;
    i += len;
  }
  return std::string::npos;
}

/// The Megatron dataset prefix `path` names (P, P.bin or P.idx, with P.idx
/// present), or "".
std::string datasetPrefix(const std::string &path) {
  std::error_code ec;
  if (fs::is_regular_file(path + ".idx", ec))
    return path;
  for (const char *ext : {".idx", ".bin"})
    if (endsWith(path, ext)) {
      std::string stem = path.substr(0, path.size() - 4);
      if (fs::is_regular_file(stem + ".idx", ec))
        return stem;
    }
  return "";
}

Expected<std::unique_ptr<TokenSource>> openDataset(const std::string &prefix,
                                                   const SourceOptions &o) {
  Expected<IndexedDataset> tokens = IndexedDataset::open(prefix);
  if (!tokens)
    return tokens.failure();
  std::optional<IndexedDataset> mask;
  std::error_code ec;
  std::string maskPrefix = o.lossMask;
  if (maskPrefix.empty() && fs::is_regular_file(prefix + ".mask.idx", ec))
    maskPrefix = prefix + ".mask";
  if (!maskPrefix.empty()) {
    std::string stem = datasetPrefix(maskPrefix);
    if (stem.empty())
      return fail("--loss-mask %s: no Megatron dataset there (%s.idx is "
                  "missing)",
                  maskPrefix.c_str(), maskPrefix.c_str());
    Expected<IndexedDataset> m = IndexedDataset::open(stem);
    if (!m)
      return m.failure();
    mask = std::move(*m);
  }
  if (o.packing == Packing::Documents || (o.packing == Packing::Auto && mask)) {
    Expected<std::unique_ptr<PackedDocuments>> packed =
        PackedDocuments::create(std::move(*tokens), std::move(mask), o);
    if (!packed)
      return packed.failure();
    return std::unique_ptr<TokenSource>(std::move(*packed));
  }
  Expected<std::unique_ptr<DocumentStream>> stream =
      DocumentStream::create(std::move(*tokens), std::move(mask), o);
  if (!stream)
    return stream.failure();
  return std::unique_ptr<TokenSource>(std::move(*stream));
}

Expected<std::unique_ptr<TokenSource>> openFile(const std::string &path,
                                                const SourceOptions &o) {
  if (std::string prefix = datasetPrefix(path); !prefix.empty())
    return openDataset(prefix, o);
  if (o.format == DataFormat::Auto && endsWith(path, ".bin"))
    return fail("%s: a .bin without its .idx beside it (a Megatron dataset "
                "needs both; for raw uint16 token ids use --data-format u16 "
                "or the .u16 extension)",
                path.c_str());
  if (o.packing == Packing::Documents)
    return fail("%s: --packing documents needs a Megatron dataset (raw token "
                "files have no document boundaries)",
                path.c_str());
  if (!o.lossMask.empty())
    return fail("%s: --loss-mask needs a Megatron dataset as --data (raw "
                "token files have no documents to mask)",
                path.c_str());
  DataFormat format = resolveDataFormat(path, o.format);
  Expected<std::vector<uint32_t>> tokens =
      readTokens(path, o.format, o.vocab, o.seq + 1);
  if (!tokens)
    return tokens.failure();
  return std::unique_ptr<TokenSource>(
      new RawTokens(path, format, std::move(*tokens), o.seq));
}

} // namespace

Expected<std::unique_ptr<TokenSource>>
infir2::rt::openTokenSource(const std::string &spec, const SourceOptions &o) {
  // A path with spaces in it is a path, not a blend.
  std::error_code ec;
  if (fs::exists(spec, ec) || !datasetPrefix(spec).empty())
    return openFile(spec, o);
  std::istringstream words(spec);
  std::vector<std::string> parts;
  for (std::string w; words >> w;)
    parts.push_back(w);
  if (parts.size() <= 1)
    return openFile(parts.empty() ? spec : parts[0], o);
  // A blend: weight, prefix, weight, prefix, ...
  if (!o.lossMask.empty())
    return fail("'%s': --loss-mask goes with one dataset; in a blend each "
                "dataset's mask is found beside it (P.mask)",
                spec.c_str());
  if (parts.size() % 2)
    return fail("'%s': a blend is 'WEIGHT PREFIX WEIGHT PREFIX ...' (%zu "
                "words given)",
                spec.c_str(), parts.size());
  std::vector<double> weights;
  std::vector<std::unique_ptr<TokenSource>> sources;
  for (size_t i = 0; i < parts.size(); i += 2) {
    char *end = nullptr;
    double w = std::strtod(parts[i].c_str(), &end);
    if (end == parts[i].c_str() || *end || !std::isfinite(w) || w <= 0)
      return fail("'%s': blend weight '%s' is not a positive number",
                  spec.c_str(), parts[i].c_str());
    Expected<std::unique_ptr<TokenSource>> s = openFile(parts[i + 1], o);
    if (!s)
      return s.failure();
    weights.push_back(w);
    sources.push_back(std::move(*s));
  }
  return std::unique_ptr<TokenSource>(
      new Blend(std::move(weights), std::move(sources)));
}

DataFormat infir2::rt::resolveDataFormat(const std::string &path,
                                         DataFormat format) {
  if (format != DataFormat::Auto)
    return format;
  return endsWith(path, ".u16")   ? DataFormat::U16
         : endsWith(path, ".u32") ? DataFormat::U32
                                  : DataFormat::Text;
}

Expected<std::vector<uint32_t>>
infir2::rt::decodeTokens(const std::string &path, const std::string &bytes,
                         DataFormat format) {
  format = resolveDataFormat(path, format);
  std::vector<uint32_t> tokens;
  if (format == DataFormat::Text) {
    tokens.reserve(bytes.size());
    for (char c : bytes)
      tokens.push_back(static_cast<unsigned char>(c));
    return tokens;
  }
  size_t width = format == DataFormat::U16 ? 2 : 4;
  if (bytes.size() % width)
    return fail("%s: truncated: %zu bytes is not a whole number of %s tokens",
                path.c_str(), bytes.size(), nameOf(format));
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

Expected<std::vector<uint32_t>> infir2::rt::readTokens(const std::string &path,
                                                       DataFormat format,
                                                       int64_t vocab,
                                                       int64_t minTokens) {
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
  DataFormat resolved = resolveDataFormat(path, format);
  uintmax_t size = std::filesystem::file_size(path, ec);
  int64_t tokenBytes = resolved == DataFormat::U32   ? 4
                       : resolved == DataFormat::U16 ? 2
                                                     : 1;
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
  // Text read as such must be text: a binary file (an index, a checkpoint)
  // is refused rather than trained on byte by byte. --data-format text
  // takes any bytes.
  if (format == DataFormat::Auto && resolved == DataFormat::Text)
    if (size_t bad = firstNonText(bytes); bad != std::string::npos)
      return fail("%s: not UTF-8 text (byte %zu), not a Megatron dataset (no "
                  ".idx beside it) and not named .u16/.u32; --data-format "
                  "text|u16|u32 says which it is",
                  path.c_str(), bad);
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

Status infir2::rt::fillSequences(TokenSource &source, int64_t &position,
                                 int64_t batch, int64_t seq, int ranks,
                                 int rank, const Batch &out) {
  std::vector<int32_t> tokens(size_t(seq) + 1);
  for (int64_t b = 0; b < batch; ++b) {
    int32_t *segments = out.segments + b * seq;
    INFIR2_RETURN_IF_ERROR(source.sample(position + rank * batch + b,
                                         tokens.data(), out.weights + b * seq,
                                         segments));
    std::copy(tokens.begin(), tokens.end() - 1, out.ids + b * seq);
    std::copy(tokens.begin() + 1, tokens.end(), out.targets + b * seq);
    for (int64_t t = 0, start = 0; t < seq; ++t) {
      if (t && segments[t] != segments[t - 1])
        start = t;
      out.positions[b * seq + t] = int32_t(t - start);
    }
  }
  position += int64_t(ranks) * batch;
  return Status::ok();
}
