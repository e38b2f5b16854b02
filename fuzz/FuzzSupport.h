//===- FuzzSupport.h - What the runtime's fuzzers share ---------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The runtime's readers take paths, as the trainer gives them: a fuzzer
// writes its input to a file of its own and passes that file's path.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_FUZZ_FUZZSUPPORT_H
#define INFIR2_FUZZ_FUZZSUPPORT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace infir2::fuzz {

/// Writes `size` bytes to a file private to this process (named with
/// `suffix`, e.g. ".u16", which some readers look at) and returns its path.
/// Each call overwrites the file of the previous one.
inline std::string writeInput(const uint8_t *data, size_t size,
                              const std::string &suffix) {
  const char *dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") +
                     "/infir2-fuzz-" + std::to_string(getpid()) + suffix;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

} // namespace infir2::fuzz

#endif // INFIR2_FUZZ_FUZZSUPPORT_H
