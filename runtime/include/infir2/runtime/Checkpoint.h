//===- Checkpoint.h - safetensors files and the trainer's state -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CHECKPOINT_H
#define INFIR2_RUNTIME_CHECKPOINT_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace infir2::rt {

/// One tensor of a safetensors file.
struct StoredTensor {
  std::string dtype; ///< "F32", "BF16", "F16", "F64", "I32", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Where one tensor of a safetensors file lies: `offset` counts from the
/// start of the file.
struct TensorEntry {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t offset = 0, bytes = 0;
};

/// A safetensors file opened for reading tensor by tensor: its header is
/// read and checked at open (offsets tile the data, sizes match shapes),
/// and each tensor's bytes are read only when asked for, so that loading a
/// model needs one tensor's buffer, not the file's.
class SafetensorsFile {
public:
  SafetensorsFile() = default;
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;
  ~SafetensorsFile();

  /// Opens `path` and reads its header. On failure returns false and sets
  /// `error` to a message naming the file and what is wrong.
  bool open(const std::string &path, std::string &error);
  const std::string &path() const { return path_; }
  const std::map<std::string, TensorEntry> &tensors() const { return tensors_; }
  /// Reads the bytes of tensor `name` into `out` (resized to fit).
  bool read(const std::string &name, std::vector<uint8_t> &out,
            std::string &error) const;

private:
  std::string path_;
  int fd_ = -1;
  std::map<std::string, TensorEntry> tensors_;
};

/// Reads a whole safetensors file. On failure returns false and sets
/// `error` to a message naming the file and what is wrong.
bool readSafetensors(const std::string &path,
                     std::map<std::string, StoredTensor> &tensors,
                     std::string &error);

/// A file's length and CRC-32 (zlib's, the one Python's zlib.crc32 and
/// `gzip` compute), as checkpoints record and verify them.
struct FileDigest {
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  bool operator==(const FileDigest &o) const {
    return bytes == o.bytes && crc32 == o.crc32;
  }
  bool operator!=(const FileDigest &o) const { return !(*this == o); }
};

/// Extends `digest` by `n` more bytes of the file.
void extendDigest(FileDigest &digest, const void *data, uint64_t n);

/// Reads `path` through and digests it. On failure returns false and sets
/// `error` to a message naming the file.
bool digestFile(const std::string &path, FileDigest &digest,
                std::string &error);

/// One tensor to write, whose bytes are asked for only when the writer
/// reaches it, so that a tensor can be produced (converted, gathered from
/// other ranks) just in time and a file of any size needs one tensor's
/// buffer at most.
struct TensorSource {
  std::string name, dtype;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
  /// The tensor's `bytes` bytes, valid until the next call of any source;
  /// null (with `error` set) when they cannot be produced.
  std::function<const void *(std::string &error)> data;
};

/// Writes `tensors` in order as a safetensors file with `metadata` as its
/// "__metadata__" (none when empty), streaming each tensor's bytes through
/// to the file; `written`, when given, receives the digest of the bytes
/// handed to the file.
bool writeSafetensors(const std::string &path,
                      const std::vector<TensorSource> &tensors,
                      const std::map<std::string, std::string> &metadata,
                      std::string &error, FileDigest *written = nullptr);

/// Writes tensors (in the given order) as a safetensors file; `written`,
/// when given, receives the digest of the bytes handed to the file.
bool writeSafetensors(
    const std::string &path,
    const std::vector<std::pair<std::string, const StoredTensor *>> &tensors,
    std::string &error, FileDigest *written = nullptr);

/// Bytes per element of a safetensors dtype ("F32", "BF16", ...), or 0 for
/// one this reader does not know.
int64_t safetensorsDtypeSize(const std::string &dtype);

/// Element i of a stored float tensor as FP32 (F32, BF16, F16, F64).
float storedFloat(const StoredTensor &t, int64_t i);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_CHECKPOINT_H
