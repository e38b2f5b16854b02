//===- Inspect.cpp - infir2-data inspect ----------------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What a Megatron-LM indexed dataset holds: counts, the element type, the
// document lengths as a histogram, the loss mask's share when P.mask is
// beside it, and one document (--doc N), decoded with --tokenizer, the
// spans the loss counts marked ⟦like this⟧.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Tokenizer.h"

#include "infir2/runtime/IndexedDataset.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

using namespace infir2;
using namespace infir2::data;
using rt::Expected;

namespace {

struct InspectOptions {
  std::string prefix, tokenizer;
  int64_t doc = -1;
};

std::vector<int64_t> documentOf(const rt::IndexedDataset &ds, int64_t d) {
  std::vector<int64_t> v(size_t(ds.documentLength(d)));
  ds.readDocument(d, 0, int64_t(v.size()), v.data());
  return v;
}

void printSummary(const rt::IndexedDataset &ds,
                  const std::optional<rt::IndexedDataset> &mask) {
  int64_t n = ds.numDocuments();
  std::printf("%s: %lld documents, %lld sequences, %lld tokens (%s)\n",
              ds.prefix().c_str(), (long long)n, (long long)ds.numSequences(),
              (long long)ds.numElements(),
              rt::indexedDTypeName(uint8_t(ds.dtype())));
  if (mask) {
    int64_t weighted = 0;
    for (int64_t d = 0; d < n; ++d)
      for (int64_t v : documentOf(*mask, d))
        weighted += v != 0;
    std::printf("loss mask %s: %lld of %lld tokens count (%.1f%%)\n",
                mask->prefix().c_str(), (long long)weighted,
                (long long)mask->numElements(),
                100.0 * double(weighted) /
                    double(std::max<int64_t>(mask->numElements(), 1)));
  }
  if (n == 0)
    return;
  std::vector<int64_t> lengths(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d)
    lengths[size_t(d)] = ds.documentLength(d);
  std::vector<int64_t> sorted = lengths;
  std::sort(sorted.begin(), sorted.end());
  std::printf("document length: min %lld, median %lld, max %lld\n",
              (long long)sorted.front(), (long long)sorted[sorted.size() / 2],
              (long long)sorted.back());
  // Powers of two: [0, 1), [1, 2), [2, 4), ...
  std::vector<int64_t> buckets;
  for (int64_t len : lengths) {
    size_t b = 0;
    while (len >= (int64_t(1) << b))
      ++b;
    if (buckets.size() <= b)
      buckets.resize(b + 1);
    ++buckets[b];
  }
  int64_t most = *std::max_element(buckets.begin(), buckets.end());
  size_t first = 0;
  while (buckets[first] == 0)
    ++first;
  for (size_t b = first; b < buckets.size(); ++b) {
    int64_t lo = b ? int64_t(1) << (b - 1) : 0, hi = int64_t(1) << b;
    std::printf("  [%7lld, %7lld) %8lld %s\n", (long long)lo, (long long)hi,
                (long long)buckets[b],
                std::string(size_t(40 * buckets[b] / most), '#').c_str());
  }
}

rt::Status printDocument(const InspectOptions &o, const rt::IndexedDataset &ds,
                         const std::optional<rt::IndexedDataset> &mask) {
  if (o.doc >= ds.numDocuments())
    return rt::fail("%s has %lld documents, no document %lld",
                    ds.prefix().c_str(), (long long)ds.numDocuments(),
                    (long long)o.doc);
  std::vector<int64_t> ids = documentOf(ds, o.doc);
  std::vector<int64_t> weights =
      mask ? documentOf(*mask, o.doc) : std::vector<int64_t>(ids.size(), 0);
  std::printf("document %lld: %zu tokens\n", (long long)o.doc, ids.size());
  std::optional<rt::Tokenizer> tokenizer;
  if (!o.tokenizer.empty()) {
    Expected<rt::Tokenizer> t = rt::Tokenizer::load(o.tokenizer);
    if (!t)
      return t.failure();
    tokenizer = std::move(*t);
  }
  // Runs of equal weight, decoded (or as ids), the counted ones in ⟦ ⟧.
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j < ids.size() && (weights[j] != 0) == (weights[i] != 0))
      ++j;
    std::string span;
    if (tokenizer) {
      std::vector<uint32_t> run(ids.begin() + long(i), ids.begin() + long(j));
      Expected<std::string> text = tokenizer->decode(run);
      if (!text)
        return text.failure();
      span = *text;
    } else {
      for (size_t k = i; k < j; ++k)
        span += (k > i ? " " : "") + std::to_string(ids[k]);
      span = (i ? " " : "") + span;
    }
    out += weights[i] ? "⟦" + span + "⟧" : span;
    i = j;
  }
  std::printf("%s\n", out.c_str());
  return rt::Status::ok();
}

rt::Status runInspect(const InspectOptions &o) {
  Expected<rt::IndexedDataset> ds = rt::IndexedDataset::open(o.prefix);
  if (!ds)
    return ds.failure();
  std::optional<rt::IndexedDataset> mask;
  std::error_code ec;
  if (std::filesystem::is_regular_file(o.prefix + ".mask.idx", ec)) {
    Expected<rt::IndexedDataset> m = rt::IndexedDataset::open(o.prefix + ".mask");
    if (!m)
      return m.failure();
    if (m->numDocuments() != ds->numDocuments())
      return rt::fail("%s.mask: %lld documents, but %s has %lld",
                      o.prefix.c_str(), (long long)m->numDocuments(),
                      o.prefix.c_str(), (long long)ds->numDocuments());
    for (int64_t d = 0; d < ds->numDocuments(); ++d)
      if (m->documentLength(d) != ds->documentLength(d))
        return rt::fail("%s.mask: document %lld has %lld mask values for "
                        "%lld tokens",
                        o.prefix.c_str(), (long long)d,
                        (long long)m->documentLength(d),
                        (long long)ds->documentLength(d));
    mask = std::move(*m);
  }
  printSummary(*ds, mask);
  if (o.doc >= 0)
    return printDocument(o, *ds, mask);
  return rt::Status::ok();
}

} // namespace

Command data::addInspectCommand(CLI::App &app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App *cmd = app.add_subcommand(
      "inspect", "what a Megatron-LM indexed dataset (PREFIX.bin/.idx) holds");
  cmd->add_option("prefix", options->prefix, "the dataset's prefix")
      ->required();
  cmd->add_option("--doc", options->doc,
                  "print document N (its loss-counted spans in ⟦ ⟧)");
  cmd->add_option("--tokenizer", options->tokenizer,
                  "decode --doc with this tokenizer.json (else ids)");
  return {cmd, [options] { return runInspect(*options); }};
}
