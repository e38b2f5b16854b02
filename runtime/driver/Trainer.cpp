//===- Trainer.cpp - The driver of a compiled InfiR2 trainer --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// main() of every trainer infir2-compile links. It reads the compiled
// model's manifest (the layout of the state region), owns the state and the
// scratch arena, feeds batches, runs infir2_train_step K times per step
// (gradient accumulation) and infir2_optimizer_step once, and logs, evaluates
// and checkpoints. Errors are one line naming the file, tensor or step, and
// exit code 1.
//
//===----------------------------------------------------------------------===//

#include "Communicator.h"
#include "Device.h"

#include "infir2/runtime/Checkpoint.h"

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/Float.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace infir2::rt;

namespace {

/// This process's rank in a data-parallel run, or -1 when alone; messages
/// name it.
int gRank = -1;

[[noreturn]] void die(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  if (gRank >= 0)
    std::fprintf(stderr, "trainer (rank %d): error: ", gRank);
  else
    std::fprintf(stderr, "trainer: error: ");
  std::vfprintf(stderr, fmt, args);
  std::fprintf(stderr, "\n");
  va_end(args);
  std::exit(1);
}

//===----------------------------------------------------------------------===//
// The manifest
//===----------------------------------------------------------------------===//

struct Slot {
  std::string kind, name, dtype;
  int64_t offset = 0, numel = 1;
  std::vector<int64_t> shape;
  std::string init;
  double std = 0;
  int64_t elementSize() const {
    return dtype == "f32" || dtype == "i32" ? 4 : dtype == "bf16" ? 2 : 8;
  }
};

struct Model {
  int64_t stateBytes = 0, scratchBytes = 0, batch = 0, seq = 0, vocab = 0;
  int64_t zero1 = 0; ///< ranks the optimizer state is sharded over, or 0
  std::vector<Slot> slots;

  const Slot *find(const std::string &kind, const std::string &name) const {
    for (const Slot &s : slots)
      if (s.kind == kind && s.name == name)
        return &s;
    return nullptr;
  }
  const Slot &get(const std::string &kind, const std::string &name) const {
    if (const Slot *s = find(kind, name))
      return *s;
    die("the compiled model has no %s '%s'", kind.c_str(), name.c_str());
  }
};

Model readManifest() {
  Model m;
  std::istringstream in(infir2_model_manifest);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "state_bytes")
      ls >> m.stateBytes;
    else if (key == "scratch_bytes")
      ls >> m.scratchBytes;
    else if (key == "batch")
      ls >> m.batch;
    else if (key == "seq")
      ls >> m.seq;
    else if (key == "vocab")
      ls >> m.vocab;
    else if (key == "zero1")
      ls >> m.zero1;
    else if (key == "slot") {
      Slot s;
      int64_t rank = 0;
      ls >> s.kind >> s.name >> s.dtype >> s.offset >> rank;
      s.shape.resize(rank);
      for (int64_t &d : s.shape) {
        ls >> d;
        s.numel *= d;
      }
      ls >> s.init >> s.std;
      m.slots.push_back(std::move(s));
    }
  }
  return m;
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

struct Options {
  std::string data, dataFormat = "auto", evalData, save, load, logJsonl,
                    schedule = "cosine", dumpStep, device = "auto";
  int64_t steps = 100, warmup = 0, decay = 0, microBatch = 0, gradAccum = 1,
          seed = 0, saveEvery = 0, evalEvery = 0, evalBatches = 8,
          logEvery = 10, maxSkipped = 10;
  double lr = 1e-3, minLrRatio = 0.1;
};

const char *kUsage =
    "usage: trainer --data FILE [options]\n"
    "  --data FILE            training data: text (byte-level tokens), or raw\n"
    "                         uint16/uint32 token ids\n"
    "  --data-format F        auto (by extension: .u16/.bin, .u32, else "
    "text),\n"
    "                         text, u16 or u32\n"
    "  --steps N              optimizer steps (default 100)\n"
    "  --lr X                 peak learning rate (default 1e-3)\n"
    "  --schedule S           wsd, cosine (default) or constant\n"
    "  --warmup N             linear warmup steps\n"
    "  --decay N              wsd: steps of the final linear decay\n"
    "  --min-lr-ratio X       final lr / peak lr for cosine and wsd (0.1)\n"
    "  --micro-batch B        must equal the compiled batch (default: it)\n"
    "  --grad-accum K         micro-batches per optimizer step (default 1)\n"
    "  --seed S               initialization seed (default 0)\n"
    "  --save DIR             checkpoint directory (DIR/step-NNNNNN)\n"
    "  --save-every N         also checkpoint every N steps (always at the "
    "end)\n"
    "  --load PATH            resume from a checkpoint directory, or load\n"
    "                         weights from a Hugging Face .safetensors file\n"
    "  --eval-data FILE       held-out data (same formats)\n"
    "  --eval-every N         evaluate every N steps (and at the end)\n"
    "  --eval-batches N       held-out batches per evaluation (default 8)\n"
    "  --log-every N          progress line every N steps (default 10)\n"
    "  --log-jsonl FILE       one JSON object per logged step\n"
    "  --device D             auto (default: the GPU when one is usable, else\n"
    "                         the CPU, saying so), cuda or cpu\n"
    "  --dump-step FILE       write the first step's weights, batch, loss and\n"
    "                         gradients (as F32) to a safetensors file, then "
    "exit\n";

