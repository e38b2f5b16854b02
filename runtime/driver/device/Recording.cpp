//===- Recording.cpp - A backend that counts what is asked of it ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "device/Recording.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <utility>

using namespace infir2::rt;

CallRecorder *CallRecorder::current = nullptr;

namespace {

const infir2rt_backend &inner() { return *CallRecorder::current->inner; }
CallRecorder::Counts &counts() { return CallRecorder::current->live; }

template <int I>
int32_t entry(infir2rt_context *ctx, const int64_t *desc, const char *where) {
  CallRecorder::current->countCall(I);
  return inner().entries[I](ctx, desc, where);
}

template <int... I>
void fillEntries(infir2rt_entry_fn *table, std::integer_sequence<int, I...>) {
  ((table[I] = &entry<I>), ...);
}

int32_t upload(void *dst, const void *src, int64_t bytes, void *stream,
               char *why, int64_t whySize) {
  ++counts().uploads;
  return inner().upload(dst, src, bytes, stream, why, whySize);
}

int32_t download(void *dst, const void *src, int64_t bytes, void *stream,
                 char *why, int64_t whySize) {
  ++counts().downloads;
  return inner().download(dst, src, bytes, stream, why, whySize);
}

int32_t synchronize(void *stream, char *why, int64_t whySize) {
  ++counts().synchronizations;
  return inner().synchronize(stream, why, whySize);
}

} // namespace

CallRecorder::CallRecorder(const infir2rt_backend *inner)
    : inner(inner), table_(*inner) {
  current = this;
  table_.name = "recording";
  fillEntries(table_.entries,
              std::make_integer_sequence<int, INFIR2RT_NUM_ENTRIES>());
  table_.upload = upload;
  table_.download = download;
  table_.synchronize = synchronize;
}

CallRecorder::~CallRecorder() {
  if (current == this)
    current = nullptr;
}

void CallRecorder::countCall(int index) { ++live.calls[function_][index]; }

void CallRecorder::enter(const std::string &function) {
  function_ = function;
  if (!function.empty())
    ++live.invocations[function];
}

void CallRecorder::beginStep() {
  stepping_ = true;
  live = Counts();
}

void CallRecorder::endStep() {
  if (!stepping_)
    return;
  stepping_ = false;
  ++steps_;
  for (auto &[function, calls] : live.calls)
    for (int i = 0; i < INFIR2RT_NUM_ENTRIES; ++i)
      recorded_.calls[function][i] += calls[i];
  for (auto &[function, n] : live.invocations)
    recorded_.invocations[function] += n;
  recorded_.synchronizations += live.synchronizations;
  recorded_.downloads += live.downloads;
  recorded_.uploads += live.uploads;
  live = Counts();
}

Status CallRecorder::write(const std::string &path) const {
  static const char *names[] = {
#define INFIR2RT_ENTRY(name, operands, attributes, doc) #name,
#include "infir2/runtime/ABI.def"
  };
  double steps = double(steps_ ? steps_ : 1);
  nlohmann::ordered_json j, perStep, functions;
  j["format"] = "infir2-call-record";
  j["backend"] = inner->name;
  j["steps"] = steps_;
  perStep["host_round_trips"] =
      double(recorded_.synchronizations + recorded_.downloads) / steps;
  perStep["synchronizations"] = double(recorded_.synchronizations) / steps;
  perStep["downloads"] = double(recorded_.downloads) / steps;
  perStep["uploads"] = double(recorded_.uploads) / steps;
  for (auto &[function, calls] : recorded_.calls) {
    int64_t total = 0;
    nlohmann::ordered_json entries;
    for (int i = 0; i < INFIR2RT_NUM_ENTRIES; ++i)
      if (calls[i]) {
        entries[names[i]] = calls[i];
        total += calls[i];
      }
    std::string name = function.empty() ? "trainer" : function;
    auto n = recorded_.invocations.find(function);
    int64_t invocations = n == recorded_.invocations.end() ? 0 : n->second;
    perStep["calls"][name] = double(total) / steps;
    functions[name] = {
        {"invocations", invocations}, {"calls", total}, {"entries", entries}};
  }
  j["per_step"] = perStep;
  j["functions"] = functions;
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out)
    return fail("--record-calls %s: cannot write it", path.c_str());
  return Status::ok();
}
