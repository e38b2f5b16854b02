//===- HFConfig.cpp - Import Hugging Face decoder configs -----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Import/HFConfig.h"

#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace infir2;

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Reads the config's keys with errors that name the key.
class ConfigReader {
public:
  explicit ConfigReader(const llvm::json::Object &obj) : obj(obj) {}

  llvm::Expected<int64_t> positiveInt(llvm::StringRef key) {
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return error("missing key '" + key + "'");
    return positiveInt(key, *v);
  }

  llvm::Expected<int64_t> positiveInt(llvm::StringRef key, int64_t dflt) {
    const llvm::json::Value *v = obj.get(key);
    if (!v || v->kind() == llvm::json::Value::Null)
      return dflt;
    return positiveInt(key, *v);
  }

  llvm::Expected<double> positiveNumber(llvm::StringRef key,
                                        std::optional<double> dflt) {
    const llvm::json::Value *v = obj.get(key);
    if (!v || v->kind() == llvm::json::Value::Null) {
      if (dflt)
        return *dflt;
      return error("missing key '" + key + "'");
    }
    std::optional<double> d = v->getAsNumber();
    if (!d || !(*d > 0.0) || !std::isfinite(*d))
      return error("key '" + key + "' must be a positive number, got " +
                   show(*v));
    return *d;
  }

  llvm::Expected<bool> boolean(llvm::StringRef key, bool dflt) {
    const llvm::json::Value *v = obj.get(key);
    if (!v || v->kind() == llvm::json::Value::Null)
      return dflt;
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return error("key '" + key + "' must be true or false, got " + show(*v));
    return *b;
  }

  std::optional<llvm::StringRef> string(llvm::StringRef key) {
    if (const llvm::json::Value *v = obj.get(key))
      return v->getAsString();
    return std::nullopt;
  }

  bool isSetAndNotNull(llvm::StringRef key) {
    const llvm::json::Value *v = obj.get(key);
    return v && v->kind() != llvm::json::Value::Null;
  }

  static std::string show(const llvm::json::Value &v) {
    return llvm::formatv("{0}", v).str();
  }

private:
  llvm::Expected<int64_t> positiveInt(llvm::StringRef key,
                                      const llvm::json::Value &v) {
    // Sizes fit in 31 bits, so that products of two never overflow.
    std::optional<int64_t> i = v.getAsInteger();
    if (!i || *i <= 0 || *i > INT32_MAX)
      return error("key '" + key +
                   "' must be a positive integer below 2^31, got " + show(v));
    return *i;
  }

  const llvm::json::Object &obj;
};

} // namespace

/// llvm::json parses recursively: a document nested deeper than any config
/// is refused first, by a scan that tracks strings, so that a hostile input
/// cannot overflow the stack.
static llvm::Error checkNesting(llvm::StringRef json) {
  constexpr int kMaxDepth = 64;
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char ch = json[i];
    if (inString) {
      if (ch == '\\')
        ++i;
      else if (ch == '"')
        inString = false;
    } else if (ch == '"') {
      inString = true;
    } else if (ch == '{' || ch == '[') {
      if (++depth > kMaxDepth)
        return error("invalid JSON: nested deeper than " +
                     llvm::Twine(kMaxDepth) + " levels at byte " +
                     llvm::Twine(i));
    } else if (ch == '}' || ch == ']') {
      --depth;
    }
  }
  return llvm::Error::success();
}

