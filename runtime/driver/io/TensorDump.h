//===- TensorDump.h - Named FP32 tensors for external checks ----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What --dump-step and --trace-optimizer write: named tensors, converted to
// FP32, collected and then written as one safetensors file, for checks of
// the compiled step and optimizer against PyTorch and the interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_IO_TENSORDUMP_H
#define INFIR2_RUNTIME_DRIVER_IO_TENSORDUMP_H

#include "infir2/runtime/Expected.h"

#include "infir2/runtime/Checkpoint.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace infir2::rt {

class TensorDump {
public:
  /// Adds `values` as an F32 tensor of `shape`, after those added before.
  void add(const std::string &name, std::vector<int64_t> shape,
           const std::vector<float> &values);
  /// Adds a scalar as an F32 tensor of shape [1].
  void add(const std::string &name, double value) {
    add(name, {1}, {float(value)});
  }
  bool empty() const { return order_.empty(); }
  void clear();
  Status write(const std::string &path) const;

private:
  std::vector<std::unique_ptr<StoredTensor>> store_;
  std::vector<std::pair<std::string, const StoredTensor *>> order_;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_IO_TENSORDUMP_H
