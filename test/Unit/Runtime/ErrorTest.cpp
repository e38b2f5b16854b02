//===- ErrorTest.cpp - A failing call's location and message --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A failed call's location is kept by reference and its message in the
// context's fixed buffer: callError() must give back the whole location
// however long it is (511, 512 and 4000 characters straddle the old 512-byte
// buffer, which the location used to be copied into and overran), and a
// message longer than the buffer is cut, never written past it. Meant to run
// clean under valgrind or AddressSanitizer too.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Error.h"
#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Descriptor.h"

#include "DescriptorBuilder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace {

using infir2::rt::callError;
using infir2::test::Call;

/// A location of `n` characters, not all alike, so that a cut or a shifted
/// copy shows.
std::string longWhere(size_t n) {
  std::string where;
  for (size_t i = 0; i < n; ++i)
    where.push_back(char('a' + i % 26));
  return where;
}

class LongLocation : public ::testing::TestWithParam<size_t> {};

// The CPU backend's own failure (a token id out of range) reports the whole
// location and the whole message.
TEST_P(LongLocation, EntryPointReportsWholeLocation) {
  std::string where = longWhere(GetParam());
  Call c;
  int table = c.add({4, 8}, INFIR2RT_F32), ids = c.add({3}, INFIR2RT_I32);
  c.add({3, 8}, INFIR2RT_F32);
  c.attrs({1.0}); // vocab_shards
  (void)table;
  int32_t *id = reinterpret_cast<int32_t *>(c.u8(ids));
  id[0] = 1;
  id[1] = 7;
  id[2] = 2;
  infir2rt_context ctx{};
  ctx.regions[0] = ctx.regions[1] = c.host.data();
  ASSERT_NE(infir2rt_embedding(&ctx, c.desc.data(), where.c_str()), 0);
  EXPECT_EQ(callError(ctx),
            where + ": token id 7 at position 1 is out of range [0, 4)");
}

// The path every backend's failures take (setCallError, for
// the CUDA backend's status checks).
TEST_P(LongLocation, RecordedFailureKeepsWholeLocation) {
  std::string where = longWhere(GetParam());
  infir2rt_context ctx{};
  infir2::rt::setCallError(&ctx, where.c_str(), "step must be at least %d", 1);
  EXPECT_EQ(callError(ctx), where + ": step must be at least 1");
  infir2::rt::setCallError(&ctx, where.c_str(), "%s failed: %s",
                           "cudaMemcpy(...)", "an illegal memory access");
  EXPECT_EQ(callError(ctx),
            where + ": cudaMemcpy(...) failed: an illegal memory access");
}

INSTANTIATE_TEST_SUITE_P(Lengths, LongLocation,
                         ::testing::Values(0, 1, 511, 512, 4000));

// A message longer than the buffer is cut to fit, and nothing after the
// buffer in the context changes.
TEST(CallError, LongMessageIsCutNotOverrun) {
  infir2rt_context ctx{};
  const infir2rt_communicator *sentinel =
      reinterpret_cast<const infir2rt_communicator *>(uintptr_t(0x5a5a5a5a));
  ctx.comm = sentinel;
  std::string message(4000, 'm');
  infir2::rt::setCallError(&ctx, "op", "%s", message.c_str());
  EXPECT_EQ(ctx.comm, sentinel);
  EXPECT_EQ(callError(ctx),
            "op: " + std::string(sizeof ctx.error_message - 1, 'm'));
}

// Without a location the message alone; after clearing, nothing.
TEST(CallError, NoLocationAndCleared) {
  infir2rt_context ctx{};
  EXPECT_EQ(callError(ctx), "");
  infir2::rt::setCallError(&ctx, nullptr, "all-reduce failed: %s", "timeout");
  EXPECT_EQ(callError(ctx), "all-reduce failed: timeout");
  infir2::rt::setCallError(&ctx, "here", "bad");
  infir2::rt::clearCallError(ctx);
  EXPECT_EQ(callError(ctx), "");
}

} // namespace
