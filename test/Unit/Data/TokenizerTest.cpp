//===- TokenizerTest.cpp - The tokenizer on hand-worked cases -------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Tiny tokenizers written in the test, whose ids are worked out by hand: the
// byte mapping, merge ranks, ignore_merges, added tokens, normalization,
// invalid UTF-8, decoding and the post-processor's template. The real
// tokenizers are checked against an independent implementation by the lit
// tests of test/tools/infir2-data.
//
//===----------------------------------------------------------------------===//

#include "TokenizerTestSupport.h"

using namespace infir2::rt;
using namespace infir2::rt::testing;
using Ids = std::vector<uint32_t>;

namespace {

TEST(TokenizerTest, ByteLevelCharsAreGpt2s) {
  const auto &chars = byteLevelChars();
  // Printable bytes stand for themselves; the others take U+0100 onwards in
  // byte order: 0x00-0x20, then 0x7F-0xA0, then 0xAD.
  EXPECT_EQ(chars['!'], "!");
  EXPECT_EQ(chars['a'], "a");
  EXPECT_EQ(chars[0xA1], "\u00A1");
  EXPECT_EQ(chars[0xFF], "\u00FF");
  EXPECT_EQ(chars[0x00], "\u0100");
  EXPECT_EQ(chars['\n'], "\u010A");
  EXPECT_EQ(chars[' '], "\u0120");
  EXPECT_EQ(chars[0x7F], "\u0121");
  EXPECT_EQ(chars[0xA0], "\u0142");
  EXPECT_EQ(chars[0xAD], "\u0143");
  std::set<std::string> distinct(chars.begin(), chars.end());
  EXPECT_EQ(distinct.size(), 256u);
}

TEST(TokenizerTest, BytesAreTheirByteTokens) {
  Tokenizer t = load(tinyTokenizer({}, json::array()));
  EXPECT_EQ(t.encode(" a\n\xC3\xA9"), (Ids{32, 97, 10, 0xC3, 0xA9}));
  EXPECT_EQ(t.vocabSize(), 256u);
  EXPECT_EQ(t.tokenId("\u0120"), 32u);
}

TEST(TokenizerTest, MergesApplyByRank) {
  // bc=256 ab=257 abc=258. "b c" ranks first, so "abc" is a+bc, then abc.
  Tokenizer t =
      load(tinyTokenizer({"bc", "ab", "abc"}, json{"b c", "a b", "a bc"}));
  EXPECT_EQ(t.encode("abc"), (Ids{258}));
  // "a b" first: ab + c, and no "ab c" merge exists.
  Tokenizer reversed =
      load(tinyTokenizer({"bc", "ab", "abc"}, json{"a b", "b c", "a bc"}));
  EXPECT_EQ(reversed.encode("abc"), (Ids{257, 'c'}));
}

TEST(TokenizerTest, MergesAsPairs) {
  // (A braced list of pairs would be a JSON object to nlohmann.)
  json merges = json::array({json::array({"b", "c"}), json::array({"a", "b"}),
                             json::array({"a", "bc"})});
  Tokenizer t = load(tinyTokenizer({"bc", "ab", "abc"}, merges));
  EXPECT_EQ(t.encode("abc"), (Ids{258}));
}

TEST(TokenizerTest, EqualRanksMergeLeftmostFirst) {
  Tokenizer t = load(tinyTokenizer({"aa"}, json{"a a"}));
  EXPECT_EQ(t.encode("aaa"), (Ids{256, 'a'}));
  EXPECT_EQ(t.encode("aaaa"), (Ids{256, 256}));
  // From the cache, the same.
  EXPECT_EQ(t.encode("aaa"), (Ids{256, 'a'}));
}

TEST(TokenizerTest, LowerRankWinsAnywhereInTheWord) {
  // ab=256 bc=257; "b c" ranks first although "a b" comes first in "abc".
  Tokenizer t = load(tinyTokenizer({"ab", "bc"}, json{"b c", "a b"}));
  EXPECT_EQ(t.encode("abc"), (Ids{'a', 257}));
}

TEST(TokenizerTest, IgnoreMergesTakesWholeWordsFromTheVocab) {
  json j = tinyTokenizer({"xyz"}, json::array());
  EXPECT_EQ(load(j).encode("xyz"), (Ids{'x', 'y', 'z'}));
  j["model"]["ignore_merges"] = true;
  Tokenizer t = load(j);
  EXPECT_EQ(t.encode("xyz"), (Ids{256}));
  EXPECT_EQ(t.encode("xy"), (Ids{'x', 'y'}));
}

TEST(TokenizerTest, ByteLevelRegexSplitsWords) {
  // aĠ=256 Ġb=257: the GPT-2 regex splits "a b" into "a" and " b".
  json j = tinyTokenizer({"a\u0120", "\u0120b"}, json{"a \u0120", "\u0120 b"});
  EXPECT_EQ(load(j).encode("a b"), (Ids{256, 'b'}));
  j["pre_tokenizer"]["use_regex"] = true;
  EXPECT_EQ(load(j).encode("a b"), (Ids{'a', 257}));
}

TEST(TokenizerTest, AddedTokensMatchLeftmostLongestInRawText) {
  json j = tinyTokenizer({}, json::array());
  j["added_tokens"] = {
      addedToken(300, "<|x|>", true), addedToken(301, "<y>", false),
      addedToken(302, "[A]", false), addedToken(303, "[A][B]", false)};
  Tokenizer t = load(j);
  EXPECT_EQ(t.encode("a<|x|>b<y>[A][B][A]"),
            (Ids{'a', 300, 'b', 301, 303, 302}));
  EXPECT_EQ(t.encode("<|x|"), (Ids{'<', '|', 'x', '|'}));
  EXPECT_EQ(t.vocabSize(), 304u);
  EXPECT_EQ(t.tokenId("<y>"), 301u);
}

TEST(TokenizerTest, NormalizedAddedTokensMatchAfterTheNormalizer) {
  json j = tinyTokenizer({}, json::array());
  j["normalizer"] = {{"type", "NFC"}};
  j["added_tokens"] = {addedToken(300, "\u00E9", false, /*normalized=*/true)};
  // e + combining acute is é after NFC, and only then the added token.
  EXPECT_EQ(load(j).encode("e\u0301x"), (Ids{300, 'x'}));
  j["added_tokens"] = {addedToken(300, "\u00E9", false, /*normalized=*/false)};
  EXPECT_EQ(load(j).encode("e\u0301x"), (Ids{0xC3, 0xA9, 'x'}));
}

TEST(TokenizerTest, NormalizerSequence) {
  json j = tinyTokenizer({}, json::array());
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", {{{"type", "NFKD"}}, {{"type", "NFC"}}}}};
  // The fi ligature is "fi" under NFKD; NFC then leaves it.
  EXPECT_EQ(load(j).encode("\uFB01"), (Ids{'f', 'i'}));
}

TEST(TokenizerTest, InvalidUtf8BecomesReplacementCharacters) {
  Tokenizer t = load(tinyTokenizer({}, json::array()));
  EXPECT_EQ(t.encode("a\xFF"
                     "b"),
            (Ids{'a', 0xEF, 0xBF, 0xBD, 'b'}));
  // A truncated 3-byte sequence is one U+FFFD.
  EXPECT_EQ(t.encode("\xE2\x82"), (Ids{0xEF, 0xBF, 0xBD}));
}

TEST(TokenizerTest, DecodeGivesExactBytes) {
  json j = tinyTokenizer({"ab"}, json{"a b"});
  j["added_tokens"] = {addedToken(300, "<|x|>", true)};
  Tokenizer t = load(j);
  Expected<std::string> text = t.decode({256, 300, ' ', 0xC3});
  ASSERT_TRUE(bool(text)) << text.message();
  // Half a character stays half a character: bytes, not text.
  EXPECT_EQ(*text, "ab<|x|> \xC3");
  Expected<std::string> unknown = t.decode({'a', 280});
  ASSERT_FALSE(bool(unknown));
  EXPECT_EQ(unknown.message(),
            "token 1: id 280 is not in the tokenizer (ids are below 301)");
}

TEST(TokenizerTest, TemplateProcessingAddsItsTokens) {
  json j = tinyTokenizer({}, json::array());
  j["added_tokens"] = {addedToken(300, "<s>", true),
                       addedToken(301, "</s>", true)};
  json templ = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
      {"pair", json::array()},
      {"special_tokens",
       {{"<s>", {{"id", "<s>"}, {"ids", {300}}, {"tokens", {"<s>"}}}},
        {"</s>", {{"id", "</s>"}, {"ids", {301}}, {"tokens", {"</s>"}}}}}}};
  j["post_processor"] = {{"type", "Sequence"},
                         {"processors", {{{"type", "ByteLevel"}}, templ}}};
  Tokenizer t = load(j);
  EXPECT_EQ(t.encode("a"), (Ids{300, 'a', 301}));
  EXPECT_EQ(t.encode("a", /*addSpecialTokens=*/false), (Ids{'a'}));
}

TEST(TokenizerTest, ByteLevelPostProcessorAddsNothing) {
  json j = tinyTokenizer({}, json::array());
  j["post_processor"] = {{"type", "ByteLevel"}, {"trim_offsets", false}};
  EXPECT_EQ(load(j).encode("a"), (Ids{'a'}));
}

} // namespace
