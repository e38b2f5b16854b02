//===- Signature.h - What ABI.def says a call passes -----------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Each entry point of ABI.def declares how many operands and attribute words
// a call passes, as expressions over the call itself (operand ranks, integer
// attributes, flags that make an optional operand present). checkSignature
// evaluates them over any view of a call: the infir2rt.call verifier's (its
// buffers' types and its attribute array) and the dispatcher's (the
// descriptor, before every call reaches a backend). Header-only, no
// dependencies beyond the C++ standard library.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_SIGNATURE_H
#define INFIR2_RUNTIME_SIGNATURE_H

#include "infir2/runtime/ABI.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace infir2::rt {

/// What a signature reads of a call that does not have it: far from any
/// count, so that a rule reading it fails (and no product overflows).
constexpr int64_t kMissing = -(int64_t(1) << 40);

/// A call as a signature sees it. `View` provides
///   int64_t operandCount() const, attrCount() const;
///   int64_t rank(int64_t i) const;   // operand i's rank
///   double attr(int64_t i) const;    // attribute i
template <typename View> struct SignatureView {
  const View &v;
  int64_t rank(int64_t i) const {
    return i >= 0 && i < v.operandCount() ? v.rank(i) : kMissing;
  }
  /// Attribute i as an integer; kMissing when absent, not an integer, or
  /// beyond any count a call could have.
  int64_t attr(int64_t i) const {
    if (i < 0 || i >= v.attrCount())
      return kMissing;
    double a = v.attr(i);
    if (!(std::fabs(a) < double(int64_t(1) << 32)) || a != std::floor(a))
      return kMissing;
    return int64_t(a);
  }
  int64_t flag(int64_t i) const {
    return i >= 0 && i < v.attrCount() && v.attr(i) != 0.0 ? 1 : 0;
  }
};

/// An operand rule of ABI.def.
struct OperandRule {
  enum Kind { Exactly, GroupsOf, SameRankGroupsOf, AtLeast } kind;
  int64_t n;
  bool accepts(int64_t count) const {
    switch (kind) {
    case Exactly:
      return count == n;
    case GroupsOf:
    case SameRankGroupsOf:
      return n > 0 && count > 0 && count % n == 0;
    case AtLeast:
      return count >= n;
    }
    return false;
  }
  std::string describe() const {
    switch (kind) {
    case Exactly:
      return n < 0 ? "a count its attributes do not give" : std::to_string(n);
    case GroupsOf:
    case SameRankGroupsOf:
      return "a positive multiple of " + std::to_string(n);
    case AtLeast:
      return "at least " + std::to_string(n);
    }
    return "?";
  }
};

/// Whether the call `view` (to entry `entry`, an infir2rt_entry_index)
/// passes the operands and attribute words ABI.def declares; otherwise a
/// sentence saying what it passes and what it should, for an error.
template <typename View>
bool checkSignature(int entry, const View &view, std::string &why) {
  SignatureView<View> s{view};
  OperandRule operands{OperandRule::Exactly, 0};
  const char *name = "?";
  // One walk over the entry's attributes counts their words (`at`) and
  // notes the first word not of its field's type (INT and INTS integers,
  // BOOL 0 or 1; REAL and REALS any double), reported only once the counts
  // are right.
  int64_t at = 0, badAt = 0;
  const char *field = nullptr, *want = nullptr;
  // (A count that reads what the call lacks comes out negative: the words
  // from there on are not checked; the counts refuse the call.)
  auto check = [&](const char *fieldName, int64_t i, bool integer) {
    if (field || i < 0 || i >= view.attrCount())
      return;
    double a = view.attr(i);
    bool ok =
        integer ? std::fabs(a) < double(int64_t(1) << 53) && a == std::floor(a)
                : a == 0.0 || a == 1.0;
    if (!ok) {
      field = fieldName;
      want = integer ? "an integer" : "0 or 1";
      badAt = i;
    }
  };
#define OPERANDS(n) OperandRule{OperandRule::Exactly, (n)}
#define GROUPS_OF(k) OperandRule{OperandRule::GroupsOf, (k)}
#define SAME_RANK_GROUPS_OF(k) OperandRule{OperandRule::SameRankGroupsOf, (k)}
#define AT_LEAST(n) OperandRule{OperandRule::AtLeast, (n)}
#define RANK(i) s.rank(i)
#define ATTR(i) s.attr(i)
#define FLAG(i) s.flag(i)
#define ATTRS(...) __VA_ARGS__
#define REAL(fieldName) ++at;
#define INT(fieldName) check(#fieldName, at++, true);
#define BOOL(fieldName) check(#fieldName, at++, false);
#define INTS(fieldName, count)                                                 \
  {                                                                            \
    int64_t words = (count);                                                   \
    for (int64_t e = std::max<int64_t>(0, -at);                                \
         e < words && at + e < view.attrCount(); ++e)                          \
      check(#fieldName, at + e, true);                                         \
    at += words;                                                               \
  }
#define REALS(fieldName, count) at += (count);
  switch (entry) {
#define INFIR2RT_ENTRY(entryName, operandRule, fields, doc)                    \
  case INFIR2RT_ENTRY_##entryName:                                             \
    name = #entryName;                                                         \
    fields operands = operandRule;                                             \
    break;
#include "infir2/runtime/ABI.def"
  default:
    why = "is not an entry point of ABI.def";
    return false;
  }
#undef OPERANDS
#undef GROUPS_OF
#undef SAME_RANK_GROUPS_OF
#undef AT_LEAST
#undef RANK
#undef ATTR
#undef FLAG
#undef ATTRS
#undef REAL
#undef INT
#undef BOOL
#undef INTS
#undef REALS
  // The attributes first: the operand rules read them.
  if (view.attrCount() != at) {
    why = std::string(name) + " takes " +
          (at < 0 ? std::string("a number its operands do not give")
                  : std::to_string(at)) +
          " attribute words (ABI.def), got " + std::to_string(view.attrCount());
    return false;
  }
  if (!operands.accepts(view.operandCount())) {
    why = std::string(name) + " takes " + operands.describe() +
          " operands (ABI.def), got " + std::to_string(view.operandCount());
    return false;
  }
  // Groups whose attributes follow the first group's rank: every group's
  // first operand has that rank.
  if (operands.kind == OperandRule::SameRankGroupsOf)
    for (int64_t g = operands.n; g < view.operandCount(); g += operands.n)
      if (s.rank(g) != s.rank(0)) {
        why = std::string(name) + "'s groups share their first operand's " +
              "rank (ABI.def): operand " + std::to_string(g) +
              " has rank " + std::to_string(s.rank(g)) + ", operand 0 " +
              std::to_string(s.rank(0));
        return false;
      }
  if (field) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", view.attr(badAt));
    why = std::string(name) + "'s attribute '" + field + "' (word " +
          std::to_string(badAt) + ") is " + want + " (ABI.def), got " + got;
    return false;
  }
  return true;
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_SIGNATURE_H
