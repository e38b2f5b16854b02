//===- Format.h - Small formatting helpers ----------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_SUPPORT_FORMAT_H
#define INFIR2_SUPPORT_FORMAT_H

#include <cstdint>
#include <string>

namespace infir2 {

/// Formats 1640704 as "1,640,704", as model cards print parameter counts.
inline std::string formatWithThousands(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

} // namespace infir2

#endif // INFIR2_SUPPORT_FORMAT_H
