//===- Choices.h - Enums named by a flag's value ----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Each trainer flag whose value names one of a few choices (--schedule wsd)
// is an enum, parsed once, from the command line or a --config file, with
// its spellings in one table beside the enum: the parser, the effective
// configuration (toJson) and the messages all read it.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CHOICES_H
#define INFIR2_RUNTIME_CHOICES_H

#include "infir2/runtime/Expected.h"

#include <iterator>
#include <string>
#include <string_view>

namespace infir2::rt {

/// A choice's enum value and its spelling.
template <typename E> struct Spelling {
  E value;
  const char *name;
};

/// Per enum, beside the enum: its flag and its spellings, in --help order,
/// e.g.
///   template <> struct Choices<LrSchedule> {
///     static constexpr const char *flag = "--schedule";
///     static constexpr Spelling<LrSchedule> spellings[] = {
///         {LrSchedule::Wsd, "wsd"}, ...};
///   };
template <typename E> struct Choices;

/// "wsd" for LrSchedule::Wsd.
template <typename E> const char *nameOf(E value) {
  for (const Spelling<E> &s : Choices<E>::spellings)
    if (s.value == value)
      return s.name;
  return "?";
}

/// The choice `text` spells, or "--schedule must be wsd, cosine or
/// constant, got 'linear'".
template <typename E> Expected<E> parseChoice(std::string_view text) {
  std::string list;
  constexpr size_t n = std::size(Choices<E>::spellings);
  for (size_t i = 0; i < n; ++i) {
    const Spelling<E> &s = Choices<E>::spellings[i];
    if (text == s.name)
      return s.value;
    list += i == 0 ? "" : i + 1 == n ? " or " : ", ";
    list += s.name;
  }
  return fail("%s must be %s, got '%.*s'", Choices<E>::flag, list.c_str(),
              int(text.size()), text.data());
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_CHOICES_H