int64_t parseInt(const char *flag, const char *v) {
  char *end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (!*v || *end || x < 0)
    die("%s expects a non-negative integer, got '%s'", flag, v);
  return x;
}

double parseDouble(const char *flag, const char *v) {
  char *end = nullptr;
  double x = std::strtod(v, &end);
  if (!*v || *end || !std::isfinite(x) || x < 0)
    die("%s expects a non-negative number, got '%s'", flag, v);
  return x;
}

Options parseOptions(int argc, char **argv) {
  Options o;
  // "--flag value" and "--flag=value" alike.
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      args.push_back(a.substr(0, eq));
      args.push_back(a.substr(eq + 1));
    } else {
      args.push_back(a);
    }
  }
  std::vector<const char *> argvs = {argv[0]};
  for (const std::string &a : args)
    argvs.push_back(a.c_str());
  argc = int(argvs.size());
  argv = const_cast<char **>(argvs.data());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc)
      die("%s expects a value (see --help)", a.c_str());
    const char *v = argv[++i];
    if (a == "--data")
      o.data = v;
    else if (a == "--data-format")
      o.dataFormat = v;
    else if (a == "--eval-data")
      o.evalData = v;
    else if (a == "--save")
      o.save = v;
    else if (a == "--load")
      o.load = v;
    else if (a == "--log-jsonl")
      o.logJsonl = v;
    else if (a == "--schedule")
      o.schedule = v;
    else if (a == "--dump-step")
      o.dumpStep = v;
    else if (a == "--device")
      o.device = v;
    else if (a == "--steps")
      o.steps = parseInt(argv[i - 1], v);
    else if (a == "--warmup")
      o.warmup = parseInt(argv[i - 1], v);
    else if (a == "--decay")
      o.decay = parseInt(argv[i - 1], v);
    else if (a == "--micro-batch")
      o.microBatch = parseInt(argv[i - 1], v);
    else if (a == "--grad-accum")
      o.gradAccum = parseInt(argv[i - 1], v);
    else if (a == "--seed")
      o.seed = parseInt(argv[i - 1], v);
    else if (a == "--save-every")
      o.saveEvery = parseInt(argv[i - 1], v);
    else if (a == "--eval-every")
      o.evalEvery = parseInt(argv[i - 1], v);
    else if (a == "--eval-batches")
      o.evalBatches = parseInt(argv[i - 1], v);
    else if (a == "--log-every")
      o.logEvery = parseInt(argv[i - 1], v);
    else if (a == "--lr")
      o.lr = parseDouble(argv[i - 1], v);
    else if (a == "--min-lr-ratio")
      o.minLrRatio = parseDouble(argv[i - 1], v);
    else
      die("unknown option '%s' (see --help)", a.c_str());
  }
  if (o.data.empty() && o.dumpStep.empty())
    die("--data FILE is required (see --help)");
  if (o.schedule != "wsd" && o.schedule != "cosine" && o.schedule != "constant")
    die("--schedule must be wsd, cosine or constant, got '%s'",
        o.schedule.c_str());
  if (o.gradAccum == 0)
    die("--grad-accum must be at least 1");
  if (o.logEvery == 0)
    o.logEvery = 1;
  return o;
}

