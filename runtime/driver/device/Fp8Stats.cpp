//===- Fp8Stats.cpp - What each FP8 quantization of a step did ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "device/Fp8Stats.h"

#include "infir2/runtime/Descriptor.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/FP8.h"
#include "infir2/runtime/Float.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <utility>

using namespace infir2::rt;

Fp8StatsRecorder *Fp8StatsRecorder::current = nullptr;

QuantizationStats
infir2::rt::quantizationStats(const float *x, const std::vector<int64_t> &shape,
                              const uint8_t *codes, const float *scales,
                              const std::vector<int64_t> &block, bool e5m2,
                              bool transposed) {
  QuantizationStats s;
  int64_t rank = int64_t(shape.size()), numel = 1;
  for (int64_t d : shape)
    numel *= d;
  int64_t cols = rank ? shape.back() : 1, rows = cols ? numel / cols : 0;
  // A scaled value saturates when it rounds beyond the largest finite value
  // (448 in E4M3, 57344 in E5M2), to which the conversion clamps it: above
  // the midpoint to the next step of the top binade (464: a tie rounds to
  // 448, even), or from it on in E5M2 (61440: a tie rounds up, to 65536).
  const float beyond = e5m2 ? 61440.0f : 464.0f;
  s.numel = numel;
  s.shape = transposed ? std::vector<int64_t>{cols, rows} : shape;
  // Blocks over the layout the codes have: its shape, and each element's
  // scale index.
  std::vector<int64_t> layout = s.shape, blocks(layout.size());
  int64_t scaleCount = 1;
  for (size_t d = 0; d < layout.size(); ++d) {
    blocks[d] = (layout[d] + block[d] - 1) / block[d];
    scaleCount *= blocks[d];
  }
  for (int64_t b = 0; b < scaleCount; ++b) {
    s.scaleMin = b ? std::min(s.scaleMin, double(scales[b])) : scales[b];
    s.scaleMax = b ? std::max(s.scaleMax, double(scales[b])) : scales[b];
  }
  auto visit = [&](float v, uint8_t code, float scale) {
    float a = std::fabs(v);
    s.amax = std::max(s.amax, double(a));
    if (v == 0.0f)
      return;
    ++s.nonzero;
    float scaled = a / scale;
    s.maxScaled = std::max(s.maxScaled, double(scaled));
    s.saturated += e5m2 ? scaled >= beyond : scaled > beyond;
    s.flushed += (code & 0x7f) == 0;
  };
  if (transposed) { // x[t, k] is code [k, t], in block (k / b0, t / b1)
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t k = 0; k < cols; ++k)
        visit(x[t * cols + k], codes[k * rows + t],
              scales[(k / block[0]) * blocks[1] + t / block[1]]);
    return s;
  }
  // Row by row over the last dimension: the leading dimensions' block
  // offset, then the last one's.
  std::vector<int64_t> idx(size_t(std::max<int64_t>(rank - 1, 0)), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    for (int64_t d = 0; d + 1 < rank; ++d)
      base = base * blocks[d] + idx[d] / block[d];
    base *= rank ? blocks[rank - 1] : 1;
    for (int64_t j = 0; j < cols; ++j)
      visit(x[r * cols + j], codes[r * cols + j],
            scales[base + (rank ? j / block[rank - 1] : 0)]);
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return s;
}

