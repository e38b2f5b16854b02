//===- Fp8Export.cpp - The FP8 inference export ---------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// `--export-fp8 OUT`: the loaded model as the FP8 checkpoints of
// DeepSeek-V3 and Qwen's FP8 releases lay it out, which vLLM and SGLang
// load. Every weight the compiled plan quantizes by blocks for its FP8
// GEMMs (the manifest's fp8_weights) is stored as F8_E4M3 with
// `weight_scale_inv` (F32, one per block: ceil(out/128) x ceil(in/128)),
// quantized from the working weights exactly as the training forward
// quantizes them (fp8Scale, then x / s rounded to nearest even); every other
// tensor is BF16; config.json gains the quantization_config. The folder is
// written as OUT.tmp and renamed when complete.
//
//===----------------------------------------------------------------------===//

#include "loop/Fp8Export.h"
#include "io/ModelFolder.h"

#include "infir2/runtime/FP8.h"
#include "infir2/runtime/Float.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

using namespace infir2::rt;
namespace fs = std::filesystem;

namespace {

/// One FP8 weight's quantized bytes and its block scales, made when the
/// writer reaches the weight and kept for its weight_scale_inv, which
/// follows it.
struct QuantizedWeight {
  std::vector<uint8_t> data;
  std::vector<float> scaleInv;
};

/// Quantizes the 2-D weight `s` (rows x cols, its working copy at `data`)
/// by blocks, reading its elements in place.
void quantize(const ManifestSlot &s, const uint8_t *data,
              const ManifestFp8Weight &w, QuantizedWeight &out) {
  int64_t rows = s.shape[0], cols = s.shape[1];
  int64_t bc = (cols + w.blockCols - 1) / w.blockCols;
  auto block = [&](int64_t i, int64_t j) {
    return (i / w.blockRows) * bc + j / w.blockCols;
  };
  std::vector<float> amax(((rows + w.blockRows - 1) / w.blockRows) * bc, 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float &a = amax[block(i, j)];
      a = std::max(a, std::fabs(readElement(s.dtype, data, i * cols + j)));
    }
  out.scaleInv.resize(amax.size());
  for (size_t b = 0; b < amax.size(); ++b)
    out.scaleInv[b] = fp8Scale(amax[b], FP8Format::E4M3,
                               w.scales == "pow2"    ? ScaleRule::Pow2
                               : w.scales == "floor" ? ScaleRule::Floor
                                                     : ScaleRule::FP32);
  out.data.resize(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out.data[i * cols + j] = floatToE4M3(
          readElement(s.dtype, data, i * cols + j) / out.scaleInv[block(i, j)]);
}

/// The projections vLLM fuses into one GEMM, which must all be FP8 or all
/// BF16: a layer's q/k/v, and its gate/up.
std::string fusedGroup(const std::string &name) {
  for (const char *member : {"q_proj.weight", "k_proj.weight", "v_proj.weight"})
    if (name.size() > 13 && name.compare(name.size() - 13, 13, member) == 0)
      return name.substr(0, name.size() - 13) + "qkv";
  for (const char *member : {"gate_proj.weight", "up_proj.weight"}) {
    size_t n = std::strlen(member);
    if (name.size() > n && name.compare(name.size() - n, n, member) == 0)
      return name.substr(0, name.size() - n) + "gate_up";
  }
  return "";
}

} // namespace

Status Fp8Export::write(const std::string &outArg) {
  // "OUT/" is OUT: the temporary folder is its sibling, OUT.tmp.
  std::string out = fs::path(outArg).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/')
    out.pop_back();
  if (s_.m.fp8Weights.empty())
    return fail("--export-fp8: the compiled model runs no GEMM in FP8 with "
                "block-scaled weights (compile it with --recipe=fp8 and "
                "granularity=blockwise, the default: the export writes "
                "128x128-block FP8, which MXFP8 and per-tensor or per-row "
                "training do not make)");
  if (s_.m.modelConfig.empty())
    return fail("--export-fp8: the compiled model carries no Hugging Face "
                "config (import it with infir2-import, which records one)");
  std::error_code ec;
  if (fs::exists(out, ec))
    return fail("--export-fp8 %s: it already exists (remove it, or name a "
                "new folder)",
                out.c_str());
  const ManifestFp8Weight &first = s_.m.fp8Weights[0];
  std::map<std::string, const ManifestFp8Weight *> fp8;
  for (const ManifestFp8Weight &w : s_.m.fp8Weights) {
    // One block size and format for the whole model, as the config says.
    if (w.blockRows != first.blockRows || w.blockCols != first.blockCols ||
        w.format != "e4m3")
      return fail("--export-fp8: '%s' is quantized by %lldx%lld blocks to %s; "
                  "the export takes one block size for every weight, in e4m3",
                  w.name.c_str(), (long long)w.blockRows,
                  (long long)w.blockCols, w.format.c_str());
    if (const ManifestSlot *s = s_.layout.find(SlotKind::Param, w.name);
        s && s->shape.size() == 2)
      fp8[w.name] = &w;
  }
  // A fused group with a member the plan keeps in high precision stays in
  // BF16 whole (listed in ignored_layers), or vLLM would refuse it.
  std::set<std::string> mixed;
  for (const ManifestSlot &s : s_.m.slots)
    if (s.kind == SlotKind::Param && !fusedGroup(s.name).empty() &&
        !fp8.count(s.name))
      mixed.insert(fusedGroup(s.name));
  for (auto it = fp8.begin(); it != fp8.end();)
    it = mixed.count(fusedGroup(it->first)) ? fp8.erase(it) : std::next(it);

  std::vector<uint16_t> bf16;
  QuantizedWeight q;
  int64_t fp8Bytes = 0, bf16Bytes = 0, fp8Count = 0;
  std::vector<TensorSource> sources;
  for (const ManifestSlot &slot : s_.m.slots) {
    if (slot.kind != SlotKind::Param)
      continue;
    const ManifestSlot *s = &slot;
    auto it = fp8.find(s->name);
    if (it == fp8.end()) {
      // BF16, rounded to nearest even from a wider working copy.
      sources.push_back({s->name, "BF16", s->shape, uint64_t(s->numel()) * 2,
                         [this, s, &bf16](std::string &) -> const void * {
                           if (s->dtype == "bf16")
                             return s_.bytesAt(*s);
                           bf16.resize(size_t(s->numel()));
                           for (int64_t i = 0; i < s->numel(); ++i)
                             bf16[i] = floatToBF16(
                                 readElement(s->dtype, s_.bytesAt(*s), i));
                           return bf16.data();
                         }});
      bf16Bytes += s->numel() * 2;
      continue;
    }
    const ManifestFp8Weight *w = it->second;
    sources.push_back({s->name, "F8_E4M3", s->shape, uint64_t(s->numel()),
                       [this, s, w, &q](std::string &) -> const void * {
                         quantize(*s, s_.bytesAt(*s), *w, q);
                         return q.data.data();
                       }});
    std::vector<int64_t> blocks = {
        (s->shape[0] + w->blockRows - 1) / w->blockRows,
        (s->shape[1] + w->blockCols - 1) / w->blockCols};
    sources.push_back(
        {s->name + "_scale_inv", "F32", blocks,
         uint64_t(blocks[0] * blocks[1]) * 4,
         [&q](std::string &) -> const void * { return q.scaleInv.data(); }});
    fp8Bytes += s->numel() + blocks[0] * blocks[1] * 4;
    ++fp8Count;
  }

  std::string tmp = out + ".tmp";
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec))
    return fail("--export-fp8: cannot create %s: %s", tmp.c_str(),
                ec.message().c_str());
  auto write = [&]() -> Status {
    Expected<FileDigests> digests =
        writeModelWeights(tmp, sources, s_.o.maxShardSize,
                          /*alwaysIndexed=*/false);
    if (!digests)
      return digests.failure();
    nlohmann::ordered_json quantization = {
        {"quant_method", "fp8"},
        {"fmt", "e4m3"},
        {"activation_scheme", "dynamic"},
        {"weight_block_size", {first.blockRows, first.blockCols}}};
    // Linear layers left in BF16 are named, or vLLM would take them for FP8.
    std::vector<std::string> ignored;
    for (const ManifestSlot &s : s_.m.slots) {
      std::string_view name = s.name;
      if (s.kind == SlotKind::Param && s.shape.size() == 2 &&
          !fp8.count(s.name) && name.size() > 12 &&
          name.substr(name.size() - 12) == "_proj.weight")
        ignored.push_back(s.name.substr(0, s.name.size() - 7));
    }
    // vLLM reads ignored_layers, transformers modules_to_not_convert.
    if (!ignored.empty()) {
      quantization["ignored_layers"] = ignored;
      quantization["modules_to_not_convert"] = ignored;
    }
    nlohmann::ordered_json extra = {{"quantization_config", quantization}};
    INFIR2_RETURN_IF_ERROR(writeTextFile(
        tmp, kModelConfigFile,
        modelConfigJson(s_.m.modelConfig, "bfloat16", extra.dump()), *digests));
    INFIR2_RETURN_IF_ERROR(writeTextFile(tmp, "generation_config.json",
                                         generationConfigJson(s_.m.modelConfig),
                                         *digests));
    // The tokenizer the model was trained with: --tokenizer, else the one
    // saved in the loaded folder.
    std::string tokenizer = s_.tokenizerSource();
    if (!tokenizer.empty())
      INFIR2_RETURN_IF_ERROR(copyTokenizer(tokenizer, tmp, *digests));
    fs::rename(tmp, out, ec);
    if (ec)
      return fail("--export-fp8: cannot move %s to %s: %s", tmp.c_str(),
                  out.c_str(), ec.message().c_str());
    return Status::ok();
  };
  if (Status s = write(); !s) {
    fs::remove_all(tmp, ec);
    return s;
  }
  std::printf("exported %lld FP8 weights (E4M3, %lldx%lld blocks, %s scales) "
              "and %zu BF16 tensors to %s: %.1f MiB (%.1f MiB in FP8)\n",
              (long long)fp8Count, (long long)s_.m.fp8Weights[0].blockRows,
              (long long)s_.m.fp8Weights[0].blockCols,
              s_.m.fp8Weights[0].scales.c_str(),
              sources.size() - 2 * size_t(fp8Count), out.c_str(),
              (fp8Bytes + bf16Bytes) / 1048576.0, fp8Bytes / 1048576.0);
  return Status::ok();
}
