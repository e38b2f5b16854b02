//===- Bpe.cpp - Byte-level BPE: the byte mapping and the merges ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Bpe.h"

#include <queue>

using namespace infir2::rt;

namespace {

constexpr size_t kCacheLimit = 1 << 18;

void appendUtf8(std::string &s, uint32_t cp) {
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
}

/// A candidate merge of the symbol at `pos` with its right neighbour. The
/// queue yields the lowest rank first and, among equal ranks, the leftmost,
/// as `tokenizers`' Word::merge_all does.
struct Candidate {
  uint32_t rank;
  uint32_t pos;
  uint32_t id;
  bool operator<(const Candidate &o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

/// A symbol of the word being merged, in a doubly linked list over the
/// initial positions; a symbol merged into its left neighbour is dead.
struct Symbol {
  uint32_t id;
  int32_t prev, next;
  bool dead;
};

} // namespace

const std::array<std::string, 256> &infir2::rt::byteLevelChars() {
  static const std::array<std::string, 256> chars = [] {
    std::array<std::string, 256> table;
    uint32_t extra = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      appendUtf8(table[b], printable ? b : 256 + extra++);
    }
    return table;
  }();
  return chars;
}

void Bpe::encodeWord(std::string_view word, std::vector<uint32_t> &out) {
  key_.assign(word);
  if (auto it = cache_.find(key_); it != cache_.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  size_t start = out.size();
  if (word.size() == 1) {
    out.push_back(byteIds[uint8_t(word[0])]);
  } else {
    bool whole = false;
    if (ignoreMerges) {
      std::string mapped;
      for (char c : word)
        mapped += byteLevelChars()[uint8_t(c)];
      if (auto it = vocab.find(mapped); it != vocab.end()) {
        out.push_back(it->second);
        whole = true;
      }
    }
    if (!whole)
      merge(word, out);
  }
  if (cache_.size() >= kCacheLimit)
    cache_.clear();
  cache_.emplace(key_, std::vector<uint32_t>(out.begin() + start, out.end()));
}

void Bpe::merge(std::string_view word, std::vector<uint32_t> &out) {
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heapStorage;
  symbols.clear();
  heapStorage.clear();
  auto n = int32_t(word.size());
  for (int32_t i = 0; i < n; ++i)
    symbols.push_back(
        {byteIds[uint8_t(word[i])], i - 1, i + 1 < n ? i + 1 : -1, false});
  auto lookup = [&](uint32_t left, uint32_t right) {
    return merges.find(uint64_t(left) << 32 | right);
  };
  std::priority_queue<Candidate> queue(std::less<Candidate>(),
                                       std::move(heapStorage));
  for (int32_t i = 0; i + 1 < n; ++i)
    if (auto it = lookup(symbols[i].id, symbols[i + 1].id); it != merges.end())
      queue.push({it->second.first, uint32_t(i), it->second.second});

  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol &left = symbols[top.pos];
    if (left.dead || left.next < 0)
      continue;
    Symbol &right = symbols[left.next];
    // A stale candidate: one of its symbols has been merged since.
    auto it = lookup(left.id, right.id);
    if (it == merges.end() || it->second.second != top.id)
      continue;
    left.id = top.id;
    right.dead = true;
    left.next = right.next;
    if (left.next >= 0)
      symbols[left.next].prev = int32_t(top.pos);
    if (left.prev >= 0) {
      if (auto p = lookup(symbols[left.prev].id, left.id); p != merges.end())
        queue.push({p->second.first, uint32_t(left.prev), p->second.second});
    }
    if (left.next >= 0) {
      if (auto p = lookup(left.id, symbols[left.next].id); p != merges.end())
        queue.push({p->second.first, top.pos, p->second.second});
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next)
    out.push_back(symbols[i].id);
}
