//===- Commands.h - infir2-data's subcommands -------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Each subcommand lives in a file of its own and registers itself on the
// command line; main() runs the one the user chose and prints its error.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TOOLS_INFIR2_DATA_COMMANDS_H
#define INFIR2_TOOLS_INFIR2_DATA_COMMANDS_H

#include "infir2/runtime/Expected.h"

#include <functional>

namespace CLI {
class App;
} // namespace CLI

namespace infir2::data {

/// A registered subcommand: its parser and what runs when it is chosen.
struct Command {
  CLI::App *parser;
  std::function<rt::Status()> run;
};

/// encode: JSONL {"text": ...} lines -> one JSON array of ids per line.
Command addEncodeCommand(CLI::App &app);
/// decode: JSON arrays of ids -> {"text": ...} lines.
Command addDecodeCommand(CLI::App &app);
/// pretokenize: documents -> a Megatron-LM indexed dataset.
Command addPretokenizeCommand(CLI::App &app);
/// sft: chat JSONL -> token and loss-mask datasets.
Command addSftCommand(CLI::App &app);
/// inspect: what an indexed dataset holds.
Command addInspectCommand(CLI::App &app);

} // namespace infir2::data

#endif // INFIR2_TOOLS_INFIR2_DATA_COMMANDS_H