double learningRate(const Options &o, int64_t step) {
  double peak = o.lr, floor = o.lr * o.minLrRatio;
  if (step <= o.warmup)
    return peak * double(step) / double(std::max<int64_t>(o.warmup, 1));
  if (o.schedule == "constant")
    return peak;
  if (o.schedule == "cosine") {
    double t = double(step - o.warmup) /
               double(std::max<int64_t>(o.steps - o.warmup, 1));
    return floor + 0.5 * (peak - floor) * (1.0 + std::cos(M_PI * t));
  }
  int64_t decayStart = o.steps - o.decay; // wsd
  if (step <= decayStart)
    return peak;
  double t = double(step - decayStart) / double(std::max<int64_t>(o.decay, 1));
  return peak + (floor - peak) * t;
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

std::vector<uint32_t> readTokens(const std::string &path, std::string format,
                                 int64_t vocab, int64_t minTokens) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    die("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (format == "auto") {
    auto endsWith = [&](const char *s) {
      size_t n = std::strlen(s);
      return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
    };
    format = endsWith(".u16") || endsWith(".bin") ? "u16"
             : endsWith(".u32")                   ? "u32"
                                                  : "text";
  }
  std::vector<uint32_t> tokens;
  if (format == "text") {
    tokens.assign(bytes.begin(), bytes.end());
    for (uint32_t &t : tokens)
      t &= 0xff;
  } else if (format == "u16" || format == "u32") {
    size_t width = format == "u16" ? 2 : 4;
    if (bytes.size() % width)
      die("%s: truncated: %zu bytes is not a whole number of %s tokens",
          path.c_str(), bytes.size(), format.c_str());
    tokens.resize(bytes.size() / width);
    for (size_t i = 0; i < tokens.size(); ++i) {
      uint32_t v = 0;
      std::memcpy(&v, bytes.data() + i * width, width);
      tokens[i] = v;
    }
  } else {
    die("--data-format must be auto, text, u16 or u32, got '%s'",
        format.c_str());
  }
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= uint64_t(vocab))
      die("%s: token %u at position %zu is not below the vocabulary size "
          "%lld",
          path.c_str(), tokens[i], i, (long long)vocab);
  if (int64_t(tokens.size()) < minTokens)
    die("%s: %zu tokens, fewer than one sequence needs (%lld)", path.c_str(),
        tokens.size(), (long long)minTokens);
  return tokens;
}

//===----------------------------------------------------------------------===//
// The trainer
//===----------------------------------------------------------------------===//

class Trainer {
public:
  Trainer(Model model, Options options, Communicator &comm)
      : m(std::move(model)), o(std::move(options)), comm(comm), rng(o.seed) {
    std::string notice, error;
    if (!device.open(o.device, localRank(), m.stateBytes, m.scratchBytes,
                     notice, error))
      die("%s", error.c_str());
    if (!notice.empty())
      std::fprintf(stderr, "trainer%s: %s\n",
                   comm.size() > 1
                       ? (" (rank " + std::to_string(comm.rank()) + ")").c_str()
                       : "",
                   notice.c_str());
    device.attach(ctx);
    if (device.onGpu() && comm.size() > 1) {
      std::string why;
      comm.useDeviceCollectives(why);
      if (!why.empty() && comm.rank() == 0)
        std::fprintf(stderr, "trainer: %s\n", why.c_str());
    }
    comm.attach(ctx);
  }

  int run();

private:
  /// A slot in the host copy of the state.
  template <typename T> T *at(const Slot &s) {
    return reinterpret_cast<T *>(device.state() + s.offset);
  }
  int64_t bytesOf(const Slot &s) const { return s.numel * s.elementSize(); }
  /// Moves slots between the host copy and the device (nothing on a CPU).
  void upload(const Slot &s) { check(device.upload(s.offset, bytesOf(s), e)); }
  void download(const Slot &s) {
    check(device.download(s.offset, bytesOf(s), e));
  }
  void uploadState() { check(device.upload(0, m.stateBytes, e)); }
  void downloadState() { check(device.download(0, m.stateBytes, e)); }
  void zeroGradients() {
    for (const Slot &s : m.slots)
      if (s.kind == "grad")
        check(device.zero(s.offset, bytesOf(s), e));
  }
  void check(bool ok) {
    if (!ok)
      die("%s: %s", device.name().c_str(), e.c_str());
  }
  float scalar(const char *kind, const char *name) {
    const Slot &s = m.get(kind, name);
    download(s);
    return *at<float>(s);
  }
  void setScalar(const char *name, float v) {
    const Slot &s = m.get("input", name);
    *at<float>(s) = v;
    upload(s);
  }

  /// A state slot as a whole tensor: its shape, and the elements of it this
  /// rank holds (from `begin`, `count` of them). ZeRO-1 shards the masters
  /// and moments by rows; everything else is whole on every rank.
  struct Extent {
    std::vector<int64_t> shape;
    int64_t begin = 0, count = 0;
    bool contains(int64_t i) const { return i >= begin && i < begin + count; }
  };
  Extent extentOf(const Slot &s) const;
  /// The whole FP32 tensor of a master or moment slot (gathered from every
  /// rank under ZeRO-1; every rank must call it, in the same order).
  std::vector<float> wholeState(const Slot &s);

