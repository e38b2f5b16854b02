//===- Checkpoint.cpp - safetensors reading and writing -------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// safetensors (huggingface/safetensors, its format description): an 8-byte
// little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]},
//    "__metadata__": {"key": "value", ...}}
// padded with spaces, then the data, offsets relative to its start. The
// header is read and written with nlohmann-json.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Checkpoint.h"

#include "infir2/runtime/Float.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <vector>

using namespace infir2::rt;
using json = nlohmann::ordered_json;

int64_t infir2::rt::safetensorsDtypeSize(const std::string &dtype) {
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

namespace {

/// The tensors of a parsed header, checked against the data's size.
bool readHeader(const std::string &path, const json &header, uint64_t fileSize,
                uint64_t dataStart, std::map<std::string, TensorEntry> &tensors,
                std::string &error) {
  uint64_t dataSize = fileSize - dataStart;
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges;
  for (const auto &[name, info] : header.items()) {
    if (name == "__metadata__")
      continue;
    auto malformed = [&] {
      error = path + ": tensor '" + name + "' has a malformed header entry";
      return false;
    };
    if (!info.is_object())
      return malformed();
    auto dtype = info.find("dtype"), shape = info.find("shape"),
         offsets = info.find("data_offsets");
    if (dtype == info.end() || !dtype->is_string() || shape == info.end() ||
        !shape->is_array() || offsets == info.end() || !offsets->is_array() ||
        offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      return malformed();
    TensorEntry t;
    t.dtype = dtype->get<std::string>();
    uint64_t count = 1;
    for (const json &d : *shape) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > dataSize + 1)
        return malformed();
      t.shape.push_back(d.get<int64_t>());
      if (__builtin_mul_overflow(count, d.get<uint64_t>(), &count))
        return malformed();
    }
    uint64_t begin = (*offsets)[0].get<uint64_t>(),
             end = (*offsets)[1].get<uint64_t>();
    int64_t size = safetensorsDtypeSize(t.dtype);
    uint64_t bytes = 0;
    if (size == 0 || end < begin || end > dataSize ||
        __builtin_mul_overflow(count, uint64_t(size), &bytes) ||
        end - begin != bytes) {
      error = path + ": tensor '" + name + "' (" + t.dtype +
              ") has data offsets that do not match its shape or the file";
      return false;
    }
    t.offset = dataStart + begin;
    t.bytes = bytes;
    ranges.push_back({begin, end, name});
    tensors[name] = std::move(t);
  }
  // The format's rule: the tensors' byte ranges tile the data exactly, in
  // any order: no overlap, no hole, nothing after the last.
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (const auto &[begin, end, name] : ranges) {
    if (begin != covered) {
      error = path + ": tensor '" + name + "' starts at byte " +
              std::to_string(begin) + " of the data, expected " +
              std::to_string(covered) +
              (begin < covered ? " (it overlaps another tensor)"
                               : " (a hole before it)");
      return false;
    }
    covered = end;
  }
  if (covered != dataSize) {
    error = path + ": " + std::to_string(dataSize - covered) +
            " bytes after the last tensor's data";
    return false;
  }
  return true;
}

/// Reads exactly `n` bytes at `offset` of `fd`.
bool readAt(int fd, void *to, uint64_t n, uint64_t offset) {
  auto *p = static_cast<uint8_t *>(to);
  while (n) {
    ssize_t got = ::pread(fd, p, n, off_t(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    p += got;
    n -= uint64_t(got);
    offset += uint64_t(got);
  }
  return true;
}

} // namespace

SafetensorsFile::~SafetensorsFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool SafetensorsFile::open(const std::string &path, std::string &error) {
  path_ = path;
  tensors_.clear();
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  uint64_t size = uint64_t(st.st_size);
  unsigned char len[8];
  if (size < 8 || !readAt(fd_, len, 8, 0)) {
    error = path + ": truncated (no header length)";
    return false;
  }
  uint64_t n = 0;
  for (int b = 7; b >= 0; --b)
    n = (n << 8) | len[b];
  if (n > size - 8) {
    error = path + ": truncated (header of " + std::to_string(n) +
            " bytes, file of " + std::to_string(size) + ")";
    return false;
  }
  std::string text(n, '\0');
  if (!readAt(fd_, text.data(), n, 8)) {
    error = path + ": read failed: " + std::strerror(errno);
    return false;
  }
  json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    error = path + ": the header is not a JSON object";
    return false;
  }
  return readHeader(path, header, size, 8 + n, tensors_, error);
}

bool SafetensorsFile::read(const std::string &name, std::vector<uint8_t> &out,
                           std::string &error) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    error = path_ + ": no tensor '" + name + "'";
    return false;
  }
  out.resize(it->second.bytes);
  errno = 0;
  if (!readAt(fd_, out.data(), it->second.bytes, it->second.offset)) {
    error = path_ + ": cannot read tensor '" + name + "': " +
            (errno ? std::strerror(errno) : "the file is shorter than before");
    return false;
  }
  return true;
}

