//===- main.cpp - infir2-data: data preparation for InfiR2 trainers -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// One subcommand per file (Encode.cpp, Decode.cpp, ...); main() parses the
// command line, runs the chosen one, and is the only place that prints an
// error ("infir2-data: error: ...") and exits non-zero.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

using namespace infir2;

int main(int argc, char **argv) {
  CLI::App app("infir2-data: prepares training data for InfiR2 trainers",
               "infir2-data");
  app.require_subcommand(1);
  std::vector<data::Command> commands = {
      data::addEncodeCommand(app), data::addDecodeCommand(app),
      data::addPretokenizeCommand(app), data::addSftCommand(app),
      data::addInspectCommand(app)};
  CLI11_PARSE(app, argc, argv);
  for (const data::Command &command : commands) {
    if (!command.parser->parsed())
      continue;
    rt::Status status = command.run();
    std::fflush(stdout);
    if (!status) {
      std::fprintf(stderr, "infir2-data: error: %s\n",
                   status.message().c_str());
      return 1;
    }
  }
  return 0;
}