  void initialize();
  /// Sets element i of a parameter's working copy (BF16 or FP32).
  void setParam(const Slot &s, int64_t i, float v) {
    if (s.dtype == "bf16")
      at<uint16_t>(s)[i] = floatToBF16(v);
    else
      at<float>(s)[i] = v;
  }
  void loadCheckpoint(const std::string &path);
  void loadWeights(const std::string &path);
  void saveCheckpoint(int64_t step);
  void fillBatch(const std::vector<uint32_t> &tokens, int64_t &position,
                 bool shard);
  void call(int32_t (*fn)(infir2rt_context *), const char *what, int64_t step);
  double evaluate();
  void dumpStep();
  bool gradientsFinite();

  Model m;
  Options o;
  Communicator &comm;
  std::mt19937_64 rng;
  Device device;
  std::string e; ///< the last device error
  infir2rt_context ctx{};
  std::vector<uint32_t> train, held;
  int64_t dataPosition = 0, step = 0, updates = 0;
};

Trainer::Extent Trainer::extentOf(const Slot &s) const {
  if (!m.zero1 ||
      (s.kind != "master" && s.kind != "moment1" && s.kind != "moment2"))
    return {s.shape, 0, s.numel};
  const Slot &whole = m.get("param", s.name);
  int64_t rows = s.shape[0], rowElems = s.numel / rows;
  int64_t first = comm.rank() * rows;
  int64_t mine =
      std::max<int64_t>(0, std::min(whole.shape[0], first + rows) - first);
  return {whole.shape, first * rowElems, mine * rowElems};
}

std::vector<float> Trainer::wholeState(const Slot &s) {
  Extent e = extentOf(s);
  int64_t numel = 1;
  for (int64_t d : e.shape)
    numel *= d;
  if (!m.zero1)
    return std::vector<float>(at<float>(s), at<float>(s) + numel);
  // Rank r's shard is rows [r·rows, (r+1)·rows) of the whole: the shards
  // in rank order are the whole tensor, then padding.
  std::vector<float> all(size_t(s.numel) * comm.size());
  std::string error;
  if (!comm.allGather(at<float>(s), all.data(), s.numel * 4, error))
    die("gathering %s '%s' for the checkpoint: %s", s.kind.c_str(),
        s.name.c_str(), error.c_str());
  all.resize(numel);
  return all;
}

void Trainer::initialize() {
  std::normal_distribution<double> normal(0.0, 1.0);
  for (const Slot &s : m.slots) {
    if (s.kind != "param")
      continue;
    const Slot &master = m.get("master", s.name);
    Extent e = extentOf(master);
    float *mw = at<float>(master) - e.begin;
    // Every rank draws every value, so that all hold the same weights.
    for (int64_t i = 0; i < s.numel; ++i) {
      float v = s.init == "ones"     ? 1.0f
                : s.init == "normal" ? float(s.std * normal(rng))
                                     : 0.0f;
      if (e.contains(i))
        mw[i] = v;
      setParam(s, i, v);
    }
  }
}

void Trainer::loadWeights(const std::string &path) {
  std::map<std::string, StoredTensor> tensors;
  std::string error;
  if (!readSafetensors(path, tensors, error))
    die("%s", error.c_str());
  for (const Slot &s : m.slots) {
    if (s.kind != "param")
      continue;
    auto it = tensors.find(s.name);
    if (it == tensors.end())
      die("%s: tensor '%s' is missing", path.c_str(), s.name.c_str());
    const StoredTensor &t = it->second;
    if (t.shape != s.shape) {
      std::string want, got;
      for (int64_t d : s.shape)
        want += (want.empty() ? "" : "x") + std::to_string(d);
      for (int64_t d : t.shape)
        got += (got.empty() ? "" : "x") + std::to_string(d);
      die("%s: tensor '%s' has shape [%s], the model expects [%s]",
          path.c_str(), s.name.c_str(), got.c_str(), want.c_str());
    }
    if (t.dtype != "F32" && t.dtype != "BF16" && t.dtype != "F16" &&
        t.dtype != "F64")
      die("%s: tensor '%s' has dtype %s (expected F32, BF16, F16 or F64)",
          path.c_str(), s.name.c_str(), t.dtype.c_str());
    const Slot &master = m.get("master", s.name);
    Extent e = extentOf(master);
    float *mw = at<float>(master) - e.begin;
    for (int64_t i = 0; i < s.numel; ++i) {
      float v = storedFloat(t, i);
      if (e.contains(i))
        mw[i] = v;
      setParam(s, i, v);
    }
  }
}

