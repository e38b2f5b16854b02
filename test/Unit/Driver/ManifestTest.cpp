//===- ManifestTest.cpp - The compiled model's manifest -------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Manifest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace infir2::rt;
using json = nlohmann::json;

namespace {

Manifest sample() {
  Manifest m;
  m.stateBytes = 1 << 20;
  m.scratchBytes = 4096;
  m.batch = 4;
  m.seq = 128;
  m.vocab = 256;
  m.zero1WorldSize = 2;
  m.optimizer = ManifestOptimizer{"adamw", 0.9, 0.95, 1e-8, 0.1, 1.0};
  m.slots.push_back({SlotKind::Param,
                     "model.embed_tokens.weight",
                     "bf16",
                     0,
                     131072,
                     {256, 256},
                     "normal",
                     0.02});
  m.slots.push_back({SlotKind::Master,
                     "model.embed_tokens.weight",
                     "f32",
                     131072,
                     131072,
                     {128, 256},
                     "zeros",
                     0.0});
  m.slots.push_back(
      {SlotKind::Output, "loss", "f32", 262144, 4, {}, "zeros", 0.0});
  m.functions.push_back({"infir2_train_step", 4096});
  m.functions.push_back({"infir2_optimizer_step", 64});
  return m;
}

std::string parseError(const std::string &text) {
  std::string error;
  std::optional<Manifest> m = parseManifest(text, error);
  EXPECT_FALSE(m) << text;
  return error;
}

/// The sample's JSON with `edit` applied.
std::string edited(const std::function<void(json &)> &edit) {
  json j = json::parse(toJson(sample()));
  edit(j);
  return j.dump();
}

} // namespace

