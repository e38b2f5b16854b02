//===- TokenizerErrorsTest.cpp - Every refusal of tokenizer.json ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Each case changes one thing in a valid tiny tokenizer.json and checks the
// whole one-line message: what is refused, and where in the JSON.
//
//===----------------------------------------------------------------------===//

#include "TokenizerTestSupport.h"

#include <functional>

using namespace infir2::rt;
using namespace infir2::rt::testing;

namespace {

struct Refusal {
  const char *name;
  std::function<void(json &)> change;
  const char *message;
};

const json kWordPiece = {{"type", "WordPiece"}};
const json kByteLevel = {{"type", "ByteLevel"}};

json splitStep(const json &pattern, const char *behavior) {
  return {{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}};
}

json preTokenizers(const json &first, const json &second) {
  return {{"type", "Sequence"}, {"pretokenizers", {first, second}}};
}

const Refusal kRefusals[] = {
    {"RootNotObject", [](json &j) { j = json::array(); },
     "tiny.json: (root): must be an object"},
    {"ModelMissing", [](json &j) { j.erase("model"); },
     "tiny.json: (root).model: is missing"},
    {"ModelTypeMissing", [](json &j) { j["model"].erase("type"); },
     "tiny.json: model.type: is missing"},
    {"ModelTypeNotString", [](json &j) { j["model"]["type"] = 3; },
     "tiny.json: model.type: must be a string"},
    {"WordPiece", [](json &j) { j["model"]["type"] = "WordPiece"; },
     "tiny.json: model.type: unsupported model \"WordPiece\" (only byte-level "
     "BPE is supported)"},
    {"Unigram", [](json &j) { j["model"]["type"] = "Unigram"; },
     "tiny.json: model.type: unsupported model \"Unigram\" (only byte-level "
     "BPE is supported)"},
    {"ByteFallback", [](json &j) { j["model"]["byte_fallback"] = true; },
     "tiny.json: model.byte_fallback: true is not supported (byte_fallback "
     "BPE is not byte-level BPE)"},
    {"Dropout", [](json &j) { j["model"]["dropout"] = 0.1; },
     "tiny.json: model.dropout: 0.1 is not supported (BPE dropout is for "
     "training)"},
    {"SubwordPrefix",
     [](json &j) { j["model"]["continuing_subword_prefix"] = "##"; },
     "tiny.json: model.continuing_subword_prefix: \"##\" is not supported "
     "(byte-level BPE has none)"},
    {"WordSuffix", [](json &j) { j["model"]["end_of_word_suffix"] = "</w>"; },
     "tiny.json: model.end_of_word_suffix: \"</w>\" is not supported "
     "(byte-level BPE has none)"},
    {"IgnoreMergesNotBool", [](json &j) { j["model"]["ignore_merges"] = 1; },
     "tiny.json: model.ignore_merges: must be true or false"},
    {"VocabMissing", [](json &j) { j["model"].erase("vocab"); },
     "tiny.json: model.vocab: is missing"},
    {"VocabNotObject", [](json &j) { j["model"]["vocab"] = json::array(); },
     "tiny.json: model.vocab: must be an object of token: id"},
    {"VocabIdNegative", [](json &j) { j["model"]["vocab"]["zz"] = -1; },
     "tiny.json: model.vocab.zz: must be a token id (an integer from 0 to "
     "2^31-1)"},
    {"VocabLacksAByte", [](json &j) { j["model"]["vocab"].erase("\u010A"); },
     "tiny.json: model.vocab: has no token for byte 0x0a (\"\u010A\"): not a "
     "byte-level vocabulary"},
    {"MergesMissing", [](json &j) { j["model"].erase("merges"); },
     "tiny.json: model.merges: is missing"},
    {"MergesNotArray", [](json &j) { j["model"]["merges"] = "a b"; },
     "tiny.json: model.merges: must be an array"},
    {"MergeWithoutSpace", [](json &j) { j["model"]["merges"] = {"ab"}; },
     "tiny.json: model.merges[0]: must be two tokens separated by one space"},
    {"MergeWithTwoSpaces", [](json &j) { j["model"]["merges"] = {"a b c"}; },
     "tiny.json: model.merges[0]: must be two tokens separated by one space"},
    {"MergeNotPair", [](json &j) { j["model"]["merges"] = {{"a"}}; },
     "tiny.json: model.merges[0]: must be \"a b\" or [\"a\", \"b\"]"},
    {"MergeUnknownToken", [](json &j) { j["model"]["merges"] = {"a zz"}; },
     "tiny.json: model.merges[0]: \"zz\" is not in model.vocab"},
    {"MergeResultUnknown", [](json &j) { j["model"]["merges"] = {"a b"}; },
     "tiny.json: model.merges[0]: \"ab\" is not in model.vocab"},
    {"Lowercase",
     [](json &j) {
       j["normalizer"] = {{"type", "Lowercase"}};
     },
     "tiny.json: normalizer: unsupported normalizer \"Lowercase\" (supported: "
     "NFC, NFD, NFKC, NFKD, Sequence)"},
    {"NormalizerInSequence",
     [](json &j) {
       j["normalizer"] = {
           {"type", "Sequence"},
           {"normalizers", {{{"type", "NFC"}}, {{"type", "Strip"}}}}};
     },
     "tiny.json: normalizer.normalizers[1]: unsupported normalizer \"Strip\" "
     "(supported: NFC, NFD, NFKC, NFKD, Sequence)"},
    {"NormalizerSequenceNotArray",
     [](json &j) {
       j["normalizer"] = {{"type", "Sequence"}, {"normalizers", 1}};
     },
     "tiny.json: normalizer.normalizers: must be an array"},
    {"PreTokenizerNull", [](json &j) { j["pre_tokenizer"] = nullptr; },
     "tiny.json: pre_tokenizer: is null: only byte-level BPE (a ByteLevel "
     "pre-tokenizer) is supported"},
    {"Whitespace",
     [](json &j) {
       j["pre_tokenizer"] = {{"type", "Whitespace"}};
     },
     "tiny.json: pre_tokenizer: unsupported pre-tokenizer \"Whitespace\" "
     "(supported: ByteLevel, Split, Sequence)"},
    {"PrefixSpace",
     [](json &j) { j["pre_tokenizer"]["add_prefix_space"] = true; },
     "tiny.json: pre_tokenizer.add_prefix_space: true is not supported"},
    {"NoByteLevel",
     [](json &j) {
       j["pre_tokenizer"] = splitStep({{"String", " "}}, "Isolated");
     },
     "tiny.json: pre_tokenizer: has no ByteLevel step: only byte-level BPE is "
     "supported"},
    {"SplitAfterByteLevel",
     [](json &j) {
       j["pre_tokenizer"] =
           preTokenizers(kByteLevel, splitStep({{"String", " "}}, "Isolated"));
     },
     "tiny.json: pre_tokenizer.pretokenizers[1]: a Split pre-tokenizer after "
     "ByteLevel is not supported (ByteLevel must come last)"},
    {"SplitBehavior",
     [](json &j) {
       j["pre_tokenizer"] = preTokenizers(
           splitStep({{"Regex", "\\s+"}}, "Sideways"), kByteLevel);
     },
     "tiny.json: pre_tokenizer.pretokenizers[0].behavior: unknown split "
     "behavior \"Sideways\""},
    {"SplitBadRegex",
     [](json &j) {
       j["pre_tokenizer"] = preTokenizers(
           splitStep({{"Regex", "(\\s+"}}, "Isolated"), kByteLevel);
     },
     "tiny.json: pre_tokenizer.pretokenizers[0].pattern: cannot compile the "
     "regex at offset 4: missing closing parenthesis"},
    {"SplitPatternKind",
     [](json &j) {
       j["pre_tokenizer"] = splitStep({{"Glob", "*"}}, "Isolated");
     },
     "tiny.json: pre_tokenizer.pattern: must be {\"Regex\": ...} or "
     "{\"String\": ...}"},
    {"SplitPatternMissing",
     [](json &j) {
       j["pre_tokenizer"] = {{"type", "Split"}, {"behavior", "Isolated"}};
     },
     "tiny.json: pre_tokenizer.pattern: is missing"},
    {"PreTokenizerSequenceNotArray",
     [](json &j) {
       j["pre_tokenizer"] = {{"type", "Sequence"},
                             {"pretokenizers", {{"a", 1}}}};
     },
     "tiny.json: pre_tokenizer.pretokenizers: must be an array"},
    {"AddedTokensNotArray", [](json &j) { j["added_tokens"] = 1; },
     "tiny.json: added_tokens: must be an array"},
    {"AddedTokenLstrip",
     [](json &j) {
       json t = addedToken(300, "<x>", true);
       t["lstrip"] = true;
       j["added_tokens"] = {t};
     },
     "tiny.json: added_tokens[0].lstrip: true is not supported"},
    {"AddedTokenRstrip",
     [](json &j) {
       json t = addedToken(300, "<x>", true);
       t["rstrip"] = true;
       j["added_tokens"] = {addedToken(299, "<w>", true), t};
     },
     "tiny.json: added_tokens[1].rstrip: true is not supported"},
    {"AddedTokenSingleWord",
     [](json &j) {
       json t = addedToken(300, "<x>", true);
       t["single_word"] = true;
       j["added_tokens"] = {t};
     },
     "tiny.json: added_tokens[0].single_word: true is not supported"},
    {"AddedTokenEmpty",
     [](json &j) { j["added_tokens"] = {addedToken(300, "", true)}; },
     "tiny.json: added_tokens[0].content: is empty"},
    {"AddedTokenIdMissing",
     [](json &j) {
       json t = addedToken(300, "<x>", true);
       t.erase("id");
       j["added_tokens"] = {t};
     },
     "tiny.json: added_tokens[0].id: is missing"},
    {"BertProcessing",
     [](json &j) {
       j["post_processor"] = {{"type", "BertProcessing"}};
     },
     "tiny.json: post_processor: unsupported post-processor \"BertProcessing\" "
     "(supported: ByteLevel, TemplateProcessing, Sequence)"},
    {"TemplateSequenceB",
     [](json &j) {
       j["post_processor"] = {
           {"type", "TemplateProcessing"},
           {"single", {{{"Sequence", {{"id", "B"}, {"type_id", 0}}}}}},
           {"special_tokens", json::object()}};
     },
     "tiny.json: post_processor.single[0].Sequence.id: must be \"A\" in the "
     "single template"},
    {"TemplateUnknownSpecialToken",
     [](json &j) {
       j["post_processor"] = {
           {"type", "TemplateProcessing"},
           {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}}},
           {"special_tokens", json::object()}};
     },
     "tiny.json: post_processor.special_tokens.<s>: is missing"},
    {"TemplateItem",
     [](json &j) {
       j["post_processor"] = {{"type", "TemplateProcessing"},
                              {"single", {"$A"}},
                              {"special_tokens", json::object()}};
     },
     "tiny.json: post_processor.single[0]: must be {\"SpecialToken\": ...} or "
     "{\"Sequence\": ...}"},
    {"WordPieceDecoder", [](json &j) { j["decoder"] = kWordPiece; },
     "tiny.json: decoder: unsupported decoder \"WordPiece\" (supported: "
     "ByteLevel)"},
    {"DecoderNull", [](json &j) { j["decoder"] = nullptr; },
     "tiny.json: decoder: is null: byte-level BPE needs the ByteLevel decoder"},
    {"Truncation",
     [](json &j) {
       j["truncation"] = {{"max_length", 8}};
     },
     "tiny.json: truncation: is not supported (encode() neither truncates nor "
     "pads)"},
    {"Padding",
     [](json &j) {
       j["padding"] = {{"strategy", "BatchLongest"}};
     },
     "tiny.json: padding: is not supported (encode() neither truncates nor "
     "pads)"},
};

class TokenizerRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(TokenizerRefusalTest, NamesTheComponentAndItsPath) {
  json j = tinyTokenizer({}, json::array());
  ASSERT_TRUE(bool(Tokenizer::fromJson(j.dump(), "tiny.json")));
  GetParam().change(j);
  Expected<Tokenizer> t = Tokenizer::fromJson(j.dump(), "tiny.json");
  ASSERT_FALSE(bool(t));
  EXPECT_EQ(t.message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(Refusals, TokenizerRefusalTest,
                         ::testing::ValuesIn(kRefusals),
                         [](const ::testing::TestParamInfo<Refusal> &info) {
                           return std::string(info.param.name);
                         });

TEST(TokenizerLoadTest, MalformedJson) {
  Expected<Tokenizer> t = Tokenizer::fromJson("{\"model\": ", "bad.json");
  ASSERT_FALSE(bool(t));
  EXPECT_EQ(t.message().rfind("bad.json: not valid JSON: ", 0), 0u)
      << t.message();
}

TEST(TokenizerLoadTest, MissingFile) {
  Expected<Tokenizer> t = Tokenizer::load("/nonexistent/tokenizer.json");
  ASSERT_FALSE(bool(t));
  EXPECT_EQ(t.message(),
            "/nonexistent/tokenizer.json: cannot open the tokenizer");
}

} // namespace