/// The newest step-NNNNNN directory in `dir`, or `dir` itself.
std::string checkpointDir(const std::string &dir) {
  struct stat st;
  if (stat((dir + "/trainer_state.txt").c_str(), &st) == 0)
    return dir;
  std::string best;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("step-", 0) == 0 && n.find('.') == std::string::npos &&
          n > best)
        best = n;
    }
    closedir(d);
  }
  if (best.empty())
    die("%s: no checkpoint (no trainer_state.txt, no step-* directory)",
        dir.c_str());
  return dir + "/" + best;
}

void Trainer::loadCheckpoint(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    die("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) {
    loadWeights(path); // a Hugging Face safetensors file
    return;
  }
  std::string dir = checkpointDir(path);
  loadWeights(dir + "/model.safetensors");
  // Exact resume: FP32 masters and moments replace the BF16-derived ones.
  std::map<std::string, StoredTensor> opt;
  std::string error;
  std::string optPath = dir + "/optimizer.safetensors";
  if (!readSafetensors(optPath, opt, error))
    die("%s", error.c_str());
  for (const Slot &s : m.slots) {
    const char *prefix = s.kind == "master"    ? "master."
                         : s.kind == "moment1" ? "exp_avg."
                         : s.kind == "moment2" ? "exp_avg_sq."
                                               : nullptr;
    if (!prefix)
      continue;
    auto it = opt.find(prefix + s.name);
    if (it == opt.end())
      die("%s: tensor '%s%s' is missing", optPath.c_str(), prefix,
          s.name.c_str());
    Extent e = extentOf(s);
    if (it->second.dtype != "F32" || it->second.shape != e.shape)
      die("%s: tensor '%s%s' is not F32 of the model's shape", optPath.c_str(),
          prefix, s.name.c_str());
    // This rank's rows under ZeRO-1 (the padding stays zero), else all.
    std::memset(at<float>(s), 0, s.numel * 4);
    std::memcpy(at<float>(s), it->second.bytes.data() + e.begin * 4,
                e.count * 4);
  }
  std::ifstream in(dir + "/trainer_state.txt");
  std::string key, rngState;
  while (in >> key) {
    if (key == "step")
      in >> step;
    else if (key == "updates")
      in >> updates;
    else if (key == "data_position")
      in >> dataPosition;
    else if (key == "rng") {
      std::getline(in, rngState);
      std::istringstream(rngState) >> rng;
    }
  }
  if (comm.rank() == 0)
    std::printf("resumed from %s at step %lld\n", dir.c_str(), (long long)step);
}

void Trainer::saveCheckpoint(int64_t at_) {
  // Whole tensors, so that any world size can load them: under ZeRO-1 every
  // rank takes part in gathering the optimizer state; rank 0 writes.
  downloadState();
  std::map<const Slot *, std::vector<float>> gathered;
  for (const Slot &s : m.slots)
    if (s.kind == "master" || s.kind == "moment1" || s.kind == "moment2")
      gathered[&s] = wholeState(s);
  if (comm.rank() != 0)
    return;
  char name[32];
  std::snprintf(name, sizeof name, "step-%06lld", (long long)at_);
  std::string final = o.save + "/" + name, tmp = final + ".tmp";
  std::string rm = "rm -rf '" + tmp + "'";
  if (std::system(rm.c_str()) != 0 || mkdir(tmp.c_str(), 0755) != 0)
    die("cannot create checkpoint directory %s: %s", tmp.c_str(),
        std::strerror(errno));
  std::vector<StoredTensor> store;
  store.reserve(m.slots.size());
  std::vector<std::pair<std::string, const StoredTensor *>> model, opt;
  for (const Slot &s : m.slots) {
    const char *prefix = s.kind == "param"     ? ""
                         : s.kind == "master"  ? "master."
                         : s.kind == "moment1" ? "exp_avg."
                         : s.kind == "moment2" ? "exp_avg_sq."
                                               : nullptr;
    if (!prefix)
      continue;
    StoredTensor t;
    bool bf16 = s.dtype == "bf16";
    t.dtype = bf16 ? "BF16" : "F32";
    t.shape = extentOf(s).shape;
    if (auto it = gathered.find(&s); it != gathered.end()) {
      const uint8_t *p = reinterpret_cast<const uint8_t *>(it->second.data());
      t.bytes.assign(p, p + it->second.size() * 4);
    } else {
      const uint8_t *p = device.state() + s.offset;
      t.bytes.assign(p, p + s.numel * (bf16 ? 2 : 4));
    }
    store.push_back(std::move(t));
    (s.kind == "param" ? model : opt)
        .push_back({prefix + s.name, &store.back()});
  }
  std::string error;
  if (!writeSafetensors(tmp + "/model.safetensors", model, error) ||
      !writeSafetensors(tmp + "/optimizer.safetensors", opt, error))
    die("checkpoint at step %lld: %s", (long long)at_, error.c_str());
  {
    std::ofstream st(tmp + "/trainer_state.txt");
    st << "step " << at_ << "\nupdates " << updates << "\ndata_position "
       << dataPosition << "\nrng " << rng << "\n";
    if (!st)
      die("checkpoint at step %lld: cannot write trainer_state.txt",
          (long long)at_);
  }
  std::string old = final + ".old";
  rename(final.c_str(), old.c_str()); // a previous save at this step
  if (rename(tmp.c_str(), final.c_str()) != 0)
    die("cannot move checkpoint into %s: %s", final.c_str(),
        std::strerror(errno));
  std::string rmOld = "rm -rf '" + old + "'";
  if (std::system(rmOld.c_str()) != 0)
    std::fprintf(stderr, "trainer: warning: could not remove %s\n",
                 old.c_str());
}

