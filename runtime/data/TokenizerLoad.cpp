//===- TokenizerLoad.cpp - Reading tokenizer.json -------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Reads the parts of a Hugging Face tokenizer.json that byte-level BPE uses,
// and refuses anything else by its path in the JSON: a component this file
// does not implement is never skipped, since the ids would then silently
// differ from the ones the model was trained on.
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace infir2::rt;
using json = nlohmann::json;

namespace {

/// A refusal on the way; fromJson turns it into the Failure it returns.
struct Refusal {
  std::string message;
};

[[noreturn]] void refuse(const std::string &path, const std::string &what) {
  throw Refusal{path + ": " + what};
}

std::string quoted(const json &value) { return value.dump(); }

const json &member(const json &obj, const std::string &path, const char *key) {
  if (!obj.is_object())
    refuse(path, "must be an object");
  auto it = obj.find(key);
  if (it == obj.end())
    refuse(path + "." + key, "is missing");
  return *it;
}

std::string stringMember(const json &obj, const std::string &path,
                         const char *key) {
  const json &v = member(obj, path, key);
  if (!v.is_string())
    refuse(path + "." + key, "must be a string");
  return v.get<std::string>();
}

/// A member that must be an array, and the path of its element `i`.
const json &arrayMember(const json &obj, const std::string &path,
                        const char *key) {
  const json &v = member(obj, path, key);
  if (!v.is_array())
    refuse(path + "." + key, "must be an array");
  return v;
}

std::string elementPath(const std::string &path, const char *key, size_t i) {
  return path + "." + key + "[" + std::to_string(i) + "]";
}

/// An optional boolean; null counts as absent.
bool flag(const json &obj, const std::string &path, const char *key,
          bool absent) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    return absent;
  if (!it->is_boolean())
    refuse(path + "." + key, "must be true or false");
  return it->get<bool>();
}

/// A field that must be absent, null or `allowed` (an empty prefix, a zero
/// dropout): anything else changes the tokenization.
void requireDefault(const json &obj, const std::string &path, const char *key,
                    const json &allowed, const char *why) {
  auto it = obj.find(key);
  if (it != obj.end() && !it->is_null() && *it != allowed)
    refuse(path + "." + key, quoted(*it) + " is not supported (" + why + ")");
}

bool isTokenId(const json &v) {
  return v.is_number_unsigned() && v.get<uint64_t>() < (uint64_t(1) << 31);
}

constexpr const char *kNotTokenId =
    "must be a token id (an integer from 0 to 2^31-1)";

uint32_t tokenIdOf(const json &v, const std::string &path) {
  if (!isTokenId(v))
    refuse(path, kNotTokenId);
  return v.get<uint32_t>();
}

void readNormalizer(const json &n, const std::string &path,
                    std::vector<NormalForm> &out) {
  if (n.is_null())
    return;
  std::string type = stringMember(n, path, "type");
  if (type == "Sequence") {
    const json &list = arrayMember(n, path, "normalizers");
    for (size_t i = 0; i < list.size(); ++i)
      readNormalizer(list[i], elementPath(path, "normalizers", i), out);
  } else if (type == "NFC") {
    out.push_back(NormalForm::NFC);
  } else if (type == "NFD") {
    out.push_back(NormalForm::NFD);
  } else if (type == "NFKC") {
    out.push_back(NormalForm::NFKC);
  } else if (type == "NFKD") {
    out.push_back(NormalForm::NFKD);
  } else {
    refuse(path, "unsupported normalizer \"" + type +
                     "\" (supported: NFC, NFD, NFKC, NFKD, Sequence)");
  }
}

SplitStep compileSplit(const std::string &pattern, const std::string &path,
                       SplitBehavior behavior, bool invert) {
  Expected<Regex> regex = Regex::compile(pattern);
  if (!regex)
    refuse(path, regex.message());
  return SplitStep{std::move(*regex), behavior, invert};
}

/// The regex of ByteLevel's use_regex (GPT-2's), as `tokenizers` spells it.
constexpr const char *kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d)"
                                     R"(| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+)"
                                     R"(|\s+(?!\S)|\s+)";

