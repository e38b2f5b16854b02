//===- SlotKindTest.cpp - The compiler's slot kinds in the manifest -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The plan's #infir2rt.slot kinds reach the trainer through the manifest,
// which the runtime reads into its own enum (no MLIR there): every kind the
// compiler can write must be one the runtime reads, as the same kind.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.h"
#include "infir2/runtime/Manifest.h"

#include <gtest/gtest.h>

namespace {

TEST(SlotKind, EveryKindTheCompilerWritesIsOneTheRuntimeReads) {
  uint32_t n = 0;
  for (; auto kind = infir2::rtir::symbolizeSlotKind(n); ++n) {
    llvm::StringRef name = infir2::rtir::stringifySlotKind(*kind);
    std::optional<infir2::rt::SlotKind> read =
        infir2::rt::parseSlotKind(std::string_view(name.data(), name.size()));
    ASSERT_TRUE(read) << name.str();
    EXPECT_EQ(infir2::rt::slotKindName(*read), name.str());
  }
  EXPECT_EQ(n, 9u);
}

} // namespace