bool infir2::rt::readSafetensors(const std::string &path,
                                 std::map<std::string, StoredTensor> &tensors,
                                 std::string &error) {
  SafetensorsFile file;
  if (!file.open(path, error))
    return false;
  for (const auto &[name, entry] : file.tensors()) {
    StoredTensor &t = tensors[name];
    t.dtype = entry.dtype;
    t.shape = entry.shape;
    if (!file.read(name, t.bytes, error))
      return false;
  }
  return true;
}

void infir2::rt::extendDigest(FileDigest &digest, const void *data,
                              uint64_t n) {
  digest.crc32 = uint32_t(
      crc32_z(digest.crc32, static_cast<const Bytef *>(data), z_size_t(n)));
  digest.bytes += n;
}

bool infir2::rt::digestFile(const std::string &path, FileDigest &digest,
                            std::string &error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  digest = FileDigest{};
  std::vector<unsigned char> buffer(size_t(1) << 22);
  while (size_t n = std::fread(buffer.data(), 1, buffer.size(), f))
    extendDigest(digest, buffer.data(), n);
  bool ok = !std::ferror(f);
  if (!ok)
    error = path + ": read failed: " + std::strerror(errno);
  std::fclose(f);
  return ok;
}

bool infir2::rt::writeSafetensors(
    const std::string &path, const std::vector<TensorSource> &tensors,
    const std::map<std::string, std::string> &metadata, std::string &error,
    FileDigest *written) {
  json header = json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorSource &t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text =
      header.dump(-1, ' ', false, json::error_handler_t::replace);
  while (text.size() % 8)
    text += ' ';
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  uint64_t n = text.size();
  unsigned char len[8];
  for (int b = 0; b < 8; ++b)
    len[b] = static_cast<unsigned char>(n >> (8 * b));
  FileDigest digest;
  auto put = [&](const void *data, size_t size) {
    if (!size)
      return true;
    extendDigest(digest, data, size);
    return std::fwrite(data, 1, size, f) == size;
  };
  bool ok = put(len, 8) && put(text.data(), n);
  int writeErrno = ok ? 0 : errno;
  std::string sourceError;
  for (const TensorSource &t : tensors) {
    if (!ok)
      break;
    const void *data = t.data(sourceError);
    if (!data && (t.bytes || !sourceError.empty())) {
      ok = false;
      break;
    }
    ok = put(data, t.bytes);
    if (!ok)
      writeErrno = errno;
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok && !writeErrno && sourceError.empty())
    writeErrno = errno;
  if (written)
    *written = digest;
  if (!ok)
    error = !sourceError.empty()
                ? path + ": " + sourceError
                : path + ": write failed: " + std::strerror(writeErrno);
  return ok;
}

bool infir2::rt::writeSafetensors(
    const std::string &path,
    const std::vector<std::pair<std::string, const StoredTensor *>> &tensors,
    std::string &error, FileDigest *written) {
  std::vector<TensorSource> sources;
  for (const auto &[name, t] : tensors)
    sources.push_back({name, t->dtype, t->shape, t->bytes.size(),
                       [t = t](std::string &) -> const void * {
                         return t->bytes.data();
                       }});
  return writeSafetensors(path, sources, {}, error, written);
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
  return t.dtype == "BF16" ? bf16ToFloat(h) : halfToFloat(h);
}
