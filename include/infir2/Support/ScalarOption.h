//===- ScalarOption.h - Number and flag options -----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// llvm::cl's parsers of numbers and flags print a bad value to stderr. Under
// an OptionErrorCapture (EnumOption.h) ScalarOptionParser writes the error to
// the capture's string instead, so that a library (the C API) reports it as a
// diagnostic; otherwise it is llvm::cl's parser, message included. The checks
// are llvm::cl's own (to_float, getAsInteger, its boolean spellings): a value
// is accepted or rejected alike either way. Not for int64_t options:
// llvm::cl::parser<long> is final (world-size keeps llvm::cl's message).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_SUPPORT_SCALAROPTION_H
#define INFIR2_SUPPORT_SCALAROPTION_H

#include "infir2/Support/EnumOption.h"

#include "llvm/ADT/StringExtras.h"

#include <type_traits>

namespace infir2 {

/// The types ScalarOptionParser handles.
template <typename T>
inline constexpr bool isCapturedScalar =
    std::is_same_v<T, double> || std::is_same_v<T, unsigned> ||
    std::is_same_v<T, bool>;

/// llvm::cl::parser<T> for a number or flag, whose error can be captured.
template <typename T> class ScalarOptionParser : public llvm::cl::parser<T> {
  static_assert(isCapturedScalar<T>, "not a number or flag type");

public:
  using llvm::cl::parser<T>::parser;

  /// Returns true on error, as llvm::cl parsers do.
  bool parse(llvm::cl::Option &o, llvm::StringRef argName, llvm::StringRef arg,
             T &value) {
    std::string *sink = optionErrorSink();
    if (!sink || valid(arg))
      return llvm::cl::parser<T>::parse(o, argName, arg, value);
    *sink = ("invalid value '" + arg + "' for " + o.ArgStr + " (expected " +
             expected() + ")")
                .str();
    return true;
  }

private:
  static bool valid(llvm::StringRef arg) {
    if constexpr (std::is_same_v<T, bool>) {
      return llvm::is_contained(
          {"", "true", "TRUE", "True", "1", "false", "FALSE", "False", "0"},
          arg);
    } else if constexpr (std::is_same_v<T, double>) {
      double v;
      return llvm::to_float(arg, v);
    } else {
      unsigned v;
      return !arg.getAsInteger(0, v);
    }
  }

  static llvm::StringRef expected() {
    if constexpr (std::is_same_v<T, bool>)
      return "true or false";
    else if constexpr (std::is_same_v<T, double>)
      return "a number";
    else
      return "an unsigned integer";
  }
};

/// The parser a pipeline option of type T takes: ScalarOptionParser for
/// numbers and flags, MLIR's choice (InfiR2's enum parser) otherwise.
template <typename PassOptionsT, typename T>
using PipelineOptionParser =
    std::conditional_t<isCapturedScalar<T>, ScalarOptionParser<T>,
                       typename PassOptionsT::template OptionParser<T>>;

} // namespace infir2

#endif // INFIR2_SUPPORT_SCALAROPTION_H