/// The next micro-batch of sequences from `tokens` at `position` (the
/// global data position). Sharded, the group reads size·B consecutive
/// sequences and this rank takes its B, so that R ranks of micro-batch B
/// see exactly what one process of micro-batch R·B would.
void Trainer::fillBatch(const std::vector<uint32_t> &tokens, int64_t &position,
                        bool shard) {
  const Slot &ids = m.get("input", "input_ids");
  const Slot &targets = m.get("input", "targets");
  int32_t *id = at<int32_t>(ids), *tg = at<int32_t>(targets);
  int64_t n = tokens.size();
  int64_t ranks = shard ? comm.size() : 1, mine = shard ? comm.rank() : 0;
  for (int64_t g = 0; g < ranks * m.batch; ++g) {
    if (position + m.seq + 1 > n)
      position = 0;
    int64_t b = g - mine * m.batch;
    if (b >= 0 && b < m.batch)
      for (int64_t t = 0; t < m.seq; ++t) {
        id[b * m.seq + t] = int32_t(tokens[position + t]);
        tg[b * m.seq + t] = int32_t(tokens[position + t + 1]);
      }
    position += m.seq;
  }
  if (const Slot *mask = m.find("input", "loss_mask"))
    std::fill(at<float>(*mask), at<float>(*mask) + mask->numel, 1.0f);
  if (const Slot *pos = m.find("input", "positions"))
    for (int64_t i = 0; i < pos->numel; ++i)
      at<int32_t>(*pos)[i] = int32_t(i % m.seq);
  for (const char *role : {"input_ids", "targets", "loss_mask", "positions"})
    if (const Slot *s = m.find("input", role))
      upload(*s);
}

void Trainer::call(int32_t (*fn)(infir2rt_context *), const char *what,
                   int64_t at_) {
  if (fn(&ctx) != 0)
    die("step %lld, %s: %s", (long long)at_, what,
        infir2::rt::callError(ctx).c_str());
  if (!device.finish(e))
    die("step %lld, %s, on %s: %s", (long long)at_, what, device.name().c_str(),
        e.c_str());
}

double Trainer::evaluate() {
  int64_t position = 0;
  int64_t batches = std::max<int64_t>(
      1, std::min<int64_t>(o.evalBatches,
                           int64_t(held.size() - 1) / (m.batch * m.seq)));
  double total = 0.0;
  for (int64_t i = 0; i < batches; ++i) {
    fillBatch(held, position, /*shard=*/false);
    call(infir2_eval_step, "evaluation", step);
    total += scalar("output", "eval_loss");
  }
  return total / double(batches);
}

bool Trainer::gradientsFinite() {
  for (const Slot &s : m.slots)
    if (s.kind == "grad") {
      int64_t bad = 0;
      check(device.countNonFinite(s.offset, s.numel, bad, e));
      if (bad)
        return false;
    }
  return true;
}