llvm::Expected<DecoderConfig> infir2::parseHFConfig(llvm::StringRef json) {
  if (llvm::Error e = checkNesting(json))
    return std::move(e);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed)
    return error("invalid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *obj = parsed->getAsObject();
  if (!obj)
    return error("expected a JSON object at the top level");
  ConfigReader r(*obj);
  DecoderConfig c;

  // The architecture decides the bias layout; model_type is the fallback.
  if (const llvm::json::Array *archs = obj->getArray("architectures")) {
    if (archs->empty() || !(*archs)[0].getAsString())
      return error("key 'architectures' must list at least one name");
    c.architecture = (*archs)[0].getAsString()->str();
  } else if (std::optional<llvm::StringRef> type = r.string("model_type")) {
    if (*type == "qwen2")
      c.architecture = "Qwen2ForCausalLM";
    else if (*type == "llama")
      c.architecture = "LlamaForCausalLM";
    else
      c.architecture = type->str();
  } else {
    return error("missing key 'architectures' (or 'model_type')");
  }
  bool isQwen2 = c.architecture == "Qwen2ForCausalLM";
  bool isLlama = c.architecture == "LlamaForCausalLM";
  if (!isQwen2 && !isLlama)
    return error("unsupported architecture '" + c.architecture +
                 "' (supported: Qwen2ForCausalLM, LlamaForCausalLM)");

  auto take = [](auto expected, auto &field) -> llvm::Error {
    if (!expected)
      return expected.takeError();
    field = *expected;
    return llvm::Error::success();
  };
  if (llvm::Error e = take(r.positiveInt("vocab_size"), c.vocabSize))
    return std::move(e);
  if (llvm::Error e = take(r.positiveInt("hidden_size"), c.hiddenSize))
    return std::move(e);
  if (llvm::Error e =
          take(r.positiveInt("intermediate_size"), c.intermediateSize))
    return std::move(e);
  if (llvm::Error e = take(r.positiveInt("num_hidden_layers"), c.numLayers))
    return std::move(e);
  // Every published decoder has at most a few hundred layers; this bound
  // keeps a typo (100000) from taking minutes and gigabytes to build.
  constexpr int64_t kMaxLayers = 1024;
  if (c.numLayers > kMaxLayers)
    return error("key 'num_hidden_layers' must be at most " +
                 llvm::Twine(kMaxLayers) + ", got " +
                 llvm::Twine(c.numLayers));
  if (llvm::Error e = take(r.positiveInt("num_attention_heads"), c.numHeads))
    return std::move(e);
  // Llama configs before GQA omit num_key_value_heads: one kv head per head.
  if (llvm::Error e =
          take(r.positiveInt("num_key_value_heads", c.numHeads), c.numKvHeads))
    return std::move(e);
  if (llvm::Error e =
          take(r.positiveNumber("rms_norm_eps", std::nullopt), c.rmsNormEps))
    return std::move(e);
  // Transformers' defaults for keys older configs leave out.
  if (llvm::Error e =
          take(r.positiveNumber("rope_theta", 10000.0), c.ropeTheta))
    return std::move(e);
  if (llvm::Error e =
          take(r.positiveNumber("initializer_range", 0.02), c.initializerRange))
    return std::move(e);
  if (llvm::Error e =
          take(r.boolean("tie_word_embeddings", false), c.tieWordEmbeddings))
    return std::move(e);

  if (r.isSetAndNotNull("head_dim")) {
    if (llvm::Error e = take(r.positiveInt("head_dim"), c.headDim))
      return std::move(e);
  } else {
    if (c.hiddenSize % c.numHeads != 0)
      return error(llvm::formatv("hidden_size ({0}) is not a multiple of "
                                 "num_attention_heads ({1}) and no head_dim "
                                 "is given",
                                 c.hiddenSize, c.numHeads));
    c.headDim = c.hiddenSize / c.numHeads;
  }
  if (c.numHeads % c.numKvHeads != 0)
    return error(llvm::formatv("num_attention_heads ({0}) must be a multiple "
                               "of num_key_value_heads ({1})",
                               c.numHeads, c.numKvHeads));
  if (c.headDim % 2 != 0)
    return error(llvm::formatv("head dimension {0} must be even for rotary "
                               "embeddings",
                               c.headDim));

  // Features that change the math this importer emits are refused, not
  // silently dropped.
  if (std::optional<llvm::StringRef> act = r.string("hidden_act");
      act && *act != "silu")
    return error("unsupported hidden_act '" + *act + "' (only silu)");
  if (r.isSetAndNotNull("rope_scaling"))
    return error("unsupported key 'rope_scaling' (only plain RoPE)");
  llvm::Expected<bool> sliding = r.boolean("use_sliding_window", false);
  if (!sliding)
    return sliding.takeError();
  if (*sliding)
    return error("unsupported 'use_sliding_window': true (only full causal "
                 "attention)");
  llvm::Expected<bool> mlpBias = r.boolean("mlp_bias", false);
  if (!mlpBias)
    return mlpBias.takeError();
  if (*mlpBias)
    return error("unsupported 'mlp_bias': true");

  if (isQwen2) {
    c.qkvBias = true;
    c.outputBias = false;
  } else {
    llvm::Expected<bool> bias = r.boolean("attention_bias", false);
    if (!bias)
      return bias.takeError();
    c.qkvBias = c.outputBias = *bias;
  }
  return c;
}

//===----------------------------------------------------------------------===//
// Building the forward function
//===----------------------------------------------------------------------===//

namespace {

/// Declares parameters in signature order and hands out their block
/// arguments once the function exists.
class ParamTable {
public:
  unsigned add(std::string name, ArrayRef<int64_t> shape, InitKind init) {
    decls.push_back({std::move(name), SmallVector<int64_t>(shape), init});
    return decls.size() - 1;
  }