void readPreTokenizer(const json &p, const std::string &path,
                      std::vector<SplitStep> &out, bool &byteLevel) {
  if (p.is_null())
    refuse(path, "is null: only byte-level BPE (a ByteLevel pre-tokenizer) "
                 "is supported");
  std::string type = stringMember(p, path, "type");
  if (type == "Sequence") {
    const json &list = arrayMember(p, path, "pretokenizers");
    for (size_t i = 0; i < list.size(); ++i)
      readPreTokenizer(list[i], elementPath(path, "pretokenizers", i), out,
                       byteLevel);
    return;
  }
  if (byteLevel)
    refuse(path, "a " + type +
                     " pre-tokenizer after ByteLevel is not "
                     "supported (ByteLevel must come last)");
  if (type == "ByteLevel") {
    byteLevel = true;
    if (flag(p, path, "add_prefix_space", false))
      refuse(path + ".add_prefix_space", "true is not supported");
    // trim_offsets changes offsets only, which encode() does not report.
    if (flag(p, path, "use_regex", true))
      out.push_back(
          compileSplit(kGpt2Pattern, path, SplitBehavior::Isolated, false));
    return;
  }
  if (type != "Split")
    refuse(path, "unsupported pre-tokenizer \"" + type +
                     "\" (supported: ByteLevel, Split, Sequence)");
  const json &pattern = member(p, path, "pattern");
  std::string regex;
  if (pattern.is_object() && pattern.contains("Regex"))
    regex = stringMember(pattern, path + ".pattern", "Regex");
  else if (pattern.is_object() && pattern.contains("String"))
    regex = Regex::escape(stringMember(pattern, path + ".pattern", "String"));
  else
    refuse(path + ".pattern", "must be {\"Regex\": ...} or {\"String\": ...}");
  std::string behavior = stringMember(p, path, "behavior");
  static const std::pair<const char *, SplitBehavior> kBehaviors[] = {
      {"Removed", SplitBehavior::Removed},
      {"Isolated", SplitBehavior::Isolated},
      {"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
      {"MergedWithNext", SplitBehavior::MergedWithNext},
      {"Contiguous", SplitBehavior::Contiguous}};
  for (const auto &[name, value] : kBehaviors)
    if (behavior == name)
      return out.push_back(compileSplit(regex, path + ".pattern", value,
                                        flag(p, path, "invert", false)));
  refuse(path + ".behavior", "unknown split behavior \"" + behavior + "\"");
}

/// Finds a token's id in the vocabulary, for merges; `at` gives the path.
template <typename Path>
uint32_t vocabId(const Bpe &bpe, const std::string &token, Path &&at) {
  auto it = bpe.vocab.find(token);
  if (it == bpe.vocab.end())
    refuse(at(), quoted(json(token)) + " is not in model.vocab");
  return it->second;
}

void readModel(const json &m, Bpe &bpe) {
  const std::string path = "model";
  std::string type = stringMember(m, path, "type");
  if (type != "BPE")
    refuse(path + ".type", "unsupported model \"" + type +
                               "\" (only byte-level BPE is supported)");
  if (flag(m, path, "byte_fallback", false))
    refuse(path + ".byte_fallback", "true is not supported (byte_fallback "
                                    "BPE is not byte-level BPE)");
  requireDefault(m, path, "dropout", 0.0, "BPE dropout is for training");
  requireDefault(m, path, "continuing_subword_prefix", "",
                 "byte-level BPE has none");
  requireDefault(m, path, "end_of_word_suffix", "", "byte-level BPE has none");
  bpe.ignoreMerges = flag(m, path, "ignore_merges", false);

  const json &vocab = member(m, path, "vocab");
  if (!vocab.is_object())
    refuse(path + ".vocab", "must be an object of token: id");
  bpe.vocab.reserve(vocab.size());
  for (const auto &[token, id] : vocab.items()) {
    // (The path is built only for the message: the vocabulary is large.)
    if (!isTokenId(id))
      refuse(path + ".vocab." + token, kNotTokenId);
    bpe.vocab.emplace(token, id.get<uint32_t>());
  }
  const auto &chars = byteLevelChars();
  for (int b = 0; b < 256; ++b) {
    auto it = bpe.vocab.find(chars[b]);
    if (it == bpe.vocab.end()) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", b);
      refuse(path + ".vocab", std::string("has no token for byte ") + hex +
                                  " (" + quoted(json(chars[b])) +
                                  "): not a byte-level vocabulary");
    }
    bpe.byteIds[b] = it->second;
  }

  const json &merges = arrayMember(m, path, "merges");
  bpe.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    auto at = [&] { return elementPath(path, "merges", i); };
    const json &merge = merges[i];
    std::string left, right;
    if (merge.is_string()) {
      // "a b": exactly one space, as `tokenizers` requires.
      std::string s = merge.get<std::string>();
      size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != s.npos)
        refuse(at(), "must be two tokens separated by one space");
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      refuse(at(), "must be \"a b\" or [\"a\", \"b\"]");
    }
    uint32_t a = vocabId(bpe, left, at);
    uint32_t b = vocabId(bpe, right, at);
    uint32_t merged = vocabId(bpe, left + right, at);
    // A repeated pair keeps its last rank, as `tokenizers`' map does.
    bpe.merges[uint64_t(a) << 32 | b] = {uint32_t(i), merged};
  }
}