/// The first step, for checks against the reference interpreter and
/// PyTorch: every parameter (its BF16 working value, as F32) under its name,
/// zero gradient accumulators as grad.<name> (the step's inputs), the batch
/// as input.<role>, the loss as output.loss, and each computed gradient as
/// gradient.<name>.
void Trainer::dumpStep() {
  downloadState();
  std::vector<StoredTensor> store;
  store.reserve(2 * m.slots.size());
  std::vector<std::pair<std::string, const StoredTensor *>> out;
  auto add = [&](const std::string &name, const Slot &s, bool zero) {
    StoredTensor t;
    t.dtype = "F32";
    t.shape = s.shape;
    t.bytes.assign(s.numel * 4, 0);
    float *f = reinterpret_cast<float *>(t.bytes.data());
    const uint8_t *p = device.state() + s.offset;
    for (int64_t i = 0; i < s.numel && !zero; ++i)
      f[i] = s.dtype == "bf16"
                 ? bf16ToFloat(reinterpret_cast<const uint16_t *>(p)[i])
             : s.dtype == "i32" ? float(reinterpret_cast<const int32_t *>(p)[i])
                                : reinterpret_cast<const float *>(p)[i];
    store.push_back(std::move(t));
    out.push_back({name, &store.back()});
  };
  for (const Slot &s : m.slots) {
    if (s.kind == "param")
      add(s.name, s, false);
    else if (s.kind == "grad") {
      add("grad." + s.name, s, true);
      add("gradient." + s.name, s, false);
    } else if (s.kind == "input" && s.name != "learning_rate" &&
               s.name != "step" && s.name != "grad_scale")
      add("input." + s.name, s, false);
    else if (s.kind == "output" && s.name == "loss")
      add("output.loss", s, false);
  }
  std::string error;
  if (!writeSafetensors(o.dumpStep, out, error))
    die("%s", error.c_str());
  std::printf("dumped the first step to %s (loss %.6f)\n", o.dumpStep.c_str(),
              double(scalar("output", "loss")));
}

