//===- WriteDataset.h - Datasets written for data tests ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TEST_UNIT_DRIVER_WRITEDATASET_H
#define INFIR2_TEST_UNIT_DRIVER_WRITEDATASET_H

#include "infir2/runtime/IndexedDataset.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace infir2::rt::test {

/// Writes `docs` as the Megatron dataset `prefix` of element type `dtype`.
inline void writeDataset(const std::string &prefix, IndexedDType dtype,
                         const std::vector<std::vector<int64_t>> &docs) {
  Expected<IndexedDatasetWriter> w = IndexedDatasetWriter::create(prefix, dtype);
  ASSERT_TRUE(w) << w.message();
  for (const auto &d : docs)
    ASSERT_TRUE(w->addDocument(d.data(), int64_t(d.size())));
  ASSERT_TRUE(w->finish());
}

} // namespace infir2::rt::test

#endif // INFIR2_TEST_UNIT_DRIVER_WRITEDATASET_H
