//===- IndexedDataset.h - Megatron-LM's indexed token datasets --*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The format Megatron-LM's preprocess_data.py writes and its GPT datasets
// read (megatron/core/datasets/indexed_dataset.py): a prefix P names
//   P.bin  the elements of every sequence, back to back, little-endian, of
//          one element type;
//   P.idx  "MMIDIDX\0\0", version (u64 = 1), the element type's code (u8),
//          the sequence count S (u64), the document-index count D (u64),
//          then S sequence lengths (i32, in elements), S byte offsets into
//          P.bin (i64), and D document indices (i64): document d holds the
//          sequences [doc[d], doc[d+1]), doc[0] = 0, doc[D-1] = S.
// Reading maps both files and checks every count, offset and index against
// the file sizes before anything is used; writing streams P.bin and writes
// P.idx at the end, each through a temporary file renamed into place.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_INDEXEDDATASET_H
#define INFIR2_RUNTIME_INDEXEDDATASET_H

#include "infir2/runtime/Expected.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace infir2::rt {

/// Megatron-LM's element type codes (its DType enum).
enum class IndexedDType : uint8_t {
  UInt8 = 1,
  Int8 = 2,
  Int16 = 3,
  Int32 = 4,
  Int64 = 5,
  Float64 = 6,
  Float32 = 7,
  UInt16 = 8,
};

/// Bytes per element; 0 for a code that is none of the above.
int64_t indexedDTypeSize(uint8_t code);
/// "uint16", "int32", ...; "unknown" for another code.
const char *indexedDTypeName(uint8_t code);
/// The type Megatron-LM stores token ids of a vocabulary of `vocab` in:
/// uint16 below 65500, else int32.
IndexedDType tokenDTypeFor(int64_t vocab);

class IndexedDataset {
public:
  /// Opens P.bin and P.idx and checks them; messages name the file and what
  /// is wrong with it.
  static Expected<IndexedDataset> open(const std::string &prefix);


  const std::string &prefix() const { return prefix_; }
  IndexedDType dtype() const { return dtype_; }
  int64_t numSequences() const { return numSequences_; }
  int64_t numDocuments() const { return numDocIndices_ - 1; }
  /// Elements in all sequences.
  int64_t numElements() const { return numElements_; }

  /// The sequences document `d` holds: [first, last).
  int64_t firstSequence(int64_t d) const { return docIndex(d); }
  int64_t lastSequence(int64_t d) const { return docIndex(d + 1); }
  int64_t sequenceLength(int64_t s) const;
  /// Elements of document `d` (all its sequences).
  int64_t documentLength(int64_t d) const;
  /// Copies elements [from, from + n) of document `d` into `out`, as int64
  /// (its sequences are contiguous in P.bin).
  void readDocument(int64_t d, int64_t from, int64_t n, int64_t *out) const;

private:
  IndexedDataset() = default;
  int64_t docIndex(int64_t i) const;
  int64_t pointer(int64_t s) const;

  std::string prefix_;
  IndexedDType dtype_ = IndexedDType::UInt16;
  int64_t elementSize_ = 2;
  int64_t numSequences_ = 0, numDocIndices_ = 1, numElements_ = 0;
  /// A file mapped read-only (null when empty), unmapped with its owner.
  struct Mapping {
    const uint8_t *data = nullptr;
    size_t bytes = 0;
    Mapping() = default;
    Mapping(Mapping &&o) noexcept
        : data(std::exchange(o.data, nullptr)), bytes(o.bytes) {}
    Mapping &operator=(Mapping &&o) noexcept {
      std::swap(data, o.data);
      std::swap(bytes, o.bytes);
      return *this;
    }
    ~Mapping();
  };
  static Status map(const std::string &path, Mapping &m);
  Mapping bin_, idx_;
  /// Where the lengths, pointers and document indices start in P.idx.
  size_t lengthsAt_ = 0, pointersAt_ = 0, docsAt_ = 0;
};

/// Writes a dataset in Megatron-LM's layout, one sequence per document.
class IndexedDatasetWriter {
public:
  /// Starts P.bin (as P.bin.tmp) for elements of `dtype`.
  static Expected<IndexedDatasetWriter> create(const std::string &prefix,
                                               IndexedDType dtype);
  IndexedDatasetWriter(IndexedDatasetWriter &&) noexcept;
  ~IndexedDatasetWriter(); ///< removes the temporary files of an unfinished one

  /// Appends a document of `n` elements; each must fit the element type.
  Status addDocument(const int64_t *elements, int64_t n);
  /// Writes P.idx and moves both files into place.
  Status finish();

  int64_t numDocuments() const { return int64_t(lengths_.size()); }
  int64_t numElements() const { return elements_; }

private:
  IndexedDatasetWriter() = default;

  std::string prefix_;
  IndexedDType dtype_ = IndexedDType::UInt16;
  std::FILE *bin_ = nullptr;
  std::vector<int32_t> lengths_;
  std::vector<uint8_t> buffer_;
  int64_t elements_ = 0;
  bool finished_ = false;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_INDEXEDDATASET_H
