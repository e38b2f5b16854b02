//===- CheckpointIO.cpp - Checkpoint directories and training state -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "io/CheckpointIO.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace infir2::rt;
namespace fs = std::filesystem;

std::string infir2::rt::toJson(const TrainerState &s) {
  nlohmann::ordered_json j;
  j["step"] = s.step;
  j["updates"] = s.updates;
  j["data_position"] = s.dataPosition;
  j["rng"] = s.rng;
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  for (const auto &[name, d] : s.files) {
    char crc[9];
    std::snprintf(crc, sizeof crc, "%08x", unsigned(d.crc32));
    files[name] = {{"bytes", d.bytes}, {"crc32", crc}};
  }
  j["files"] = files;
  return j.dump(2);
}

/// A file name a checkpoint may list: plain, in the directory itself.
static bool isPlainFileName(const std::string &name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string::npos && name != kTrainerStateFile;
}

/// `text` as eight hex digits, or false.
static bool parseCrc(const std::string &text, uint32_t &crc) {
  if (text.size() != 8 ||
      text.find_first_not_of("0123456789abcdef") != std::string::npos)
    return false;
  crc = uint32_t(std::stoul(text, nullptr, 16));
  return true;
}

Expected<TrainerState> infir2::rt::parseTrainerState(const std::string &text,
                                                     const std::string &path) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return fail("%s: not a JSON object", path.c_str());
  TrainerState s;
  for (auto [key, to] : {std::pair<const char *, int64_t *>{"step", &s.step},
                         {"updates", &s.updates},
                         {"data_position", &s.dataPosition}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0)
      return fail("%s: '%s' is missing or not a non-negative integer",
                  path.c_str(), key);
    *to = it->get<int64_t>();
  }
  auto rng = j.find("rng");
  if (rng == j.end() || !rng->is_string())
    return fail("%s: 'rng' is missing or not a string", path.c_str());
  s.rng = rng->get<std::string>();
  auto files = j.find("files");
  if (files == j.end() || !files->is_object())
    return fail("%s: 'files' (the checkpoint's file digests) is missing or "
                "not an object",
                path.c_str());
  for (const auto &[name, d] : files->items()) {
    if (!isPlainFileName(name))
      return fail("%s: 'files' names '%s', not a file of the checkpoint",
                  path.c_str(), name.c_str());
    FileDigest digest;
    auto bytes = d.find("bytes");
    auto crc = d.find("crc32");
    if (!d.is_object() || bytes == d.end() || !bytes->is_number_unsigned() ||
        crc == d.end() || !crc->is_string() ||
        !parseCrc(crc->get<std::string>(), digest.crc32))
      return fail("%s: 'files' entry '%s' needs 'bytes' (a non-negative "
                  "integer) and 'crc32' (8 lowercase hex digits)",
                  path.c_str(), name.c_str());
    digest.bytes = bytes->get<uint64_t>();
    s.files[name] = digest;
  }
  // The generator's stream form, whole: a damaged one would otherwise leave
  // the generator as it was, and the resumed run would draw other numbers.
  std::mt19937_64 probe;
  std::istringstream in(s.rng);
  in >> probe;
  if (in.fail() || !(in >> std::ws).eof())
    return fail("%s: 'rng' is not the state of a std::mt19937_64",
                path.c_str());
  return s;
}

Status infir2::rt::writeTrainerState(const std::string &dir,
                                     const TrainerState &state) {
  std::string path = (fs::path(dir) / kTrainerStateFile).string();
  std::ofstream out(path);
  out << toJson(state) << "\n";
  out.close();
  if (!out)
    return fail("%s: cannot write: %s", path.c_str(), std::strerror(errno));
  return Status::ok();
}