void readAddedTokens(const json &root, Tokenizer::Impl &impl) {
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null())
    return;
  if (!it->is_array())
    refuse("added_tokens", "must be an array");
  std::vector<std::string> raw, normalized;
  for (size_t i = 0; i < it->size(); ++i) {
    const json &t = (*it)[i];
    std::string path = "added_tokens[" + std::to_string(i) + "]";
    uint32_t id = tokenIdOf(member(t, path, "id"), path + ".id");
    std::string content = stringMember(t, path, "content");
    if (content.empty())
      refuse(path + ".content", "is empty");
    for (const char *key : {"single_word", "lstrip", "rstrip"})
      if (flag(t, path, key, false))
        refuse(path + "." + key, "true is not supported");
    bool isNormalized = flag(t, path, "normalized", false);
    AddedTokenSet &set = isNormalized ? impl.normalizedAdded : impl.rawAdded;
    set.ids[content] = id;
    (isNormalized ? normalized : raw).push_back(content);
    impl.addedIds[content] = id;
  }
  for (auto *group : {&raw, &normalized}) {
    if (group->empty())
      continue;
    // Longest first: PCRE2 takes the first alternative that matches at the
    // leftmost position, which is then the longest token there.
    std::stable_sort(group->begin(), group->end(),
                     [](const std::string &a, const std::string &b) {
                       return a.size() > b.size();
                     });
    std::string pattern;
    for (const std::string &content : *group)
      pattern += (pattern.empty() ? "" : "|") + Regex::escape(content);
    SplitStep step =
        compileSplit(pattern, "added_tokens", SplitBehavior::Isolated, false);
    (group == &raw ? impl.rawAdded : impl.normalizedAdded).regex =
        std::move(step.regex);
  }
}