  struct Decl {
    std::string name;
    SmallVector<int64_t> shape;
    InitKind init;
  };
  SmallVector<Decl> decls;
};

struct LayerParams {
  unsigned ln1, wq, bq, wk, bk, wv, bv, wo, bo, ln2, wg, wu, wd;
};

constexpr unsigned kNone = ~0u;

} // namespace

OwningOpRef<ModuleOp>
infir2::buildDecoderForward(MLIRContext *ctx, const DecoderConfig &c,
                            const ImportOptions &options) {
  ctx->loadDialect<Infir2Dialect, func::FuncDialect>();
  Location unknown = UnknownLoc::get(ctx);
  Type elt;
  if (options.dtype == "bf16")
    elt = BFloat16Type::get(ctx);
  else if (options.dtype == "f16")
    elt = Float16Type::get(ctx);
  else if (options.dtype == "f32")
    elt = Float32Type::get(ctx);
  else {
    emitError(unknown) << "unsupported dtype '" << options.dtype
                       << "' (expected bf16, f16 or f32)";
    return nullptr;
  }
  if (options.seqLen <= 0 || options.microBatch <= 0) {
    emitError(unknown) << "sequence length and micro-batch must be positive";
    return nullptr;
  }
  if (options.seqLen > INT32_MAX / options.microBatch) {
    emitError(unknown) << "a micro-batch of " << options.microBatch << " x "
                       << options.seqLen
                       << " tokens is too large (at most 2^31 tokens)";
    return nullptr;
  }

  int64_t B = options.microBatch, S = options.seqLen, D = c.hiddenSize,
          V = c.vocabSize, F = c.intermediateSize;
  int64_t Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;

  // Parameters, in the order Hugging Face lists them.
  ParamTable params;
  unsigned embed =
      params.add("model.embed_tokens.weight", {V, D}, InitKind::normal);
  SmallVector<LayerParams> layers;
  for (int64_t l = 0; l < c.numLayers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    LayerParams lp;
    lp.ln1 = params.add(p + "input_layernorm.weight", {D}, InitKind::ones);
    lp.wq = params.add(p + "self_attn.q_proj.weight", {Q, D}, InitKind::normal);
    lp.bq = c.qkvBias
                ? params.add(p + "self_attn.q_proj.bias", {Q}, InitKind::zeros)
                : kNone;
    lp.wk =
        params.add(p + "self_attn.k_proj.weight", {KV, D}, InitKind::normal);
    lp.bk = c.qkvBias
                ? params.add(p + "self_attn.k_proj.bias", {KV}, InitKind::zeros)
                : kNone;
    lp.wv =
        params.add(p + "self_attn.v_proj.weight", {KV, D}, InitKind::normal);
    lp.bv = c.qkvBias
                ? params.add(p + "self_attn.v_proj.bias", {KV}, InitKind::zeros)
                : kNone;
    lp.wo = params.add(p + "self_attn.o_proj.weight", {D, Q}, InitKind::normal);
    lp.bo = c.outputBias
                ? params.add(p + "self_attn.o_proj.bias", {D}, InitKind::zeros)
                : kNone;
    lp.ln2 =
        params.add(p + "post_attention_layernorm.weight", {D}, InitKind::ones);
    lp.wg = params.add(p + "mlp.gate_proj.weight", {F, D}, InitKind::normal);
    lp.wu = params.add(p + "mlp.up_proj.weight", {F, D}, InitKind::normal);
    lp.wd = params.add(p + "mlp.down_proj.weight", {D, F}, InitKind::normal);
    layers.push_back(lp);
  }
  unsigned finalNorm = params.add("model.norm.weight", {D}, InitKind::ones);
  unsigned lmHead = c.tieWordEmbeddings ? embed
                                        : params.add("lm_head.weight", {V, D},
                                                     InitKind::normal);

  // The signature: parameters, then the micro-batch.
  Builder b(ctx);
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (const ParamTable::Decl &d : params.decls) {
    argTypes.push_back(RankedTensorType::get(d.shape, elt));
    double stddev = d.init == InitKind::normal ? c.initializerRange : 0.0;
    auto attr = ParamAttr::get(ctx, d.name, d.init, llvm::APFloat(stddev));
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(Infir2Dialect::getParamAttrName(), attr)));
  }
  unsigned ids = argTypes.size();
  argTypes.push_back(RankedTensorType::get({B, S}, i32)); // ids
  argTypes.push_back(RankedTensorType::get({B, S}, i32)); // targets
  argTypes.push_back(RankedTensorType::get({B, S}, f32)); // loss_mask
  argTypes.push_back(RankedTensorType::get({B, S}, i32)); // positions
  argTypes.push_back(RankedTensorType::get({B, S}, i32)); // segments
  for (int i = 0; i < 5; ++i)
    argAttrs.push_back(b.getDictionaryAttr({}));
  auto lossType = RankedTensorType::get({}, f32);

  OwningOpRef<ModuleOp> module = ModuleOp::create(unknown);
  OpBuilder ob = OpBuilder::atBlockEnd(module->getBody());
  auto fn = func::FuncOp::create(ob, unknown, "forward",
                                 ob.getFunctionType(argTypes, {lossType}));
  fn.setAllArgAttrs(argAttrs);
  Block *entry = fn.addEntryBlock();
  ob.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) -> Value { return entry->getArgument(i); };
  // Ops are located by the module path they implement, so reports and
  // diagnostics can name "model.layers.3.mlp.up_proj".
  auto at = [&](const std::string &name) {
    return NameLoc::get(b.getStringAttr(name));
  };

  auto act = [&](int64_t width) {
    return RankedTensorType::get({B, S, width}, elt);
  };
  auto linear = [&](const std::string &name, Value x, unsigned w, unsigned bias,
                    int64_t out) -> Value {
    Value y = MatmulOp::create(ob, at(name), act(out), x, arg(w),
                               /*transpose_lhs=*/false, /*transpose_rhs=*/true,
                               /*acc=*/Value());
    if (bias != kNone)
      y = AddOp::create(ob, at(name), y, arg(bias));
    return y;
  };
  double eps = c.rmsNormEps;
  auto rmsNorm = [&](const std::string &name, Value x, unsigned w) -> Value {
    return RMSNormOp::create(ob, at(name), x, arg(w), b.getF64FloatAttr(eps));
  };

  Value h = EmbeddingOp::create(ob, at("model.embed_tokens"), act(D),
                                arg(embed), arg(ids));
  // Packed samples: positions restart and attention stays within each
  // sample's segment.
  Value positions = arg(ids + 3), segments = arg(ids + 4);
  for (auto [l, lp] : llvm::enumerate(layers)) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Value x = rmsNorm(p + "input_layernorm", h, lp.ln1);
    Value q = linear(p + "self_attn.q_proj", x, lp.wq, lp.bq, Q);
    Value k = linear(p + "self_attn.k_proj", x, lp.wk, lp.bk, KV);
    Value v = linear(p + "self_attn.v_proj", x, lp.wv, lp.bv, KV);
    auto rope = [&](Value t) -> Value {
      return RopeOp::create(ob, at(p + "self_attn.rotary_emb"), t, positions,
                            b.getI64IntegerAttr(c.headDim),
                            b.getF64FloatAttr(c.ropeTheta));
    };
    q = rope(q);
    k = rope(k);
    Value o = AttentionOp::create(ob, at(p + "self_attn"), act(Q), q, k, v,
                                  segments, c.numHeads, c.numKvHeads, c.headDim,
                                  /*scale=*/FloatAttr(), /*causal=*/true);
    o = linear(p + "self_attn.o_proj", o, lp.wo, lp.bo, D);
    h = AddOp::create(ob, at(p + "residual"), h, o);
    Value y = rmsNorm(p + "post_attention_layernorm", h, lp.ln2);
    Value g = linear(p + "mlp.gate_proj", y, lp.wg, kNone, F);
    Value u = linear(p + "mlp.up_proj", y, lp.wu, kNone, F);
    Value a = SwigluOp::create(ob, at(p + "mlp.act_fn"), g, u);
    Value d = linear(p + "mlp.down_proj", a, lp.wd, kNone, D);
    h = AddOp::create(ob, at(p + "residual"), h, d);
  }
  Value z = rmsNorm("model.norm", h, finalNorm);
  // The LM head writes FP32 logits for the loss.
  Value logits =
      MatmulOp::create(ob, at("lm_head"), RankedTensorType::get({B, S, V}, f32),
                       z, arg(lmHead), false, true, /*acc=*/Value());
  Value loss = CrossEntropyOp::create(
      ob, at("loss"), lossType, logits, arg(ids + 1), arg(ids + 2),
      /*divisor=*/Value(), /*ignore_index=*/b.getI64IntegerAttr(-100));
  func::ReturnOp::create(ob, unknown, loss);
  return module;
}