Expected<TrainerState> infir2::rt::readTrainerState(const std::string &dir) {
  std::string path = (fs::path(dir) / kTrainerStateFile).string();
  std::ifstream in(path);
  if (!in)
    return fail("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  return parseTrainerState(text, path);
}

bool infir2::rt::isForeignTrainerState(const std::string &dir) {
  std::ifstream in(fs::path(dir) / kTrainerStateFile);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  // Ours, even damaged, is refused by parseTrainerState with the reason.
  return j.is_object() && !j.contains("rng") && !j.contains("files");
}

/// Whether the digest of `path` is `expected`; the difference otherwise.
static Status checkDigest(const fs::path &path, const FileDigest &expected,
                          const char *recordedBy) {
  FileDigest actual;
  std::string error;
  if (!digestFile(path.string(), actual, error))
    return Failure{error};
  if (actual.bytes != expected.bytes)
    return fail("%s: %llu bytes, but %s recorded %llu (truncated or "
                "damaged)",
                path.c_str(), (unsigned long long)actual.bytes, recordedBy,
                (unsigned long long)expected.bytes);
  if (actual.crc32 != expected.crc32)
    return fail("%s: CRC-32 %08x, but %s recorded %08x (the file is "
                "damaged)",
                path.c_str(), unsigned(actual.crc32), recordedBy,
                unsigned(expected.crc32));
  return Status::ok();
}

Status infir2::rt::verifyCheckpointFiles(const std::string &dir,
                                         const TrainerState &state) {
  for (const auto &[name, digest] : state.files)
    INFIR2_RETURN_IF_ERROR(
        checkDigest(fs::path(dir) / name, digest, kTrainerStateFile));
  return Status::ok();
}

/// Flushes `path` (a file or a directory) to the disk.
static Status syncToDisk(const fs::path &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("%s: cannot open to sync: %s", path.c_str(),
                std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some file systems cannot sync a directory; the files themselves are.
  if (rc != 0 && !(fs::is_directory(path) && err == EINVAL))
    return fail("%s: cannot sync to disk: %s", path.c_str(),
                std::strerror(err));
  return Status::ok();
}

Expected<std::string> infir2::rt::findCheckpointDir(const std::string &path) {
  std::error_code ec;
  if (fs::exists(fs::path(path) / kTrainerStateFile, ec))
    return path;
  std::string best;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string n = it->path().filename().string();
    if (n.rfind("step-", 0) == 0 && n.find('.') == std::string::npos &&
        it->is_directory(ec) && n > best)
      best = n;
  }
  if (best.empty())
    return fail("%s: no checkpoint (no %s, no step-* directory)", path.c_str(),
                kTrainerStateFile);
  return (fs::path(path) / best).string();
}

std::string infir2::rt::checkpointName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%06lld", (long long)step);
  return name;
}

Status infir2::rt::prepareSaveDir(const std::string &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec); // a failure shows in the probe below
  fs::path probe = fs::path(dir) / ".write-test";
  std::FILE *f = std::fopen(probe.c_str(), "w");
  if (!f)
    return fail("cannot write checkpoints to %s: %s", dir.c_str(),
                std::strerror(errno));
  std::fclose(f);
  fs::remove(probe, ec);
  return Status::ok();
}

/// Reads back what `writeFiles` wrote, checks it against the digests it
/// reported, records them in the state file, and syncs it all.
static Status completeCheckpoint(const fs::path &tmp, TrainerState &state,
                                 const CheckpointWriter &writeFiles) {
  Expected<FileDigests> written = writeFiles(tmp.string());
  if (!written)
    return written.failure();
  for (const auto &[name, digest] : *written) {
    if (!isPlainFileName(name))
      return fail("checkpoint file '%s' is not a plain file name",
                  name.c_str());
    INFIR2_RETURN_IF_ERROR(
        checkDigest(tmp / name, digest, "the checkpoint writer"));
    INFIR2_RETURN_IF_ERROR(syncToDisk(tmp / name));
  }
  state.files = std::move(*written);
  INFIR2_RETURN_IF_ERROR(writeTrainerState(tmp.string(), state));
  INFIR2_RETURN_IF_ERROR(syncToDisk(tmp / kTrainerStateFile));
  return syncToDisk(tmp);
}

Status infir2::rt::publishCheckpoint(const std::string &saveDir,
                                     TrainerState state,
                                     const CheckpointWriter &writeFiles,
                                     std::string &warning) {
  fs::path final = fs::path(saveDir) / checkpointName(state.step);
  fs::path tmp = final.string() + ".tmp", old = final.string() + ".old";
  std::error_code ec;
  fs::remove_all(tmp, ec); // the remains of an interrupted save
  if (ec || !fs::create_directory(tmp, ec))
    return fail("cannot create checkpoint directory %s: %s", tmp.c_str(),
                (ec ? ec : std::make_error_code(std::errc::file_exists))
                    .message()
                    .c_str());
  if (Status s = completeCheckpoint(tmp, state, writeFiles); !s) {
    fs::remove_all(tmp, ec);
    return s;
  }
  // A previous save of this step moves aside, so that the rename below
  // replaces it at once; it is removed afterwards.
  bool hadOld = false;
  if (fs::exists(final, ec)) {
    fs::remove_all(old, ec);
    fs::rename(final, old, ec);
    hadOld = !ec;
  }
  fs::rename(tmp, final, ec);
  if (ec)
    return fail("cannot move checkpoint into %s: %s", final.c_str(),
                ec.message().c_str());
  if (hadOld && (fs::remove_all(old, ec), ec))
    warning = "could not remove " + old.string();
  // The rename itself is durable once the parent directory is.
  return syncToDisk(saveDir);
}
