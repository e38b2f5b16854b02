//===- StateLayout.h - The state region, slot by slot -----------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The compiled model's state region as the manifest lays it out: finding
// slots, reading and writing their elements in every storage type a model
// may use (f32, bf16, f16, f64; i32/i64 inputs), the part of a ZeRO-1 shard
// a rank holds, initializing the parameters and loading them from
// safetensors. Works on the host copy of the state; moving it to a device
// is the trainer's business.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_IO_STATELAYOUT_H
#define INFIR2_RUNTIME_DRIVER_IO_STATELAYOUT_H

#include "infir2/runtime/Expected.h"

#include "infir2/runtime/Checkpoint.h"
#include "infir2/runtime/Manifest.h"

#include <functional>
#include <map>
#include <random>

namespace infir2::rt {

/// Elements of a whole tensor that one rank's slot holds: its shape, and
/// the elements from `begin`, `count` of them. ZeRO-1 shards the masters
/// and moments by rows; everything else is whole on every rank.
struct Extent {
  std::vector<int64_t> shape;
  int64_t begin = 0, count = 0;
  bool contains(int64_t i) const { return i >= begin && i < begin + count; }
  int64_t numel() const;
};

/// The safetensors dtype of a slot dtype ("bf16" -> "BF16"), or "" for one
/// without a float form.
std::string storedDtype(const std::string &slotDtype);

/// Element i of a float slot's data as FP32 (f32, bf16, f16, f64; i32 and
/// i64 are converted).
float readElement(const std::string &dtype, const uint8_t *data, int64_t i);
/// Stores `v` as element i, rounded once (to nearest even) to `dtype`.
void writeElement(const std::string &dtype, uint8_t *data, int64_t i, float v);

class StateLayout {
public:
  explicit StateLayout(Manifest manifest) : m_(std::move(manifest)) {}

  const Manifest &manifest() const { return m_; }
  const std::vector<ManifestSlot> &slots() const { return m_.slots; }

  const ManifestSlot *find(SlotKind kind, const std::string &name) const;
  /// The slot, or "the compiled model has no KIND 'NAME'".
  Expected<const ManifestSlot *> get(SlotKind kind,
                                     const std::string &name) const;

  /// The byte ranges [offset, offset + bytes) that hold the slots of `kind`
  /// and no other slot, as few as can be: slots of `kind` next to each
  /// other in the state (with only alignment padding, under 64 bytes,
  /// between them) make one range. The gradient accumulators, laid out one
  /// after the other by the planner, are one range: zeroed and checked with one
  /// call each.
  std::vector<std::pair<int64_t, int64_t>> runsOf(SlotKind kind) const;

  /// Whether the masters and moments are row shards (ZeRO-1).
  bool sharded() const { return m_.zero1WorldSize > 0; }
  static bool isOptimizerState(const ManifestSlot &s) {
    return optimizerStatePrefix(s) != nullptr;
  }
  /// The prefix of an optimizer-state slot's tensors in checkpoints
  /// ("master.", "exp_avg.", "exp_avg_sq."), or null for another slot.
  static const char *optimizerStatePrefix(const ManifestSlot &s) {
    return s.kind == SlotKind::Master    ? "master."
           : s.kind == SlotKind::Moment1 ? "exp_avg."
           : s.kind == SlotKind::Moment2 ? "exp_avg_sq."
                                         : nullptr;
  }
  /// This process's rank in its tensor-parallel group: it holds slice
  /// `rank` of each sharded parameter (the manifest's `tp_dim`).
  void setTensorParallelRank(int rank) { tpRank_ = rank; }
  /// The shape of the tensor this rank holds of slot `s`: the parameter's
  /// for its optimizer state (whose slot holds only a row shard of it
  /// under ZeRO-1), else the slot's own.
  std::vector<int64_t> rankShape(const ManifestSlot &s) const;
  /// The whole tensor's shape of slot `s`: rankShape() with the
  /// tensor-parallel dimension times the group's size.
  std::vector<int64_t> wholeShape(const ManifestSlot &s) const;
  /// The element of the whole tensor that element `i` of this rank's slot
  /// `s` is (`i` itself when the slot is not a tensor-parallel shard).
  int64_t wholeIndex(const ManifestSlot &s, int64_t i) const;
  /// Slot `s`'s whole tensor into `whole` from `gathered`, every
  /// tensor-parallel rank's slice in rank order, `elementBytes` an element.
  void assembleWhole(const ManifestSlot &s, const uint8_t *gathered,
                     int64_t elementBytes, uint8_t *whole) const;

  /// The whole tensor of slot `s` and the part of it `rank` holds.
  Extent extentOf(const ManifestSlot &s, int rank) const;

  /// Draws every parameter (normal(0, std), ones or zeros), into its working
  /// copy and into this rank's part of its FP32 master. One draw of `rng`
  /// keys a counter-based generator (each element a function of that key,
  /// the parameter's name and the element's index), so the threads share
  /// the work and every rank, whatever its threads, holds the same weights.
  Status initialize(uint8_t *state, std::mt19937_64 &rng, int rank) const;

  /// Sets parameter `s` (and this rank's part of its master) from `t`, a
  /// tensor of `path` (named in messages): F32, BF16, F16 or F64 of the
  /// parameter's shape.
  Status loadParameter(const ManifestSlot &s, const StoredTensor &t,
                       const std::string &path, uint8_t *state, int rank) const;

  /// Sets every parameter (and this rank's part of its master) from
  /// `tensors`, read from `path` (named in messages): F32, BF16, F16 or F64
  /// tensors of the parameters' shapes, under their Hugging Face names.
  Status loadParameters(const std::map<std::string, StoredTensor> &tensors,
                        const std::string &path, uint8_t *state,
                        int rank) const;

private:
  /// Writes the values that values(begin, count, out) puts in `out` for
  /// elements [begin, begin + count) into `param`'s working copy (rounded to
  /// its type) and, where this rank holds them, into its FP32 master; the
  /// chunks are filled and written by several threads at once.
  Status writeParameter(
      const ManifestSlot &param, uint8_t *state, int rank,
      const std::function<void(int64_t, int64_t, float *)> &values) const;

  /// Elements of slot `s`'s rankShape() from its tensor-parallel dimension
  /// on: a shard's runs of consecutive elements of the whole tensor.
  int64_t shardRun(const ManifestSlot &s) const;

  Manifest m_;
  int tpRank_ = 0;
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_IO_STATELAYOUT_H
