//===- DataSource.h - Training data as token streams ------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The formats a trainer reads: a text file as bytes (byte-level tokens, ids
// 0-255), or raw little-endian uint16 / uint32 token ids; and how a stream
// of tokens becomes micro-batches of (input, next-token target) sequences,
// sharded over the ranks of a data-parallel group.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_DATASOURCE_H
#define INFIR2_RUNTIME_DRIVER_DATASOURCE_H

#include "Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace infir2::rt {

/// The format `auto` means for `path`: u16 for .u16/.bin, u32 for .u32,
/// else text. Other formats are returned as given.
std::string resolveDataFormat(const std::string &path,
                              const std::string &format);

/// The tokens of `bytes` in `format` (text, u16 or u32). `path` names the
/// source in messages.
Expected<std::vector<uint32_t>> decodeTokens(const std::string &path,
                                             const std::string &bytes,
                                             const std::string &format);

/// Reads a whole token file and checks it: every id below `vocab`, and at
/// least `minTokens` of them.
Expected<std::vector<uint32_t>> readTokens(const std::string &path,
                                           const std::string &format,
                                           int64_t vocab, int64_t minTokens);

/// Fills `ids` and `targets` (batch x seq each) with the next micro-batch
/// from `tokens` at `position` (the global data position, advanced; it
/// wraps to 0 where a sequence would run past the end). A group of `ranks`
/// reads ranks·batch consecutive sequences and rank `rank` takes its
/// `batch`, so that R ranks of micro-batch B see exactly what one process of
/// micro-batch R·B would.
void fillSequences(const std::vector<uint32_t> &tokens, int64_t &position,
                   int64_t batch, int64_t seq, int ranks, int rank,
                   int32_t *ids, int32_t *targets);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_DATASOURCE_H
