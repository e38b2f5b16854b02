//===- IndexedDataset.cpp - Megatron-LM's indexed token datasets ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/IndexedDataset.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace infir2::rt;

namespace {

constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
constexpr size_t kHeaderBytes = 9 + 8 + 1 + 8 + 8;

template <typename T> T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof v); // little-endian, as Megatron-LM writes
  return v;
}

} // namespace

/// Maps `path` read-only (an empty file maps to null).
Status IndexedDataset::map(const std::string &path, Mapping &m) {
  const uint8_t *&data = m.data;
  size_t &bytes = m.bytes;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("%s: not a regular file", path.c_str());
  }
  bytes = size_t(st.st_size);
  data = nullptr;
  if (bytes) {
    void *p = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return fail("%s: cannot map: %s", path.c_str(), std::strerror(err));
    }
    data = static_cast<const uint8_t *>(p);
  }
  ::close(fd);
  return Status::ok();
}

int64_t infir2::rt::indexedDTypeSize(uint8_t code) {
  switch (IndexedDType(code)) {
  case IndexedDType::UInt8:
  case IndexedDType::Int8:
    return 1;
  case IndexedDType::Int16:
  case IndexedDType::UInt16:
    return 2;
  case IndexedDType::Int32:
  case IndexedDType::Float32:
    return 4;
  case IndexedDType::Int64:
  case IndexedDType::Float64:
    return 8;
  }
  return 0;
}

const char *infir2::rt::indexedDTypeName(uint8_t code) {
  static const char *names[] = {"unknown", "uint8",   "int8",    "int16",
                                "int32",   "int64",   "float64", "float32",
                                "uint16"};
  return code < 9 ? names[code] : names[0];
}

IndexedDType infir2::rt::tokenDTypeFor(int64_t vocab) {
  return vocab < 65500 ? IndexedDType::UInt16 : IndexedDType::Int32;
}

IndexedDataset::Mapping::~Mapping() {
  if (data)
    ::munmap(const_cast<uint8_t *>(data), bytes);
}

int64_t IndexedDataset::docIndex(int64_t i) const {
  return load<int64_t>(idx_.data + docsAt_ + 8 * size_t(i));
}
int64_t IndexedDataset::pointer(int64_t s) const {
  return load<int64_t>(idx_.data + pointersAt_ + 8 * size_t(s));
}
int64_t IndexedDataset::sequenceLength(int64_t s) const {
  return load<int32_t>(idx_.data + lengthsAt_ + 4 * size_t(s));
}

int64_t IndexedDataset::documentLength(int64_t d) const {
  int64_t first = firstSequence(d), last = lastSequence(d);
  if (first == last)
    return 0;
  return (pointer(last - 1) - pointer(first)) / elementSize_ +
         sequenceLength(last - 1);
}

void IndexedDataset::readDocument(int64_t d, int64_t from, int64_t n,
                                  int64_t *out) const {
  if (n <= 0)
    return;
  const uint8_t *p = bin_.data + pointer(firstSequence(d)) + from * elementSize_;
  switch (dtype_) {
  case IndexedDType::UInt8:
    for (int64_t i = 0; i < n; ++i)
      out[i] = p[i];
    break;
  case IndexedDType::Int8:
    for (int64_t i = 0; i < n; ++i)
      out[i] = load<int8_t>(p + i);
    break;
  case IndexedDType::Int16:
    for (int64_t i = 0; i < n; ++i)
      out[i] = load<int16_t>(p + 2 * i);
    break;
  case IndexedDType::UInt16:
    for (int64_t i = 0; i < n; ++i)
      out[i] = load<uint16_t>(p + 2 * i);
    break;
  case IndexedDType::Int32:
    for (int64_t i = 0; i < n; ++i)
      out[i] = load<int32_t>(p + 4 * i);
    break;
  case IndexedDType::Int64:
    std::memcpy(out, p, size_t(n) * 8);
    break;
  case IndexedDType::Float32:
  case IndexedDType::Float64:
    break; // refused by open()
  }
}

