//===- TextTest.cpp - UTF-8 repair, normalization and regex splits --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The expectations are hand-worked: the UTF-8 ones from WHATWG's decoder
// (one U+FFFD per maximal subpart, as Python's errors="replace" gives), the
// split ones from the example in Hugging Face's documentation of
// SplitDelimiterBehavior ("the-final--countdown" split on "-").
//
//===----------------------------------------------------------------------===//

#include "Regex.h"
#include "Unicode.h"

#include <gtest/gtest.h>

using namespace infir2::rt;

namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

std::string repaired(std::string_view in) {
  std::string storage;
  return std::string(repairUtf8(in, storage));
}

TEST(Utf8RepairTest, ValidTextIsUntouched) {
  std::string storage;
  std::string_view text = "h\xC3\xA9llo \xF0\x9F\x98\x80";
  EXPECT_EQ(repairUtf8(text, storage).data(), text.data());
}

TEST(Utf8RepairTest, EachMaximalSubpartIsOneReplacement) {
  EXPECT_EQ(repaired("a\xFF"
                     "b"),
            "a" + kFFFD + "b");
  // A lead byte followed by a non-continuation: one U+FFFD, the byte kept.
  EXPECT_EQ(repaired("\xC3("), kFFFD + "(");
  // A truncated 3-byte and 4-byte sequence: one U+FFFD each.
  EXPECT_EQ(repaired("\xE2\x82"), kFFFD);
  EXPECT_EQ(repaired("\xF0\x9F\x98x"), kFFFD + "x");
  // Surrogates, overlongs and code points past U+10FFFF are invalid from the
  // first byte whose range is wrong: one U+FFFD per byte here.
  EXPECT_EQ(repaired("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(repaired("\xC0\xAF"), kFFFD + kFFFD);
  EXPECT_EQ(repaired("\xE0\x80\xAF"), kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(repaired("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(repaired("\x80\x80"), kFFFD + kFFFD);
  EXPECT_EQ(repaired("end\xE4"), "end" + kFFFD);
}

TEST(NormalizeTest, Forms) {
  std::string out;
  normalize("e\u0301", NormalForm::NFC, out);
  EXPECT_EQ(out, "\u00E9");
  normalize("\u212B", NormalForm::NFC, out); // angstrom sign
  EXPECT_EQ(out, "\u00C5");
  normalize("\u00E9", NormalForm::NFD, out);
  EXPECT_EQ(out, "e\u0301");
  normalize("\uFB01", NormalForm::NFKC, out);
  EXPECT_EQ(out, "fi");
  normalize("\u00BD", NormalForm::NFKD, out); // one half
  EXPECT_EQ(out, "1\u2044"
                 "2");
  normalize("plain ascii", NormalForm::NFKD, out);
  EXPECT_EQ(out, "plain ascii");
}

std::vector<std::string> split(const char *pattern, SplitBehavior behavior,
                               std::string_view text, bool invert = false) {
  Expected<Regex> regex = Regex::compile(pattern);
  EXPECT_TRUE(bool(regex)) << regex.message();
  std::vector<std::string_view> pieces;
  splitPieces(*regex, behavior, invert, text, pieces);
  return std::vector<std::string>(pieces.begin(), pieces.end());
}

using Pieces = std::vector<std::string>;

TEST(SplitTest, BehaviorsAsDocumentedByHuggingFace) {
  const char *text = "the-final--countdown";
  EXPECT_EQ(split("-", SplitBehavior::Removed, text),
            (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(split("-", SplitBehavior::Isolated, text),
            (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split("-", SplitBehavior::MergedWithPrevious, text),
            (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split("-", SplitBehavior::MergedWithNext, text),
            (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split("-", SplitBehavior::Contiguous, text),
            (Pieces{"the", "-", "final", "--", "countdown"}));
}

TEST(SplitTest, InvertSwapsMatchesAndGaps) {
  EXPECT_EQ(split("[a-z]+", SplitBehavior::Removed, "ab-cd"), (Pieces{"-"}));
  EXPECT_EQ(split("[a-z]+", SplitBehavior::Removed, "ab-cd", /*invert=*/true),
            (Pieces{"ab", "cd"}));
}

TEST(SplitTest, UnicodePropertiesAndEmptyMatches) {
  EXPECT_EQ(split("\\p{L}+", SplitBehavior::Isolated, "héllo wörld"),
            (Pieces{"héllo", " ", "wörld"}));
  EXPECT_EQ(split("\\s*", SplitBehavior::Removed, "a b"), (Pieces{"a", "b"}));
}

TEST(RegexTest, EscapeIsLiteral) {
  Expected<Regex> regex = Regex::compile(Regex::escape("<|a.b|>"));
  ASSERT_TRUE(bool(regex));
  size_t b, e;
  EXPECT_FALSE(regex->find("<|aXb|>", 0, b, e));
  ASSERT_TRUE(regex->find("x<|a.b|>", 0, b, e));
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(e, 8u);
}

TEST(RegexTest, BadPatternIsAnError) {
  Expected<Regex> regex = Regex::compile("(unclosed");
  ASSERT_FALSE(bool(regex));
  EXPECT_NE(regex.message().find("cannot compile the regex at offset 9"),
            std::string::npos)
      << regex.message();
}

} // namespace
