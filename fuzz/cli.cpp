//===- cli.cpp - Fuzzes the trainer's command line ------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The input is a trainer's command line, one argument per line (argv[0]
// excluded), parsed and validated by parseCommandLine for a small compiled
// model, as main() does; --help renders the help text too.
//
//===----------------------------------------------------------------------===//

#include "config/Cli.h"

#include "infir2/runtime/Manifest.h"

#include <string>
#include <vector>

using namespace infir2::rt;

static Manifest smallModel() {
  Manifest m;
  m.batch = 2;
  m.seq = 16;
  m.vocab = 256;
  m.slots = {{SlotKind::Param, "w", "f32", 0, 4 * 6, {2, 3}}};
  m.stateBytes = 4 * 6;
  return m;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const Manifest compiled = smallModel();
  std::vector<std::string> args = {"trainer"};
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current += char(data[i]);
    }
  }
  if (!current.empty())
    args.push_back(current);
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  argv.push_back(nullptr);
  (void)parseCommandLine(int(args.size()), argv.data(), compiled);
  return 0;
}
