//===- EnumOption.h - Enum command-line options that list their values ----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// llvm::cl's enum parser answers a bad value with "Cannot find option named
// 'x'!". InfiR2's enum options (pass, pipeline and tool options alike) use
// this parser instead, which names the valid values:
//
//   infir2-compile: for the --recipe option: invalid value 'bogus' (expected
//   fp8 or bf16)
//
// INFIR2_ENUM_OPTION_PARSER(T) makes it the parser of enum T; it must be
// used at global scope before any option of type T is declared.
//
// A library that parses options for a caller (the C API) cannot let the error
// go to stderr: OptionErrorCapture sends it to a string instead, for the
// caller to report as a diagnostic. The pipelines' number and flag options
// (ScalarOption.h) do the same.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_SUPPORT_ENUMOPTION_H
#define INFIR2_SUPPORT_ENUMOPTION_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace infir2 {

/// Where option errors of this thread go: nullptr (llvm::cl's stream,
/// stderr) unless an OptionErrorCapture is alive.
inline std::string *&optionErrorSink() {
  static thread_local std::string *sink = nullptr;
  return sink;
}

/// While alive, a bad option value on this thread is written to `error`
/// ("invalid value 'mxfp8' for granularity (expected blockwise, tensorwise or
/// rowwise)") instead of stderr.
class OptionErrorCapture {
public:
  explicit OptionErrorCapture(std::string &error)
      : previous(optionErrorSink()) {
    optionErrorSink() = &error;
  }
  ~OptionErrorCapture() { optionErrorSink() = previous; }
  OptionErrorCapture(const OptionErrorCapture &) = delete;
  OptionErrorCapture &operator=(const OptionErrorCapture &) = delete;

private:
  std::string *previous;
};

/// What llvm::cl::parser<T> does for an enum T, with an error that lists the
/// valid values.
template <typename T>
class EnumOptionParser : public llvm::cl::generic_parser_base {
protected:
  struct OptionInfo : public GenericOptionInfo {
    OptionInfo(llvm::StringRef name, T v, llvm::StringRef help)
        : GenericOptionInfo(name, help), V(v) {}
    llvm::cl::OptionValue<T> V;
  };
  llvm::SmallVector<OptionInfo, 4> Values;

public:
  using parser_data_type = T;

  EnumOptionParser(llvm::cl::Option &o) : generic_parser_base(o) {}

  unsigned getNumOptions() const override { return Values.size(); }
  llvm::StringRef getOption(unsigned n) const override {
    return Values[n].Name;
  }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// "fp8 or bf16", "blockwise, tensorwise or rowwise".
  std::string validValues() const {
    std::string s;
    for (size_t i = 0; i < Values.size(); ++i) {
      if (i)
        s += i + 1 == Values.size() ? " or " : ", ";
      s += Values[i].Name.str();
    }
    return s;
  }

  /// Returns true on error, as llvm::cl parsers do.
  bool parse(llvm::cl::Option &o, llvm::StringRef argName, llvm::StringRef arg,
             T &value) {
    llvm::StringRef v = Owner.hasArgStr() ? arg : argName;
    for (const OptionInfo &info : Values)
      if (info.Name == v) {
        value = info.V.getValue();
        return false;
      }
    if (std::string *sink = optionErrorSink()) {
      *sink = ("invalid value '" + v + "' for " + o.ArgStr + " (expected " +
               validValues() + ")")
                  .str();
      return true;
    }
    return o.error("invalid value '" + v + "' (expected " + validValues() +
                   ")");
  }

  template <typename DT>
  void addLiteralOption(llvm::StringRef name, const DT &v,
                        llvm::StringRef help) {
    Values.push_back(OptionInfo(name, static_cast<T>(v), help));
    AddLiteralOption(Owner, name);
  }
};

} // namespace infir2

#define INFIR2_ENUM_OPTION_PARSER(T)                                           \
  template <>                                                                  \
  class llvm::cl::parser<T> : public ::infir2::EnumOptionParser<T> {           \
  public:                                                                      \
    using ::infir2::EnumOptionParser<T>::EnumOptionParser;                     \
  }

#endif // INFIR2_SUPPORT_ENUMOPTION_H
