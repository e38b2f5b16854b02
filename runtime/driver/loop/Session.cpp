//===- Session.cpp - What the parts of a run share ------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "loop/Session.h"

#include "infir2/runtime/Error.h"

#include <cstdio>
#include <filesystem>

using namespace infir2::rt;
namespace fs = std::filesystem;

Session::Session(Manifest manifest, RunConfig config, ModelEntryPoints model,
                 Communicator &comm)
    : layout(std::move(manifest)), m(layout.manifest()), o(std::move(config)),
      model(model), comm(comm), rng(o.seed) {}

Status Session::open(std::string &notice) {
  comm.setTimeout(o.collectiveTimeout);
  INFIR2_RETURN_IF_ERROR(device.open(o.device, localRank(), m.stateBytes,
                                     m.scratchBytes, m.fp8Gemms, notice));
  if (!o.recordCalls.empty()) {
    recorder = std::make_unique<CallRecorder>(device.backend());
    device.wrap(recorder->backend());
  }
  if (o.fp8StatsEvery > 0) {
    fp8Stats = std::make_unique<Fp8StatsRecorder>(device.backend(), m);
    device.wrap(fp8Stats->backend());
  }
  if (m.tensorParallel > 1) {
    int size = int(m.tensorParallel);
    if (comm.size() % size)
      return fail("this trainer is tensor-parallel over %d ranks, but was "
                  "started as %d: run it with mpirun -np N, N a multiple of "
                  "%d (N / %d data-parallel groups)",
                  size, comm.size(), size, size);
    // Every rank on one kind of device (under --device auto one might have
    // found a GPU and another not), decided before the groups are made.
    double gpus = comm.sum(device.onGpu() ? 1.0 : 0.0);
    if (gpus != 0.0 && gpus != double(comm.size()))
      return fail("%d of the %d ranks found a GPU: a tensor-parallel group "
                  "runs on one kind of device (start it with --device cuda "
                  "or --device cpu)",
                  int(gpus), comm.size());
    tp = comm.split(comm.rank() / size, comm.rank() % size);
    dpGroup = comm.split(comm.rank() % size, comm.rank() / size);
    dp = dpGroup.get();
    layout.setTensorParallelRank(tp->rank());
  }
  device.attach(ctx);
  if (!device.onGpu() && comm.rank() == 0)
    std::fprintf(stderr, "trainer: CPU GEMMs: %s\n", infir2rt_cpu_gemm_info());
  if (device.onGpu() && comm.size() > 1) {
    // Each group of a 2-D layout with an NCCL communicator of its own; a
    // group's first rank says why it has none.
    auto useNccl = [&](Communicator &group, const char *which) {
      std::string why;
      group.useDeviceCollectives(why);
      if (!why.empty() && group.rank() == 0)
        std::fprintf(stderr, "trainer: %s%s\n", which, why.c_str());
    };
    if (tp) {
      std::string tpName = "tensor-parallel group of rank " +
                           std::to_string(comm.rank()) + ": ",
                  dpName = "data-parallel group of rank " +
                           std::to_string(comm.rank()) + ": ";
      useNccl(*tp, tpName.c_str());
      // Every group's start-up bounded alike: the data-parallel groups'
      // deadlines start once every tensor-parallel group is done.
      comm.barrier(/*unbounded=*/true);
      useNccl(*dpGroup, dpName.c_str());
    } else {
      useNccl(comm, "");
    }
  }
  dp->attach(ctx);
  ctx.tp_comm = tp ? tp->runtimeInterface() : nullptr;
  return Status::ok();
}

Status Session::check(Status s) {
  if (!s)
    return fail("%s: %s", device.name().c_str(), s.message().c_str());
  return Status::ok();
}
Status Session::upload(const ManifestSlot &s) {
  return check(device.upload(s.offset, s.bytes));
}
Status Session::download(const ManifestSlot &s) {
  return check(device.download(s.offset, s.bytes));
}
Expected<float> Session::scalar(SlotKind kind, const char *name) {
  Expected<const ManifestSlot *> s = layout.get(kind, name);
  if (!s)
    return s.failure();
  INFIR2_RETURN_IF_ERROR(download(**s));
  return readElement((*s)->dtype, bytesAt(**s), 0);
}

Status Session::setScalar(const char *name, float v) {
  Expected<const ManifestSlot *> s = layout.get(SlotKind::Input, name);
  if (!s)
    return s.failure();
  writeElement((*s)->dtype, bytesAt(**s), 0, v);
  return upload(**s);
}

const char *Session::functionName(int32_t (*fn)(infir2rt_context *)) const {
  if (fn == model.trainStep)
    return "train_step";
  if (fn == model.optimizerStep)
    return "optimizer_step";
  if (fn == model.evalStep)
    return "eval_step";
  if (fn == model.decodeStep)
    return "decode_step";
  return fn == model.quantizeWeights ? "quantize_weights" : "step";
}

Status Session::call(int32_t (*fn)(infir2rt_context *), const char *what,
                     int64_t atStep, bool wait) {
  entering(functionName(fn));
  int32_t rc = fn(&ctx);
  entering("");
  if (rc != 0)
    return fail("step %lld, %s: %s", (long long)atStep, what,
                callError(ctx).c_str());
  if (!wait)
    return Status::ok();
  if (Status done = device.finish(); !done)
    return fail("step %lld, %s, on %s: %s", (long long)atStep, what,
                device.name().c_str(), done.message().c_str());
  return Status::ok();
}

std::vector<float> Session::hostValues(const ManifestSlot &s) {
  std::vector<float> values(size_t(s.numel()));
  for (int64_t i = 0, n = s.numel(); i < n; ++i)
    values[size_t(i)] = readElement(s.dtype, bytesAt(s), i);
  return values;
}

std::string Session::tokenizerSource() const {
  // --tokenizer, else the tokenizer of the folder the weights came from.
  if (!o.tokenizer.empty() || loadedDir.empty())
    return o.tokenizer;
  std::error_code ec;
  for (const char *file : {"tokenizer.json", "tokenizer.model"})
    if (fs::exists(fs::path(loadedDir) / file, ec))
      return loadedDir;
  return "";
}