/// TemplateProcessing's `single` template; `pair` is for sentence pairs,
/// which encode() does not take.
std::vector<TemplateItem> readTemplate(const json &p, const std::string &path) {
  const json &single = arrayMember(p, path, "single");
  const json &special = member(p, path, "special_tokens");
  std::vector<TemplateItem> items;
  for (size_t i = 0; i < single.size(); ++i) {
    std::string at = elementPath(path, "single", i);
    const json &item = single[i];
    if (item.is_object() && item.contains("Sequence")) {
      std::string which =
          stringMember(item["Sequence"], at + ".Sequence", "id");
      if (which != "A")
        refuse(at + ".Sequence.id", "must be \"A\" in the single template");
      items.push_back({true, {}});
      continue;
    }
    if (!item.is_object() || !item.contains("SpecialToken"))
      refuse(at, "must be {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    std::string name =
        stringMember(item["SpecialToken"], at + ".SpecialToken", "id");
    const json &entry = member(special, path + ".special_tokens", name.c_str());
    std::string entryPath = path + ".special_tokens." + name;
    const json &ids = arrayMember(entry, entryPath, "ids");
    TemplateItem tokens{false, {}};
    for (size_t k = 0; k < ids.size(); ++k)
      tokens.ids.push_back(tokenIdOf(ids[k], elementPath(entryPath, "ids", k)));
    items.push_back(std::move(tokens));
  }
  return items;
}

void readPostProcessor(const json &p, const std::string &path,
                       Tokenizer::Impl &impl) {
  if (p.is_null())
    return;
  std::string type = stringMember(p, path, "type");
  if (type == "ByteLevel") // adjusts offsets only
    return;
  if (type == "Sequence") {
    const json &list = arrayMember(p, path, "processors");
    for (size_t i = 0; i < list.size(); ++i)
      readPostProcessor(list[i], elementPath(path, "processors", i), impl);
    return;
  }
  if (type != "TemplateProcessing")
    refuse(path, "unsupported post-processor \"" + type +
                     "\" (supported: ByteLevel, TemplateProcessing, Sequence)");
  if (impl.single)
    refuse(path, "a second TemplateProcessing is not supported");
  impl.single = readTemplate(p, path);
}

void readDecoder(const json &d, const std::string &path) {
  if (d.is_null())
    refuse(path, "is null: byte-level BPE needs the ByteLevel decoder");
  std::string type = stringMember(d, path, "type");
  if (type != "ByteLevel")
    refuse(path, "unsupported decoder \"" + type + "\" (supported: ByteLevel)");
}

/// Each id's bytes: a vocabulary token's characters mapped back to bytes (a
/// token with a character outside the byte map stays as it is, as in
/// `tokenizers`' ByteLevel decoder); an added token's content as it is.
void buildDecodeTable(Tokenizer::Impl &impl) {
  // Byte-level characters are one or two UTF-8 bytes (below U+0144): a table
  // indexed by those bytes (lead << 8 | continuation for two) gives the byte.
  std::vector<int16_t> toByte(1 << 16, -1);
  auto key = [](const std::string &s, size_t i, size_t n) {
    return n == 1 ? uint8_t(s[i]) : uint8_t(s[i]) << 8 | uint8_t(s[i + 1]);
  };
  const auto &chars = byteLevelChars();
  for (int b = 0; b < 256; ++b)
    toByte[key(chars[b], 0, chars[b].size())] = int16_t(b);
  uint32_t size = 0;
  for (const auto &[token, id] : impl.bpe.vocab)
    size = std::max(size, id + 1);
  for (const auto &[content, id] : impl.addedIds)
    size = std::max(size, id + 1);
  impl.idBytes.assign(size, std::string());
  impl.idKnown.assign(size, false);
  for (const auto &[token, id] : impl.bpe.vocab) {
    std::string bytes;
    bool mapped = true;
    for (size_t i = 0; i < token.size() && mapped;) {
      auto lead = uint8_t(token[i]);
      size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      mapped = n <= 2 && i + n <= token.size() && toByte[key(token, i, n)] >= 0;
      if (mapped)
        bytes += char(toByte[key(token, i, n)]);
      i += n;
    }
    impl.idBytes[id] = mapped ? bytes : token;
    impl.idKnown[id] = true;
  }
  for (const auto &[content, id] : impl.addedIds) {
    impl.idBytes[id] = content;
    impl.idKnown[id] = true;
  }
}

} // namespace

Expected<Tokenizer> Tokenizer::fromJson(std::string_view text,
                                        const std::string &origin) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception &e) {
    return fail("%s: not valid JSON: %s", origin.c_str(), e.what());
  }
  auto impl = std::make_unique<Impl>();
  try {
    if (!root.is_object())
      refuse("(root)", "must be an object");
    for (const char *key : {"truncation", "padding"})
      if (root.contains(key) && !root[key].is_null())
        refuse(key, "is not supported (encode() neither truncates nor pads)");
    readModel(member(root, "(root)", "model"), impl->bpe);
    readNormalizer(root.value("normalizer", json()), "normalizer",
                   impl->normalizers);
    bool byteLevel = false;
    readPreTokenizer(root.value("pre_tokenizer", json()), "pre_tokenizer",
                     impl->splits, byteLevel);
    if (!byteLevel)
      refuse("pre_tokenizer", "has no ByteLevel step: only byte-level BPE is "
                              "supported");
    readAddedTokens(root, *impl);
    readPostProcessor(root.value("post_processor", json()), "post_processor",
                      *impl);
    readDecoder(root.value("decoder", json()), "decoder");
  } catch (const Refusal &r) {
    return fail("%s: %s", origin.c_str(), r.message.c_str());
  }
  buildDecodeTable(*impl);
  return Tokenizer(std::move(impl));
}

Expected<Tokenizer> Tokenizer::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("%s: cannot open the tokenizer", path.c_str());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return fail("%s: cannot read the tokenizer", path.c_str());
  return fromJson(text.str(), path);
}
