//===- safetensors.cpp - Fuzzes the safetensors reader and state loader ---===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The input is a safetensors file, as `--load` gives the trainer one. What
// readSafetensors accepts goes on to StateLayout::loadParameters, as in
// Checkpoints::loadWeights, for a model of one 2x3 parameter "w" (F16 working
// copy, FP32 master): every stored float dtype is converted, and every shape
// compared.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "io/StateLayout.h"

#include "infir2/runtime/Checkpoint.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

using namespace infir2::rt;

static Manifest oneParameter() {
  Manifest m;
  ManifestSlot param{SlotKind::Param, "w",    "f16",    0,
                     2 * 6,           {2, 3}, "normal", 0.02};
  ManifestSlot master{SlotKind::Master, "w", "f32", 16, 4 * 6, {2, 3}};
  m.slots = {param, master};
  m.stateBytes = 16 + 4 * 6;
  return m;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const StateLayout layout(oneParameter());
  std::string path = infir2::fuzz::writeInput(data, size, ".safetensors");
  std::map<std::string, StoredTensor> tensors;
  std::string error;
  if (!readSafetensors(path, tensors, error))
    return 0;
  // What the reader returns holds what its header promises.
  for (const auto &[name, t] : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape)
      numel *= d;
    if (int64_t(t.bytes.size()) != numel * safetensorsDtypeSize(t.dtype)) {
      std::fprintf(stderr, "safetensors: '%s' holds %zu bytes\n",
                   name.c_str(), t.bytes.size());
      std::abort();
    }
  }
  std::vector<uint8_t> state(layout.manifest().stateBytes);
  (void)layout.loadParameters(tensors, path, state.data(), /*rank=*/0);
  return 0;
}