namespace {

const infir2rt_backend &inner() { return *Fp8StatsRecorder::current->inner; }

/// Marks a read-back that found a refused non-finite value.
constexpr char kRefused[] = "non-finite: ";

template <int I>
int32_t entry(infir2rt_context *ctx, const int64_t *desc, const char *where) {
  int32_t rc = inner().entries[I](ctx, desc, where);
  if (rc != 0 || !Fp8StatsRecorder::current->on())
    return rc;
  return Fp8StatsRecorder::current->record(I, ctx, desc, where);
}

template <int... I>
void fillEntries(infir2rt_entry_fn *table, std::integer_sequence<int, I...>) {
  ((table[I] = &entry<I>), ...);
}

/// An operand's bytes on the host (copied from the device where the regions
/// are not host memory).
Status hostBytes(infir2rt_context *ctx, const DescOperand &o,
                 std::vector<uint8_t> &out) {
  int64_t bytes = o.numel * infir2rt_dtype_size(o.dtype);
  out.resize(size_t(bytes));
  if (inner().host_memory) {
    std::memcpy(out.data(), o.ptr, size_t(bytes));
    return Status::ok();
  }
  char why[256] = {0};
  if (int32_t rc = inner().download(out.data(), o.ptr, bytes, ctx->stream, why,
                                    sizeof why)) {
    // A GPU quantizer's refusal of a non-finite value surfaces at the first
    // read-back: the step's, or this one.
    if (rc == INFIR2RT_NONFINITE)
      return Failure{std::string(kRefused) + why};
    return fail("--fp8-stats-every: reading a quantization back: %s", why);
  }
  return Status::ok();
}

/// An FP32, BF16 or E8M0 operand's elements as FP32 on the host.
Status hostFloats(infir2rt_context *ctx, const DescOperand &o,
                  std::vector<float> &out) {
  std::vector<uint8_t> raw;
  INFIR2_RETURN_IF_ERROR(hostBytes(ctx, o, raw));
  out.resize(size_t(o.numel));
  for (int64_t i = 0; i < o.numel; ++i) {
    if (o.dtype == INFIR2RT_BF16) {
      uint16_t b;
      std::memcpy(&b, raw.data() + 2 * i, 2);
      out[size_t(i)] = bf16ToFloat(b);
    } else if (o.dtype == INFIR2RT_E8M0) {
      out[size_t(i)] = e8m0ToFloat(raw[size_t(i)]);
    } else {
      std::memcpy(&out[size_t(i)], raw.data() + 4 * i, 4);
    }
  }
  return Status::ok();
}

} // namespace

Fp8StatsRecorder::Fp8StatsRecorder(const infir2rt_backend *inner,
                                   const Manifest &manifest)
    : inner(inner), table_(*inner), manifest_(manifest) {
  current = this;
  table_.name = inner->name;
  fillEntries(table_.entries,
              std::make_integer_sequence<int, INFIR2RT_NUM_ENTRIES>());
}

Fp8StatsRecorder::~Fp8StatsRecorder() {
  if (current == this)
    current = nullptr;
}

void Fp8StatsRecorder::start(int64_t step) {
  on_ = true;
  step_ = step;
  records_.clear();
  calls_.clear();
}

void Fp8StatsRecorder::enter(const std::string &function) {
  function_ = function;
  if (!on_ || function.empty())
    return;
  ++calls_[function]; // a micro-batch's train_step, say
  index_ = 0;
}

std::string Fp8StatsRecorder::slotAt(int64_t region, int64_t offset) const {
  if (region != INFIR2RT_STATE)
    return "";
  for (const ManifestSlot &s : manifest_.slots)
    if (offset >= s.offset && offset < s.offset + s.bytes)
      return std::string(slotKindName(s.kind)) + " " + s.name;
  return "";
}

int32_t Fp8StatsRecorder::recordOne(infir2rt_context *ctx, const int64_t *desc,
                                    const char *where, int64_t input,
                                    int64_t codes, int64_t scales,
                                    std::vector<int64_t> block, bool e5m2,
                                    bool transposed) {
  DescOperand x = descOperand(ctx, desc, input),
              q = descOperand(ctx, desc, codes),
              s = descOperand(ctx, desc, scales);
  if ((x.dtype != INFIR2RT_F32 && x.dtype != INFIR2RT_BF16) ||
      (s.dtype != INFIR2RT_F32 && s.dtype != INFIR2RT_E8M0) ||
      infir2rt_dtype_size(q.dtype) != 1)
    return setCallError(ctx, where, "%s",
                        "--fp8-stats-every reads an f32 or bf16 input, FP8 "
                        "codes and f32 or E8M0 scales");
  std::vector<float> xs, ss;
  std::vector<uint8_t> bytes;
  Status read = hostFloats(ctx, x, xs);
  if (read)
    read = hostBytes(ctx, q, bytes);
  if (read)
    read = hostFloats(ctx, s, ss);
  if (!read) {
    // A refusal stays the step's (it is skipped, as without statistics),
    // its message as the backend gave it.
    std::string message = read.message();
    bool refused = message.rfind(kRefused, 0) == 0;
    if (refused) {
      // "where: message" as the backend wrote it, naming the quantizer
      // that refused (perhaps an earlier call's): kept whole, no `where`.
      message.erase(0, sizeof kRefused - 1);
      setCallError(ctx, nullptr, "%s", message.c_str());
      return INFIR2RT_NONFINITE;
    }
    return setCallError(ctx, where, "%s", message.c_str());
  }
  std::vector<int64_t> shape(x.shape, x.shape + x.rank);
  Record r;
  r.function = function_;
  r.call = calls_[function_] - 1;
  r.where = where;
  const int64_t *words = desc + 2 + input * INFIR2RT_OPERAND_WORDS;
  r.name = slotAt(words[0], words[3]);
  r.layout = transposed ? "column-wise" : "row-wise";
  r.format = e5m2 ? "e5m2" : "e4m3";
  r.index = index_++;
  r.stats = quantizationStats(xs.data(), shape, bytes.data(), ss.data(), block,
                              e5m2, transposed);
  records_.push_back(std::move(r));
  return 0;
}

