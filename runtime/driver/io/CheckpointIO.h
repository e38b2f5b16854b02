//===- CheckpointIO.h - Checkpoint directories and training state -*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A checkpoint is a directory DIR/step-NNNNNN holding model.safetensors (the
// working weights under their Hugging Face names), optimizer.safetensors
// (FP32 masters and moments) and trainer_state.json (step, updates, data
// position, RNG state). It is written as step-NNNNNN.tmp and renamed when
// complete, so a reader never sees half a checkpoint. Directories through
// std::filesystem, JSON through nlohmann-json.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_IO_CHECKPOINTIO_H
#define INFIR2_RUNTIME_DRIVER_IO_CHECKPOINTIO_H

#include "infir2/runtime/Expected.h"

#include "infir2/runtime/Checkpoint.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace infir2::rt {

/// The files of a checkpoint (besides its state file) by name, with the
/// length and CRC-32 each had when it was saved.
using FileDigests = std::map<std::string, FileDigest>;

/// The loop's position, saved with the weights for an exact resume, and
/// the digests of the checkpoint's other files.
struct TrainerState {
  int64_t step = 0, updates = 0, dataPosition = 0;
  std::string rng; ///< the std::mt19937_64 as its stream form
  FileDigests files;
};

constexpr const char *kTrainerStateFile = "trainer_state.json";

std::string toJson(const TrainerState &state);
/// Parses trainer_state.json's text; `path` names it in messages.
Expected<TrainerState> parseTrainerState(const std::string &text,
                                         const std::string &path);
Status writeTrainerState(const std::string &dir, const TrainerState &state);
Expected<TrainerState> readTrainerState(const std::string &dir);

/// Whether DIR's trainer_state.json is another program's (Hugging Face
/// Trainer's checkpoint-N folders have one): not a JSON object with this
/// trainer's 'rng' and 'files'. Such a folder loads as a model.
bool isForeignTrainerState(const std::string &dir);

/// Checks that every file `state` lists is in `dir` with its recorded length
/// and CRC-32 (a damaged or truncated checkpoint is refused by file name).
Status verifyCheckpointFiles(const std::string &dir, const TrainerState &state);

/// `path` itself if it holds a checkpoint, else its newest step-NNNNNN
/// subdirectory (temporary and replaced ones ignored).
Expected<std::string> findCheckpointDir(const std::string &path);

/// "step-000042".
std::string checkpointName(int64_t step);

/// Creates `dir` if needed and checks that files can be written in it.
Status prepareSaveDir(const std::string &dir);

/// Writes the files of a checkpoint into a directory (the argument) and
/// returns each one's digest as written.
using CheckpointWriter =
    std::function<Expected<FileDigests>(const std::string &)>;

/// Writes the checkpoint of `state.step` under `saveDir`: `writeFiles`
/// fills a fresh temporary directory; every file is read back and must
/// match the digest it was written with; the state file then records the
/// digests; files and directory are synced to disk; and the directory
/// replaces step-NNNNNN at once. A previous checkpoint of the same step is
/// removed after the swap; `warning` says so when that fails.
Status publishCheckpoint(const std::string &saveDir, TrainerState state,
                         const CheckpointWriter &writeFiles,
                         std::string &warning);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_IO_CHECKPOINTIO_H
