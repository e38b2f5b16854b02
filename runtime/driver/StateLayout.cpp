//===- StateLayout.cpp - The state region, slot by slot -------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "StateLayout.h"

#include "infir2/runtime/Float.h"

#include <algorithm>
#include <cstring>

using namespace infir2::rt;

int64_t Extent::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string infir2::rt::storedDtype(const std::string &d) {
  return d == "f32"    ? "F32"
         : d == "bf16" ? "BF16"
         : d == "f16"  ? "F16"
         : d == "f64"  ? "F64"
                       : "";
}

float infir2::rt::readElement(const std::string &dtype, const uint8_t *data,
                              int64_t i) {
  auto load = [&](auto v, int64_t size) {
    std::memcpy(&v, data + i * size, size);
    return v;
  };
  if (dtype == "bf16")
    return bf16ToFloat(load(uint16_t(), 2));
  if (dtype == "f16")
    return halfToFloat(load(uint16_t(), 2));
  if (dtype == "f64")
    return float(load(double(), 8));
  if (dtype == "i32")
    return float(load(int32_t(), 4));
  if (dtype == "i64")
    return float(load(int64_t(), 8));
  return load(float(), 4);
}

void infir2::rt::writeElement(const std::string &dtype, uint8_t *data,
                              int64_t i, float v) {
  auto store = [&](auto x, int64_t size) {
    std::memcpy(data + i * size, &x, size);
  };
  if (dtype == "bf16")
    store(floatToBF16(v), 2);
  else if (dtype == "f16")
    store(floatToHalf(v), 2);
  else if (dtype == "f64")
    store(double(v), 8);
  else if (dtype == "i32")
    store(int32_t(v), 4);
  else if (dtype == "i64")
    store(int64_t(v), 8);
  else
    store(v, 4);
}

const ManifestSlot *StateLayout::find(const std::string &kind,
                                      const std::string &name) const {
  for (const ManifestSlot &s : m_.slots)
    if (s.kind == kind && s.name == name)
      return &s;
  return nullptr;
}

Expected<const ManifestSlot *> StateLayout::get(const std::string &kind,
                                                const std::string &name) const {
  if (const ManifestSlot *s = find(kind, name))
    return s;
  return fail("the compiled model has no %s '%s'", kind.c_str(), name.c_str());
}

Extent StateLayout::extentOf(const ManifestSlot &s, int rank) const {
  if (!sharded() || !isOptimizerState(s) || s.shape.empty())
    return {s.shape, 0, s.numel()};
  const ManifestSlot *whole = find("param", s.name);
  if (!whole || whole->shape.empty())
    return {s.shape, 0, s.numel()};
  int64_t rows = s.shape[0], rowElems = rows ? s.numel() / rows : 0;
  int64_t first = int64_t(rank) * rows;
  int64_t mine =
      std::max<int64_t>(0, std::min(whole->shape[0], first + rows) - first);
  return {whole->shape, first * rowElems, mine * rowElems};
}

Status StateLayout::writeParameter(
    const ManifestSlot &param, uint8_t *state, int rank,
    const std::function<float(int64_t)> &value) const {
  Expected<const ManifestSlot *> master = get("master", param.name);
  if (!master)
    return master.failure();
  Extent e = extentOf(**master, rank);
  uint8_t *mw = state + (*master)->offset;
  uint8_t *w = state + param.offset;
  for (int64_t i = 0, n = param.numel(); i < n; ++i) {
    float v = value(i);
    if (e.contains(i))
      writeElement("f32", mw, i - e.begin, v);
    writeElement(param.dtype, w, i, v);
  }
  return Status::ok();
}

Status StateLayout::initialize(uint8_t *state, std::mt19937_64 &rng,
                               int rank) const {
  std::normal_distribution<double> normal(0.0, 1.0);
  for (const ManifestSlot &s : m_.slots) {
    if (s.kind != "param")
      continue;
    Status written = writeParameter(s, state, rank, [&](int64_t) {
      return s.init == "ones"     ? 1.0f
             : s.init == "normal" ? float(s.std * normal(rng))
                                  : 0.0f;
    });
    if (!written)
      return written;
  }
  return Status::ok();
}

Status StateLayout::loadParameter(const ManifestSlot &s, const StoredTensor &t,
                                  const std::string &path, uint8_t *state,
                                  int rank) const {
  if (t.shape != s.shape) {
    std::string want, got;
    for (int64_t d : s.shape)
      want += (want.empty() ? "" : "x") + std::to_string(d);
    for (int64_t d : t.shape)
      got += (got.empty() ? "" : "x") + std::to_string(d);
    return fail("%s: tensor '%s' has shape [%s], the model expects [%s]",
                path.c_str(), s.name.c_str(), got.c_str(), want.c_str());
  }
  if (t.dtype != "F32" && t.dtype != "BF16" && t.dtype != "F16" &&
      t.dtype != "F64")
    return fail("%s: tensor '%s' has dtype %s (expected F32, BF16, F16 or "
                "F64)",
                path.c_str(), s.name.c_str(), t.dtype.c_str());
  return writeParameter(s, state, rank,
                        [&](int64_t i) { return storedFloat(t, i); });
}

Status
StateLayout::loadParameters(const std::map<std::string, StoredTensor> &tensors,
                            const std::string &path, uint8_t *state,
                            int rank) const {
  for (const ManifestSlot &s : m_.slots) {
    if (s.kind != "param")
      continue;
    auto it = tensors.find(s.name);
    if (it == tensors.end())
      return fail("%s: tensor '%s' is missing", path.c_str(), s.name.c_str());
    INFIR2_RETURN_IF_ERROR(loadParameter(s, it->second, path, state, rank));
  }
  return Status::ok();
}
