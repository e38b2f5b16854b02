//===- CheckpointIO.cpp - Checkpoint directories and training state -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "CheckpointIO.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace infir2::rt;
namespace fs = std::filesystem;

std::string infir2::rt::toJson(const TrainerState &s) {
  nlohmann::ordered_json j;
  j["step"] = s.step;
  j["updates"] = s.updates;
  j["data_position"] = s.dataPosition;
  j["rng"] = s.rng;
  return j.dump(2);
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

Status infir2::rt::publishCheckpoint(
    const std::string &saveDir, int64_t step,
    const std::function<Status(const std::string &)> &writeFiles,
    std::string &warning) {
  fs::path final = fs::path(saveDir) / checkpointName(step);
  fs::path tmp = final.string() + ".tmp", old = final.string() + ".old";
  std::error_code ec;
  fs::remove_all(tmp, ec); // the remains of an interrupted save
  if (ec || !fs::create_directory(tmp, ec))
    return fail("cannot create checkpoint directory %s: %s", tmp.c_str(),
                (ec ? ec : std::make_error_code(std::errc::file_exists))
                    .message()
                    .c_str());
  if (Status s = writeFiles(tmp.string()); !s) {
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
  return Status::ok();
}