Expected<IndexedDataset> IndexedDataset::open(const std::string &prefix) {
  IndexedDataset ds;
  ds.prefix_ = prefix;
  std::string idxPath = prefix + ".idx", binPath = prefix + ".bin";
  INFIR2_RETURN_IF_ERROR(map(idxPath, ds.idx_));
  const char *idx = idxPath.c_str();
  if (ds.idx_.bytes < kHeaderBytes || std::memcmp(ds.idx_.data, kMagic, 9) != 0)
    return fail("%s: not a Megatron-LM index (no MMIDIDX header)", idx);
  if (uint64_t version = load<uint64_t>(ds.idx_.data + 9); version != 1)
    return fail("%s: index version %llu, only version 1 is known", idx,
                (unsigned long long)version);
  uint8_t code = ds.idx_.data[17];
  ds.elementSize_ = indexedDTypeSize(code);
  if (!ds.elementSize_ || IndexedDType(code) == IndexedDType::Float32 ||
      IndexedDType(code) == IndexedDType::Float64)
    return fail("%s: element type code %u (%s) is not an integer type", idx,
                unsigned(code), indexedDTypeName(code));
  ds.dtype_ = IndexedDType(code);
  uint64_t sequences = load<uint64_t>(ds.idx_.data + 18),
           docIndices = load<uint64_t>(ds.idx_.data + 26);
  // Both counts are bounded by the file before any product is formed.
  uint64_t room = ds.idx_.bytes - kHeaderBytes;
  if (sequences > room / 12 || docIndices > room / 8 ||
      kHeaderBytes + 12 * sequences + 8 * docIndices != ds.idx_.bytes)
    return fail("%s: %llu sequences and %llu document indices need %s bytes, "
                "the file has %zu (truncated, or a multimodal index, which is "
                "not supported)",
                idx, (unsigned long long)sequences,
                (unsigned long long)docIndices,
                sequences > room / 12 || docIndices > room / 8
                    ? "more"
                    : std::to_string(kHeaderBytes + 12 * sequences +
                                     8 * docIndices)
                          .c_str(),
                ds.idx_.bytes);
  ds.numSequences_ = int64_t(sequences);
  ds.numDocIndices_ = int64_t(docIndices);
  ds.lengthsAt_ = kHeaderBytes;
  ds.pointersAt_ = ds.lengthsAt_ + 4 * sequences;
  ds.docsAt_ = ds.pointersAt_ + 8 * sequences;
  if (docIndices == 0 || ds.docIndex(0) != 0 ||
      ds.docIndex(ds.numDocIndices_ - 1) != ds.numSequences_)
    return fail("%s: document indices must run from 0 to the sequence count "
                "(%lld)",
                idx, (long long)ds.numSequences_);
  for (int64_t i = 1; i < ds.numDocIndices_; ++i)
    if (ds.docIndex(i) < ds.docIndex(i - 1))
      return fail("%s: document index %lld (%lld) is below the one before it",
                  idx, (long long)i, (long long)ds.docIndex(i));

  INFIR2_RETURN_IF_ERROR(map(binPath, ds.bin_));
  // The sequences tile P.bin in order, as Megatron-LM writes them.
  int64_t at = 0;
  for (int64_t s = 0; s < ds.numSequences_; ++s) {
    int64_t length = ds.sequenceLength(s);
    if (length < 0)
      return fail("%s: sequence %lld has a negative length (%lld)", idx,
                  (long long)s, (long long)length);
    if (ds.pointer(s) != at)
      return fail("%s: sequence %lld starts at byte %lld of %s, expected "
                  "%lld (sequences must follow each other)",
                  idx, (long long)s, (long long)ds.pointer(s), binPath.c_str(),
                  (long long)at);
    at += length * ds.elementSize_;
    ds.numElements_ += length;
    if (uint64_t(at) > ds.bin_.bytes)
      break; // reported below, before any sum can overflow
  }
  if (uint64_t(at) != ds.bin_.bytes)
    return fail("%s: %zu bytes, but %s describes %lld", binPath.c_str(),
                ds.bin_.bytes, idx, (long long)at);
  return ds;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

Expected<IndexedDatasetWriter>
IndexedDatasetWriter::create(const std::string &prefix, IndexedDType dtype) {
  IndexedDatasetWriter w;
  w.prefix_ = prefix;
  w.dtype_ = dtype;
  std::string tmp = prefix + ".bin.tmp";
  w.bin_ = std::fopen(tmp.c_str(), "wb");
  if (!w.bin_)
    return fail("%s: cannot write: %s", tmp.c_str(), std::strerror(errno));
  return w;
}

IndexedDatasetWriter::IndexedDatasetWriter(IndexedDatasetWriter &&o) noexcept
    : prefix_(std::move(o.prefix_)), dtype_(o.dtype_), bin_(o.bin_),
      lengths_(std::move(o.lengths_)), buffer_(std::move(o.buffer_)),
      elements_(o.elements_), finished_(o.finished_) {
  o.bin_ = nullptr;
  o.finished_ = true;
}

IndexedDatasetWriter::~IndexedDatasetWriter() {
  if (bin_)
    std::fclose(bin_);
  if (!finished_) {
    std::error_code ec;
    std::filesystem::remove(prefix_ + ".bin.tmp", ec);
    std::filesystem::remove(prefix_ + ".idx.tmp", ec);
  }
}

Status IndexedDatasetWriter::addDocument(const int64_t *elements, int64_t n) {
  if (n > INT32_MAX)
    return fail("%s: a document of %lld elements exceeds the format's int32 "
                "lengths",
                prefix_.c_str(), (long long)n);
  int64_t size = indexedDTypeSize(uint8_t(dtype_));
  int64_t lo = 0, hi = 0;
  switch (dtype_) {
  case IndexedDType::UInt8:
    hi = UINT8_MAX;
    break;
  case IndexedDType::Int8:
    lo = INT8_MIN, hi = INT8_MAX;
    break;
  case IndexedDType::Int16:
    lo = INT16_MIN, hi = INT16_MAX;
    break;
  case IndexedDType::UInt16:
    hi = UINT16_MAX;
    break;
  case IndexedDType::Int32:
    lo = INT32_MIN, hi = INT32_MAX;
    break;
  default:
    lo = INT64_MIN, hi = INT64_MAX;
  }
  buffer_.resize(size_t(n * size));
  for (int64_t i = 0; i < n; ++i) {
    if (elements[i] < lo || elements[i] > hi)
      return fail("%s: value %lld does not fit %s", prefix_.c_str(),
                  (long long)elements[i], indexedDTypeName(uint8_t(dtype_)));
    std::memcpy(buffer_.data() + i * size, &elements[i], size_t(size));
  }
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), bin_) != buffer_.size())
    return fail("%s.bin.tmp: write failed: %s", prefix_.c_str(),
                std::strerror(errno));
  lengths_.push_back(int32_t(n));
  elements_ += n;
  return Status::ok();
}