int32_t Fp8StatsRecorder::record(int index, infir2rt_context *ctx,
                                 const int64_t *desc, const char *where) {
  // A quantize_dual's tensor: its row-wise codes and scales at `first`,
  // its column-wise ones after them.
  auto both = [&](int64_t input, int64_t first,
                  const attrs::Array<int64_t> &block,
                  const attrs::Array<int64_t> &blockT, bool e5m2) -> int32_t {
    if (int32_t rc = recordOne(ctx, desc, where, input, first, first + 1,
                               block.values(), e5m2, false))
      return rc;
    return recordOne(ctx, desc, where, input, first + 2, first + 3,
                     blockT.values(), e5m2, true);
  };
  switch (index) {
  case INFIR2RT_ENTRY_quantize: {
    auto a = attrs::decode<attrs::quantize>(desc);
    return recordOne(ctx, desc, where, 0, 1, 2, a.block.values(), a.format != 0,
                     false);
  }
  case INFIR2RT_ENTRY_quantize_dual: {
    auto a = attrs::decode<attrs::quantize_dual>(desc);
    for (int64_t g = 0; g < desc[0] / 5; ++g)
      if (int32_t rc =
              both(5 * g, 5 * g + 1, a.block, a.block_t, a.format != 0))
        return rc;
    return 0;
  }
  case INFIR2RT_ENTRY_rms_norm_quantize_dual: {
    auto a = attrs::decode<attrs::rms_norm_quantize_dual>(desc);
    return both(2, 3, a.block, a.block_t, a.format != 0);
  }
  case INFIR2RT_ENTRY_swiglu_quantize_dual: {
    auto a = attrs::decode<attrs::swiglu_quantize_dual>(desc);
    return both(2, 3, a.block, a.block_t, a.format != 0);
  }
  default:
    return 0;
  }
}

Status Fp8StatsRecorder::write(const std::string &path, bool skipped) {
  std::ofstream out(path, std::ios::app);
  for (const Record &r : records_) {
    const QuantizationStats &s = r.stats;
    nlohmann::ordered_json j;
    j["step"] = step_;
    if (skipped)
      j["skipped"] = true;
    j["function"] = r.function;
    j["call"] = r.call;
    j["index"] = r.index;
    j["where"] = r.where;
    j["name"] = r.name;
    j["layout"] = r.layout;
    j["shape"] = s.shape;
    j["format"] = r.format;
    j["amax"] = s.amax;
    j["scale_min"] = s.scaleMin;
    j["scale_max"] = s.scaleMax;
    j["max_scaled"] = s.maxScaled;
    j["saturated"] = s.numel ? double(s.saturated) / double(s.numel) : 0.0;
    j["flushed"] = s.nonzero ? double(s.flushed) / double(s.nonzero) : 0.0;
    j["counts"] = {{"values", s.numel},
                   {"nonzero", s.nonzero},
                   {"saturated", s.saturated},
                   {"flushed", s.flushed}};
    out << j.dump() << "\n";
  }
  records_.clear();
  if (!out)
    return fail("--fp8-stats: cannot write %s", path.c_str());
  return Status::ok();
}
