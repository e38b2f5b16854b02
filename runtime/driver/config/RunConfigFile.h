//===- RunConfigFile.h - The trainer's --config file ------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A run's options in a file, JSON or TOML, one key per flag: the flag's long
// name without its dashes ("lr", "eval-data"; "eval_data" too), its value a
// string, number or boolean:
//
//   {"data": "corpus", "steps": 1000, "lr": 3e-4, "eval-only": false}
//
//   data = "corpus"
//   steps = 1000
//   max-shard-size = "2GB"
//
// The file becomes command-line arguments that the trainer parses before its
// own, so the command line wins and every value is checked as a flag's is.
// Relative paths in the file are relative to the working directory, as on
// the command line.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_CONFIG_RUNCONFIGFILE_H
#define INFIR2_RUNTIME_DRIVER_CONFIG_RUNCONFIGFILE_H

#include "infir2/runtime/Expected.h"

#include <map>
#include <string>
#include <vector>

namespace infir2::rt {

/// What a flag's value is, and so what a config file may give it.
enum class ValueKind {
  Text,    ///< a string
  Integer, ///< an integer
  Real,    ///< a number
  Bool,    ///< true or false (a flag without a value)
  Size,    ///< bytes: an integer, or a string such as "5GB"
};

/// Reads the config file at `path` (by its extension: .json or .toml) into
/// arguments ("--lr=0.0003", or "--save" "" for an empty string). `keys`
/// maps every flag's name without its dashes to its kind. The key "config",
/// which a recorded configuration (run_config.json) holds, is not followed.
/// Errors name the file, and the key or the line.
Expected<std::vector<std::string>>
readConfigFile(const std::string &path,
               const std::map<std::string, ValueKind> &keys);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_CONFIG_RUNCONFIGFILE_H
