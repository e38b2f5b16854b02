//===- DispatchTest.cpp - The runtime's C entry points --------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The dispatcher (runtime/lib/Dispatch.cpp): every infir2rt_<name> runs the
// entry at its index in the context's backend's table, and only once the
// descriptor passes the operands and attribute words ABI.def's signature
// for it declares (a fake table records which slot was called, so no CPU
// kernel runs by mistake).
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Backend.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/Signature.h"

#include "DescriptorBuilder.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <utility>

namespace {

using infir2::test::Call;

int gForwardedTo = -1;
template <int I>
int32_t recordCall(infir2rt_context *, const int64_t *, const char *) {
  gForwardedTo = I;
  return 7;
}
template <int... I>
std::array<infir2rt_entry_fn, sizeof...(I)>
recordingTable(std::integer_sequence<int, I...>) {
  return {&recordCall<I>...};
}

/// A descriptor of `operands` scalars and `attrs` zero attribute words
/// (Call::attrs appends: a call gets its attributes once).
Call scalars(int64_t operands, int64_t attrs) {
  Call c;
  for (int64_t i = 0; i < operands; ++i)
    c.add({}, INFIR2RT_F32);
  c.attrs(std::vector<double>(attrs, 0.0));
  return c;
}

/// A call to `entry` its signature accepts: the fewest scalar operands and
/// zero attribute words that pass it (every signature has one: with rank-0
/// operands and zero attributes, no optional operand is present and no
/// group is counted).
Call acceptedCall(int entry) {
  struct View {
    const Call &c;
    int64_t operandCount() const { return c.desc[0]; }
    int64_t attrCount() const { return c.desc[1]; }
    int64_t rank(int64_t) const { return 0; }
    double attr(int64_t) const { return 0.0; }
  };
  for (int64_t attrs = 0; attrs <= 8; ++attrs)
    for (int64_t operands = 1; operands <= 12; ++operands) {
      Call c = scalars(operands, attrs);
      std::string why;
      if (infir2::rt::checkSignature(entry, View{c}, why))
        return c;
    }
  ADD_FAILURE() << "no small call passes entry " << entry << "'s signature";
  return scalars(0, 0);
}

class Dispatch : public ::testing::Test {
protected:
  Dispatch() {
    auto table =
        recordingTable(std::make_integer_sequence<int, INFIR2RT_NUM_ENTRIES>());
    backend = *infir2rt_cpu_backend();
    std::copy(table.begin(), table.end(), backend.entries);
    ctx.backend = &backend;
  }
  int32_t run(int32_t (*entry)(infir2rt_context *, const int64_t *,
                               const char *),
              Call &c) {
    ctx.regions[0] = ctx.regions[1] = c.host.data();
    gForwardedTo = -1;
    return entry(&ctx, c.desc.data(), "test");
  }
  infir2rt_backend backend;
  infir2rt_context ctx{};
};

// Every entry point reaches its own slot of the context's backend.
TEST_F(Dispatch, RunsTheContextsBackendsEntryPoints) {
#define INFIR2RT_ENTRY(name, operands, attributes, doc)                        \
  {                                                                            \
    Call c = acceptedCall(INFIR2RT_ENTRY_##name);                              \
    EXPECT_EQ(run(infir2rt_##name, c), 7) << #name;                            \
    EXPECT_EQ(gForwardedTo, INFIR2RT_ENTRY_##name) << #name;                   \
  }
#include "infir2/runtime/ABI.def"
}

// Every entry point refuses an attribute word more than its signature
// declares, naming the entry, before any backend sees the call.
TEST_F(Dispatch, RefusesCallsOutsideTheSignature) {
#define INFIR2RT_ENTRY(name, operands, attributes, doc)                        \
  {                                                                            \
    Call ok = acceptedCall(INFIR2RT_ENTRY_##name);                             \
    Call c = scalars(ok.desc[0], ok.desc[1] + 1);                              \
    EXPECT_NE(run(infir2rt_##name, c), 0) << #name;                            \
    EXPECT_EQ(gForwardedTo, -1) << #name;                                      \
    EXPECT_NE(infir2::rt::callError(ctx).find(std::string(" ") + #name +     \
                                              " takes "),                      \
              std::string::npos)                                               \
        << infir2::rt::callError(ctx);                                         \
  }
#include "infir2/runtime/ABI.def"
}

// The rules read the call: ranks (scaled_matmul's blocks, quantize_dual's
// groups), flags (an optional accumulator) and counts (adamw_group's
// tensors).
TEST_F(Dispatch, SignaturesReadTheCall) {
  {
    Call c;
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{4, 128}, {4, 1}, {8, 128}, {8, 1}, {4, 8}})
      c.add(shape, INFIR2RT_F32);
    c.attrs({1, 128, 1, 128}); // no has_acc
    EXPECT_NE(run(infir2rt_scaled_matmul, c), 0);
    EXPECT_EQ(infir2::rt::callError(ctx),
              "test: the call does not match its entry point: scaled_matmul "
              "takes 5 attribute words (ABI.def), got 4");
  }
  {
    Call c;
    c.add({4, 8}, INFIR2RT_BF16);
    c.add({8}, INFIR2RT_F32);
    c.attrs({1.0}); // has_acc, but no accumulator
    EXPECT_NE(run(infir2rt_reduce_sum, c), 0);
    EXPECT_EQ(infir2::rt::callError(ctx),
              "test: the call does not match its entry point: reduce_sum "
              "takes a positive multiple of 3 operands (ABI.def), got 2");
    Call g; // two groups without accumulators, then a fifth operand
    for (int i = 0; i < 2; ++i) {
      g.add({4, 8}, INFIR2RT_BF16);
      g.add({8}, INFIR2RT_F32);
    }
    g.attrs({0.0});
    EXPECT_EQ(run(infir2rt_reduce_sum, g), 7);
    g.add({8}, INFIR2RT_F32);
    EXPECT_NE(run(infir2rt_reduce_sum, g), 0);
  }
  {
    Call c; // 2 tensors, 1 working copy: 7·2 + 4 + 1 operands
    for (int i = 0; i < 19; ++i)
      c.add({}, INFIR2RT_F32);
    c.attrs({0.9, 0.95, 1e-8, 1.0, 2, 0.1, 0.1, 1, 0});
    EXPECT_EQ(run(infir2rt_adamw_group, c), 7);
    Call g; // quantize_dual's attributes follow the first group's rank
    for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 128}, {4, 128},
                                       {4, 1}, {128, 4}, {128, 1},
                                       {2, 4, 128}, {2, 4, 128}, {2, 4, 1},
                                       {128, 8}, {128, 1}})
      g.add(shape, INFIR2RT_F32);
    g.attrs({0.0, 1.0, 1, 128, 1, 128});
    EXPECT_NE(run(infir2rt_quantize_dual, g), 0);
    EXPECT_EQ(infir2::rt::callError(ctx),
              "test: the call does not match its entry point: quantize_dual's "
              "groups share their first operand's rank (ABI.def): operand 5 "
              "has rank 3, operand 0 2");
    Call d;
    for (int i = 0; i < 19; ++i)
      d.add({}, INFIR2RT_F32);
    d.attrs({0.9, 0.95, 1e-8, 1.0, 2.5, 0.1, 0.1, 1, 0}); // not a count
    EXPECT_NE(run(infir2rt_adamw_group, d), 0);
    EXPECT_EQ(gForwardedTo, -1);
  }
}

} // namespace
