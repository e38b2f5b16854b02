//===- AttributesTest.cpp - Each entry's attributes, by name -------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Attributes.h: the structs ABI.def declares, encoded by the compiler and
// decoded by the backends. The words an encoded struct makes are the ones
// the signature (Signature.h) counts for the call, in ABI.def's order, and
// decode gives back every field, arrays included. The expected words are
// written out here by hand from ABI.def's documentation, not computed.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Attributes.h"
#include "infir2/runtime/Descriptor.h"
#include "infir2/runtime/Signature.h"

#include "DescriptorBuilder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace attrs = infir2::rt::attrs;
using infir2::test::Call;

namespace {

/// A descriptor as checkSignature sees it.
struct View {
  const int64_t *desc;
  int64_t operandCount() const { return desc[0]; }
  int64_t attrCount() const { return desc[1]; }
  int64_t rank(int64_t i) const {
    return desc[2 + i * INFIR2RT_OPERAND_WORDS + 2];
  }
  double attr(int64_t i) const { return infir2::rt::descAttr(desc, i); }
};

// adamw_group: scalars, a count, an array it sizes, a second count and an
// array sized by an expression over both (ATTR(5 + ATTR(4))).
TEST(Attributes, AdamWGroupRoundTrips) {
  std::vector<double> decays = {0.1, 0.0, 0.25}, working = {2, 0};
  attrs::adamw_group a;
  a.beta1 = 0.9;
  a.beta2 = 0.95;
  a.epsilon = 1e-8;
  a.max_grad_norm = 1.0;
  a.n = 3;
  a.weight_decay = attrs::Array<double>(decays);
  a.k = 2;
  a.working = attrs::Array<int64_t>(working);
  std::vector<double> words = attrs::encoded(a);
  EXPECT_EQ(words, (std::vector<double>{0.9, 0.95, 1e-8, 1.0, 3, 0.1, 0.0, 0.25,
                                        2, 2, 0}));
  Call c; // 3 tensors, 2 working copies: 7·3 + 4 + 2 operands
  for (int i = 0; i < 27; ++i)
    c.add({}, INFIR2RT_F32);
  c.attrs(words);
  std::string why;
  EXPECT_TRUE(infir2::rt::checkSignature(INFIR2RT_ENTRY_adamw_group,
                                         View{c.desc.data()}, why))
      << why;
  auto b = attrs::decode<attrs::adamw_group>(c.desc.data());
  EXPECT_EQ(b.beta1, 0.9);
  EXPECT_EQ(b.beta2, 0.95);
  EXPECT_EQ(b.epsilon, 1e-8);
  EXPECT_EQ(b.max_grad_norm, 1.0);
  EXPECT_EQ(b.n, 3);
  EXPECT_EQ(b.weight_decay.values(), decays);
  EXPECT_EQ(b.k, 2);
  EXPECT_EQ(b.working.values(), (std::vector<int64_t>{2, 0}));
}

// quantize_dual: an array sized by operand 0's rank, then a fixed one.
TEST(Attributes, QuantizeDualRoundTrips) {
  std::vector<double> block = {1, 1, 128}, blockT = {1, 128};
  attrs::quantize_dual a;
  a.format = 1;
  a.scale_rule = 2; // floor: a rule word beyond a flag's 0 and 1
  a.block = attrs::Array<int64_t>(block);
  a.block_t = attrs::Array<int64_t>(blockT);
  std::vector<double> words = attrs::encoded(a);
  EXPECT_EQ(words, (std::vector<double>{1, 2, 1, 1, 128, 1, 128}));
  Call c;
  c.add({2, 4, 128}, INFIR2RT_BF16);
  c.add({2, 4, 128}, INFIR2RT_E5M2);
  c.add({2, 4, 1}, INFIR2RT_F32);
  c.add({128, 8}, INFIR2RT_E5M2);
  c.add({128, 1}, INFIR2RT_F32);
  c.attrs(words);
  std::string why;
  EXPECT_TRUE(infir2::rt::checkSignature(INFIR2RT_ENTRY_quantize_dual,
                                         View{c.desc.data()}, why))
      << why;
  auto b = attrs::decode<attrs::quantize_dual>(c.desc.data());
  EXPECT_EQ(b.format, 1);
  EXPECT_EQ(b.scale_rule, 2);
  EXPECT_EQ(b.block.values(), (std::vector<int64_t>{1, 1, 128}));
  EXPECT_EQ(b.block_t.values(), (std::vector<int64_t>{1, 128}));
  // The fused producers' quantization part is quantize_dual's.
  attrs::rms_norm_quantize_dual f;
  f.epsilon = 1e-6;
  f.format = 0;
  f.scale_rule = 1;
  f.block = a.block;
  f.block_t = a.block_t;
  EXPECT_EQ(attrs::encoded(f),
            (std::vector<double>{1e-6, 0, 1, 1, 1, 128, 1, 128}));
  EXPECT_EQ(attrs::encoded(attrs::quantizePart(f)),
            (std::vector<double>{0, 1, 1, 1, 128, 1, 128}));
}

// Scalars in order, flags as 0 and 1; an entry without attributes has no
// words.
TEST(Attributes, ScalarsKeepTheirOrder) {
  attrs::rms_norm_grad a;
  a.epsilon = 1e-5;
  a.has_acc = false;
  a.has_residual = true;
  EXPECT_EQ(attrs::encoded(a), (std::vector<double>{1e-5, 0, 1}));
  attrs::attention t;
  t.heads = 14;
  t.kv_heads = 2;
  t.head_dim = 64;
  t.scale = 0.125;
  t.causal = true;
  EXPECT_EQ(attrs::encoded(t), (std::vector<double>{14, 2, 64, 0.125, 1, 0}));
  EXPECT_TRUE(attrs::encoded(attrs::copy{}).empty());
  Call c;
  for (int i = 0; i < 5; ++i)
    c.add({4, 8}, INFIR2RT_F32);
  c.attrs({-100, 1, 0, 2});
  auto ce = attrs::decode<attrs::cross_entropy_grad>(c.desc.data());
  EXPECT_EQ(ce.ignore_index, -100);
  EXPECT_TRUE(ce.has_mask);
  EXPECT_FALSE(ce.has_divisor);
  EXPECT_EQ(ce.vocab_shards, 2);
}

} // namespace
