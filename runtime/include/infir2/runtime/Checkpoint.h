//===- Checkpoint.h - safetensors files and the trainer's state -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CHECKPOINT_H
#define INFIR2_RUNTIME_CHECKPOINT_H

#include <cstdint>
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

/// Reads a whole safetensors file. On failure returns false and sets
/// `error` to a message naming the file and what is wrong.
bool readSafetensors(const std::string &path,
                     std::map<std::string, StoredTensor> &tensors,
                     std::string &error);

/// Writes tensors (in the given order) as a safetensors file.
bool writeSafetensors(
    const std::string &path,
    const std::vector<std::pair<std::string, const StoredTensor *>> &tensors,
    std::string &error);

/// Bytes per element of a safetensors dtype ("F32", "BF16", ...), or 0 for
/// one this reader does not know.
int64_t safetensorsDtypeSize(const std::string &dtype);

/// Element i of a stored float tensor as FP32 (F32, BF16, F16, F64).
float storedFloat(const StoredTensor &t, int64_t i);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_CHECKPOINT_H