Status IndexedDatasetWriter::finish() {
  std::string binTmp = prefix_ + ".bin.tmp", idxTmp = prefix_ + ".idx.tmp";
  if (!bin_)
    return fail("%s: the dataset is already finished", prefix_.c_str());
  int closed = std::fclose(bin_);
  bin_ = nullptr;
  if (closed != 0)
    return fail("%s: write failed: %s", binTmp.c_str(), std::strerror(errno));
  std::FILE *f = std::fopen(idxTmp.c_str(), "wb");
  if (!f)
    return fail("%s: cannot write: %s", idxTmp.c_str(), std::strerror(errno));
  uint64_t sequences = lengths_.size(), docIndices = sequences + 1,
           version = 1;
  uint8_t code = uint8_t(dtype_);
  bool ok = std::fwrite(kMagic, 1, 9, f) == 9 &&
            std::fwrite(&version, 8, 1, f) == 1 &&
            std::fwrite(&code, 1, 1, f) == 1 &&
            std::fwrite(&sequences, 8, 1, f) == 1 &&
            std::fwrite(&docIndices, 8, 1, f) == 1 &&
            std::fwrite(lengths_.data(), 4, sequences, f) == sequences;
  std::vector<int64_t> column(sequences);
  int64_t size = indexedDTypeSize(code), at = 0;
  for (uint64_t s = 0; s < sequences; ++s) {
    column[s] = at;
    at += lengths_[s] * size;
  }
  ok = ok && std::fwrite(column.data(), 8, sequences, f) == sequences;
  column.resize(docIndices);
  for (uint64_t d = 0; d < docIndices; ++d)
    column[d] = int64_t(d); // one sequence per document
  ok = ok && std::fwrite(column.data(), 8, docIndices, f) == docIndices;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok)
    return fail("%s: write failed: %s", idxTmp.c_str(), std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(binTmp, prefix_ + ".bin", ec);
  if (!ec)
    std::filesystem::rename(idxTmp, prefix_ + ".idx", ec);
  if (ec)
    return fail("%s: cannot move into place: %s", prefix_.c_str(),
                ec.message().c_str());
  finished_ = true;
  return Status::ok();
}