TEST(Manifest, RoundTrip) {
  std::string text = toJson(sample());
  std::string error;
  std::optional<Manifest> m = parseManifest(text, error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->abiVersion, INFIR2RT_ABI_VERSION);
  EXPECT_EQ(m->stateBytes, 1 << 20);
  EXPECT_EQ(m->scratchBytes, 4096);
  EXPECT_EQ(m->batch, 4);
  EXPECT_EQ(m->seq, 128);
  EXPECT_EQ(m->vocab, 256);
  EXPECT_EQ(m->zero1WorldSize, 2);
  ASSERT_TRUE(m->optimizer);
  EXPECT_EQ(m->optimizer->kind, "adamw");
  EXPECT_EQ(m->optimizer->beta2, 0.95);
  EXPECT_EQ(m->optimizer->eps, 1e-8);
  EXPECT_EQ(m->optimizer->weightDecay, 0.1);
  EXPECT_EQ(m->optimizer->gradClip, 1.0);
  ASSERT_EQ(m->slots.size(), 3u);
  EXPECT_EQ(m->slots[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(m->slots[0].dtype, "bf16");
  EXPECT_EQ(m->slots[0].shape, (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(m->slots[0].std, 0.02);
  EXPECT_EQ(m->slots[0].numel(), 65536);
  EXPECT_EQ(m->slots[1].offset, 131072);
  EXPECT_EQ(m->slots[0].kind, SlotKind::Param);
  EXPECT_EQ(m->slots[1].kind, SlotKind::Master);
  EXPECT_EQ(m->slots[2].kind, SlotKind::Output);
  EXPECT_TRUE(m->slots[2].shape.empty());
  EXPECT_EQ(m->slots[2].numel(), 1);
  ASSERT_EQ(m->functions.size(), 2u);
  EXPECT_EQ(m->functions[1].symbol, "infir2_optimizer_step");
  EXPECT_EQ(m->functions[1].scratchBytes, 64);
}

TEST(Manifest, JsonKeysAreSnakeCase) {
  json j = json::parse(toJson(sample()));
  EXPECT_EQ(j["format"], "infir2-manifest");
  EXPECT_EQ(j["abi_version"], INFIR2RT_ABI_VERSION);
  EXPECT_EQ(j["zero1_world_size"], 2);
  EXPECT_EQ(j["optimizer"]["weight_decay"], 0.1);
  EXPECT_EQ(j["optimizer"]["grad_clip"], 1.0);
  EXPECT_EQ(j["slots"][0]["bytes"], 131072);
  EXPECT_EQ(j["functions"][0]["scratch_bytes"], 4096);
}

TEST(Manifest, OptimizerIsOptionalAndSgdHasNoBetas) {
  Manifest m = sample();
  m.optimizer.reset();
  std::string error;
  std::optional<Manifest> back = parseManifest(toJson(m), error);
  ASSERT_TRUE(back) << error;
  EXPECT_FALSE(back->optimizer);

  m.optimizer = ManifestOptimizer{"sgd", 0, 0, 0, 0.01, 2.0};
  json j = json::parse(toJson(m));
  EXPECT_FALSE(j["optimizer"].contains("beta1"));
  back = parseManifest(toJson(m), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->optimizer->kind, "sgd");
  EXPECT_EQ(back->optimizer->weightDecay, 0.01);
}

TEST(Manifest, AnotherAbiVersionIsRefused) {
  std::string text = edited([](json &j) { j["abi_version"] = 2; });
  EXPECT_EQ(parseError(text), "the model was compiled for runtime ABI 2, this "
                              "runtime is " +
                                  std::to_string(INFIR2RT_ABI_VERSION) +
                                  ": recompile it");
  // The text manifest of ABI 2 and before.
  EXPECT_EQ(parseError("infir2-model 1\nstate_bytes 64\n"),
            "the model was compiled for runtime ABI 2 or older, this runtime "
            "is " +
                std::to_string(INFIR2RT_ABI_VERSION) + ": recompile it");
}

TEST(Manifest, ForeignFormatIsRefused) {
  EXPECT_EQ(parseError(edited([](json &j) { j["format"] = "onnx"; })),
            "the compiled model's manifest has format 'onnx', expected "
            "'infir2-manifest'");
}

TEST(Manifest, MissingAndMistypedFieldsAreNamedByPath) {
  EXPECT_EQ(parseError(edited([](json &j) { j.erase("vocab"); })),
            "the compiled model's manifest: vocab is missing");
  EXPECT_EQ(parseError(edited([](json &j) { j["slots"][1].erase("offset"); })),
            "the compiled model's manifest: slots[1].offset is missing");
  EXPECT_EQ(parseError(edited([](json &j) { j["slots"][0]["shape"] = "256"; })),
            "the compiled model's manifest: slots[0].shape must be an array");
  EXPECT_EQ(parseError(edited([](json &j) {
              j["slots"][0]["shape"] = {256, -1};
            })),
            "the compiled model's manifest: slots[0].shape must be an array of "
            "non-negative integers");
  EXPECT_EQ(parseError(edited([](json &j) { j["slots"][2]["dtype"] = "f8"; })),
            "the compiled model's manifest: slots[2].dtype must be f32, bf16, "
            "f16, f64, i32, i64, i1, f8E4M3FN, f8E5M2 or f8E8M0FNU");
  EXPECT_EQ(parseError(edited([](json &j) { j["batch"] = 4.5; })),
            "the compiled model's manifest: batch must be an integer");
  EXPECT_EQ(
      parseError(edited([](json &j) { j["optimizer"]["beta1"] = "0.9"; })),
      "the compiled model's manifest: optimizer.beta1 must be a number");
  EXPECT_EQ(parseError(edited(
                [](json &j) { j["functions"][0].erase("scratch_bytes"); })),
            "the compiled model's manifest: functions[0].scratch_bytes is "
            "missing");
}

TEST(Manifest, SyntaxErrorsAreOneLine) {
  std::string error = parseError("{\"format\": \"infir2-manifest\",");
  EXPECT_EQ(error.rfind("the compiled model's manifest is not valid JSON: ", 0),
            0u)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_EQ(parseError("[1]"), "the compiled model's manifest is not a JSON "
                               "object");
}

TEST(Manifest, DtypeSizes) {
  EXPECT_EQ(manifestDtypeSize("f32"), 4);
  EXPECT_EQ(manifestDtypeSize("bf16"), 2);
  EXPECT_EQ(manifestDtypeSize("f16"), 2);
  EXPECT_EQ(manifestDtypeSize("f64"), 8);
  EXPECT_EQ(manifestDtypeSize("i32"), 4);
  EXPECT_EQ(manifestDtypeSize("i64"), 8);
  EXPECT_EQ(manifestDtypeSize("i1"), 1);
  EXPECT_EQ(manifestDtypeSize("f8E4M3FN"), 1); // the FP8 weight cache
  EXPECT_EQ(manifestDtypeSize("f8E5M2"), 1);
  EXPECT_EQ(manifestDtypeSize("f8E8M0FNU"), 1);
  EXPECT_EQ(manifestDtypeSize("f8"), 0);
}

// The model's Hugging Face config and its FP8 weights, which saved folders
// and the FP8 export are made from; both optional.
TEST(Manifest, ModelConfigAndFp8WeightsRoundTrip) {
  Manifest m = sample();
  m.modelConfig = R"({"model_type":"qwen2","rms_norm_eps":1e-06})";
  m.fp8Weights.push_back({"model.layers.0.mlp.up_proj.weight", 128, 64,
                          "e4m3", "pow2"});
  std::string error;
  std::optional<Manifest> back = parseManifest(toJson(m), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(json::parse(back->modelConfig), json::parse(m.modelConfig));
  ASSERT_EQ(back->fp8Weights.size(), 1u);
  EXPECT_EQ(back->fp8Weights[0].name, "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(back->fp8Weights[0].blockRows, 128);
  EXPECT_EQ(back->fp8Weights[0].blockCols, 64);
  EXPECT_EQ(back->fp8Weights[0].scales, "pow2");

  std::optional<Manifest> none = parseManifest(toJson(sample()), error);
  ASSERT_TRUE(none) << error;
  EXPECT_TRUE(none->modelConfig.empty());
  EXPECT_TRUE(none->fp8Weights.empty());

  EXPECT_EQ(parseError(edited([](json &j) { j["model_config"] = 3; })),
            "the compiled model's manifest: model_config must be an object");
  EXPECT_EQ(parseError(edited([](json &j) {
              j["fp8_weights"] = json::array({{{"name", "w"}, {"block", {0, 128}}}});
            })),
            "the compiled model's manifest: fp8_weights[0] must be an object "
            "with a name and a block [rows, cols]");
}

// The FP8 GEMM scalings a device must run: both spellings round-trip, none
// is written when there are none, anything else is refused by name.
TEST(Manifest, Fp8GemmsRoundTripAndAreChecked) {
  for (uint32_t bits :
       {0u, uint32_t(INFIR2RT_FP8_GEMM_BLOCK128),
        uint32_t(INFIR2RT_FP8_GEMM_MX),
        uint32_t(INFIR2RT_FP8_GEMM_BLOCK128 | INFIR2RT_FP8_GEMM_MX),
        uint32_t(INFIR2RT_FP8_GEMM_BLOCK128 | INFIR2RT_FP8_GEMM_E5M2_PAIR)}) {
    Manifest m = sample();
    m.fp8Gemms = bits;
    std::string text = toJson(m), error;
    EXPECT_EQ(json::parse(text).contains("fp8_gemms"), bits != 0);
    std::optional<Manifest> back = parseManifest(text, error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(back->fp8Gemms, bits);
  }
  EXPECT_EQ(parseError(edited([](json &j) {
              j["fp8_gemms"] = json::array({"mx", "nvfp4"});
            })),
            "the compiled model's manifest: fp8_gemms must be an array of "
            "\"block128\", \"mx\" and \"e5m2_pair\"");
  EXPECT_EQ(parseError(edited([](json &j) { j["fp8_gemms"] = "mx"; })),
            "the compiled model's manifest: fp8_gemms must be an array of "
            "\"block128\", \"mx\" and \"e5m2_pair\"");
}

TEST(Manifest, SlotKindsAreSpelledAsTheCompilerWritesThem) {
  const std::pair<SlotKind, const char *> spelled[] = {
      {SlotKind::Param, "param"},       {SlotKind::Master, "master"},
      {SlotKind::Moment1, "moment1"},   {SlotKind::Moment2, "moment2"},
      {SlotKind::Grad, "grad"},         {SlotKind::Input, "input"},
      {SlotKind::Output, "output"},     {SlotKind::Cache, "cache"},
      {SlotKind::Fp8Cache, "fp8_cache"}};
  for (auto [kind, name] : spelled) {
    EXPECT_STREQ(slotKindName(kind), name);
    EXPECT_EQ(parseSlotKind(name), kind) << name;
  }
  EXPECT_EQ(parseSlotKind("params"), std::nullopt);
  EXPECT_EQ(json::parse(toJson(sample()))["slots"][1]["kind"], "master");
  EXPECT_EQ(parseError(edited([](json &j) { j["slots"][1]["kind"] = "bias"; })),
            "the compiled model's manifest: slots[1].kind must be param, "
            "master, moment1, moment2, grad, input, output, cache or "
            "fp8_cache");
}

TEST(Manifest, TensorParallelShardsRoundTripAndAreChecked) {
  Manifest m = sample();
  m.zero1WorldSize = 0;
  m.tensorParallel = 2;
  m.slots[0].tpDim = 1;
  std::string error;
  std::optional<Manifest> back = parseManifest(toJson(m), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->tensorParallel, 2);
  EXPECT_EQ(back->slots[0].tpDim, 1);
  EXPECT_EQ(back->slots[1].tpDim, -1);
  // Absent: one rank, no shard (the JSON of a model without them).
  json plain = json::parse(toJson(sample()));
  EXPECT_FALSE(plain.contains("tensor_parallel"));
  EXPECT_FALSE(plain["slots"][0].contains("tp_dim"));
  const std::string what = "the compiled model's manifest: ";
  EXPECT_EQ(parseError(edited([](json &j) { j["slots"][0]["tp_dim"] = 2; })),
            what + "slots[0].tp_dim must be a dimension of the slot's shape");
  EXPECT_EQ(parseError(edited([](json &j) { j["tensor_parallel"] = 0; })),
            what + "tensor_parallel must be a positive integer");
  const std::string absent = "must be absent (only a parameter or its state "
                             "of a tensor-parallel model is sharded)";
  EXPECT_EQ(parseError(edited([](json &j) {
              j["zero1_world_size"] = 0;
              j["slots"][0]["tp_dim"] = 0;
            })),
            what + "slots[0].tp_dim " + absent);
  EXPECT_EQ(parseError(edited([](json &j) {
              j["zero1_world_size"] = 0;
              j["tensor_parallel"] = 2;
              j["slots"][2]["shape"] = {4};
              j["slots"][2]["tp_dim"] = 0;
            })),
            what + "slots[2].tp_dim " + absent);
}