int Trainer::run() {
  if (o.microBatch && o.microBatch != m.batch)
    die("--micro-batch %lld, but the model was compiled for micro-batch "
        "%lld (recompile with infir2-import --micro-batch)",
        (long long)o.microBatch, (long long)m.batch);
  if (m.zero1 && m.zero1 != comm.size())
    die("this trainer shards its optimizer state over %lld ranks (ZeRO-1, "
        "compiled with world-size=%lld) but was started as %d; run it with "
        "mpirun -np %lld, or recompile for %d",
        (long long)m.zero1, (long long)m.zero1, comm.size(), (long long)m.zero1,
        comm.size());
  int64_t need = m.seq + 1;
  if (!o.data.empty())
    train = readTokens(o.data, o.dataFormat, m.vocab, need);
  if (!o.evalData.empty())
    held = readTokens(o.evalData, o.dataFormat, m.vocab, need);
  if (!o.save.empty() && comm.rank() == 0) {
    mkdir(o.save.c_str(), 0755);
    std::string probe = o.save + "/.write-test";
    std::FILE *f = std::fopen(probe.c_str(), "w");
    if (!f)
      die("cannot write checkpoints to %s: %s", o.save.c_str(),
          std::strerror(errno));
    std::fclose(f);
    std::remove(probe.c_str());
  }
  initialize();
  if (!o.load.empty())
    loadCheckpoint(o.load);
  uploadState();

  std::FILE *jsonl = nullptr;
  if (!o.logJsonl.empty() && comm.rank() == 0 &&
      !(jsonl = std::fopen(o.logJsonl.c_str(), step ? "a" : "w")))
    die("%s: cannot write: %s", o.logJsonl.c_str(), std::strerror(errno));

  if (!o.dumpStep.empty()) {
    if (comm.size() > 1)
      die("--dump-step runs one process, not %d ranks", comm.size());
    zeroGradients();
    if (train.empty())
      die("--dump-step needs --data");
    fillBatch(train, dataPosition, /*shard=*/false);
    call(infir2_train_step, "training step", 1);
    dumpStep();
    return 0;
  }

  bool lead = comm.rank() == 0;
  int64_t tokensPerStep = m.batch * m.seq * o.gradAccum * comm.size();
  if (lead)
    std::printf("training: %lld steps of %lld tokens (micro-batch %lld x %lld, "
                "%lld accumulated, %d rank%s), %.1f MiB state, %.1f MiB "
                "scratch, on %s\n",
                (long long)o.steps, (long long)tokensPerStep,
                (long long)m.batch, (long long)m.seq, (long long)o.gradAccum,
                comm.size(), comm.size() > 1 ? "s" : "",
                m.stateBytes / 1048576.0, m.scratchBytes / 1048576.0,
                device.name().c_str());
  auto start = std::chrono::steady_clock::now();
  auto lastLog = start;
  int64_t tokensSinceLog = 0, skippedInARow = 0, startStep = step;
  double lossSinceLog = 0.0;
  int64_t stepsSinceLog = 0;
  // For the data-parallel failure test only: this rank dies at that step.
  const char *killRank = std::getenv("INFIR2_TEST_KILL_RANK");
  const char *killStep = std::getenv("INFIR2_TEST_KILL_STEP");
  while (step < o.steps) {
    ++step;
    if (killRank && killStep && std::atoi(killRank) == comm.rank() &&
        std::atoll(killStep) == step)
      std::raise(SIGKILL);
    zeroGradients();
    double loss = 0.0;
    for (int64_t k = 0; k < o.gradAccum; ++k) {
      fillBatch(train, dataPosition, /*shard=*/true);
      call(infir2_train_step, "training step", step);
      loss += scalar("output", "loss");
    }
    // The group's mean loss; every rank takes the same skip decision, or
    // the ranks that skip would leave the others waiting in the all-reduce.
    loss = comm.sum(loss) / double(o.gradAccum * comm.size());
    bool bad =
        comm.max(std::isfinite(loss) && gradientsFinite() ? 0.0 : 1.0) != 0.0;
    tokensSinceLog += tokensPerStep;
    if (bad) {
      if (comm.rank() == 0)
        std::fprintf(stderr,
                     "trainer: step %lld: non-finite %s; step skipped, weights "
                     "untouched\n",
                     (long long)step,
                     std::isfinite(loss) ? "gradient" : "loss");
      if (++skippedInARow >= o.maxSkipped)
        die("%lld steps in a row had non-finite losses or gradients "
            "(last: step %lld); stopping",
            (long long)skippedInARow, (long long)step);
      continue;
    }
    skippedInARow = 0;
    double lr = learningRate(o, step);
    setScalar("learning_rate", float(lr));
    ++updates;
    if (m.find("input", "step")) // AdamW's bias correction; SGD has none
      setScalar("step", float(updates));
    setScalar("grad_scale", float(1.0 / double(o.gradAccum * comm.size())));
    call(infir2_optimizer_step, "optimizer step", step);
    double gradNorm = scalar("output", "grad_norm");
    lossSinceLog += loss;
    ++stepsSinceLog;

    bool evalNow = !held.empty() && ((o.evalEvery && step % o.evalEvery == 0) ||
                                     step == o.steps);
    bool logNow = step % o.logEvery == 0 || step == o.steps || evalNow;
    double evalLoss = evalNow ? evaluate() : 0.0;
    if (logNow && lead) {
      auto now = std::chrono::steady_clock::now();
      double dt = std::chrono::duration<double>(now - lastLog).count();
      double elapsed = std::chrono::duration<double>(now - start).count();
      double tps = tokensSinceLog / std::max(dt, 1e-9);
      double eta = elapsed / double(step - startStep) * double(o.steps - step);
      double meanLoss =
          lossSinceLog / double(std::max<int64_t>(stepsSinceLog, 1));
      std::printf("step %lld/%lld  loss %.4f  lr %.3g  grad-norm %.3f  "
                  "%.0f tok/s  eta %.0fs",
                  (long long)step, (long long)o.steps, meanLoss, lr, gradNorm,
                  tps, eta);
      if (evalNow)
        std::printf("  eval-loss %.4f", evalLoss);
      std::printf("\n");
      std::fflush(stdout);
      if (jsonl) {
        std::fprintf(jsonl,
                     "{\"step\": %lld, \"loss\": %.6f, \"lr\": %.6g, "
                     "\"grad_norm\": %.6f, \"tokens_per_s\": %.1f",
                     (long long)step, meanLoss, lr, gradNorm, tps);
        if (evalNow)
          std::fprintf(jsonl, ", \"eval_loss\": %.6f", evalLoss);
        std::fprintf(jsonl, "}\n");
        std::fflush(jsonl);
      }
      lastLog = now;
      tokensSinceLog = 0;
      lossSinceLog = 0.0;
      stepsSinceLog = 0;
    }
    if (!o.save.empty() &&
        ((o.saveEvery && step % o.saveEvery == 0) || step == o.steps)) {
      saveCheckpoint(step);
      comm.barrier();
    }
  }
  if (jsonl)
    std::fclose(jsonl);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Communicator comm;
  std::string error;
  if (!comm.init(&argc, &argv, error))
    die("%s", error.c_str());
  if (comm.size() > 1)
    gRank = comm.rank();
  Options options = parseOptions(argc, argv);
  Model model = readManifest();
  if (!model.batch || !model.seq || !model.vocab)
    die("the compiled model's manifest is incomplete");
  int rc = Trainer(std::move(model), std::move(options), comm).run();
  comm.finalize();
  return rc;
}
