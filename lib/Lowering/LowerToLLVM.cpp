//===- LowerToLLVM.cpp - Planned steps to runtime calls in LLVM IR --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Lowering/Lowering.h"

#include "infir2/Dialect/FP8/IR/FP8Ops.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"
#include "infir2/runtime/ABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <cstring>

using namespace mlir;
using namespace infir2;
using namespace infir2::lowering;

namespace {

// The descriptor geometry and element type codes come from the runtime's
// own header (runtime/include/infir2/runtime/ABI.h), the entry points from
// its one list (ABI.def): the lowering cannot name a call the runtime does
// not define.
constexpr int64_t kMaxRank = INFIR2RT_MAX_RANK,
                  kOperandWords = INFIR2RT_OPERAND_WORDS;
static_assert(kOperandWords == 5 + kMaxRank, "descriptor layout of ABI.h");

bool isEntryPoint(StringRef name) {
  static const llvm::StringSet<> entries = {
#define INFIR2RT_ENTRY(n, attributes) #n,
#include "infir2/runtime/ABI.def"
  };
  return entries.contains(name);
}

FailureOr<int64_t> dtypeCode(Operation *op, Type t) {
  if (t.isF32())
    return INFIR2RT_F32;
  if (t.isBF16())
    return INFIR2RT_BF16;
  if (t.isF16())
    return INFIR2RT_F16;
  if (t.isF64())
    return INFIR2RT_F64;
  if (isa<Float8E4M3FNType>(t))
    return INFIR2RT_E4M3;
  if (isa<Float8E5M2Type>(t))
    return INFIR2RT_E5M2;
  if (isa<Float8E8M0FNUType>(t))
    return INFIR2RT_E8M0;
  if (t.isInteger(32))
    return INFIR2RT_I32;
  if (t.isInteger(64))
    return INFIR2RT_I64;
  if (t.isInteger(1))
    return INFIR2RT_I1;
  return op->emitOpError() << "has an element type the runtime does not know: "
                           << t;
}

int64_t bitsOf(double d) {
  int64_t w;
  std::memcpy(&w, &d, sizeof w);
  return w;
}

/// One runtime call: the entry point, operands (buffers) and attributes.
struct CallSpec {
  std::string entry;
  SmallVector<Value> operands;
  SmallVector<double> attrs;
};

/// Appends the block shape of `granularity` for a tensor of `shape`.
void appendBlock(SmallVectorImpl<double> &attrs,
                 fp8::GranularityAttrInterface granularity, Value v) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  // The op verifiers have checked that the blocks tile the shape.
  FailureOr<SmallVector<int64_t>> block =
      granularity.getBlockShape(shape, [] { return InFlightDiagnostic(); });
  for (int64_t b : *block)
    attrs.push_back(double(b));
}

/// The runtime call `op` becomes; std::nullopt for ops with no code (a
/// reshape is a view of its input).
FailureOr<std::optional<CallSpec>> callFor(Operation *op) {
  CallSpec c;
  c.operands.append(op->operand_begin(), op->operand_end());
  c.operands.append(op->result_begin(), op->result_end());
  auto named = [&](StringRef entry, ArrayRef<double> attrs = {}) {
    c.entry = entry.str();
    c.attrs.append(attrs.begin(), attrs.end());
    return success();
  };
  auto attention = [&](auto a) {
    return named(a->getName().getStringRef().ends_with("_grad")
                     ? "attention_grad"
                     : "attention",
                 {double(a.getNumHeads()), double(a.getNumKvHeads()),
                  double(a.getHeadDim()), a.getEffectiveScale(),
                  a.getCausal() ? 1.0 : 0.0});
  };
  LogicalResult r =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case([&](ReshapeOp) {
            c.entry.clear();
            return success();
          })
          .Case([&](ConvertOp) { return named("copy"); })
          .Case([&](TransposeOp t) {
            SmallVector<double> perm;
            for (int64_t p : t.getPermutation())
              perm.push_back(double(p));
            return named("transpose", perm);
          })
          .Case([&](arith::ConstantOp k) -> LogicalResult {
            auto dense = dyn_cast<DenseElementsAttr>(k.getValue());
            if (!dense || !dense.isSplat() ||
                !isa<FloatType>(dense.getElementType()))
              return op->emitOpError()
                     << "only splat float constants can be lowered";
            return named("fill",
                         {dense.getSplatValue<APFloat>().convertToDouble()});
          })
          .Case([&](EmbeddingOp) { return named("embedding"); })
          .Case([&](MatmulOp m) {
            return named("matmul", {m.getTransposeLhs() ? 1.0 : 0.0,
                                    m.getTransposeRhs() ? 1.0 : 0.0});
          })
          .Case([&](RMSNormOp n) {
            return named("rms_norm", {n.getEpsilon().convertToDouble()});
          })
          .Case([&](RopeOp r) {
            return named("rope", {double(r.getHeadDim()),
                                  r.getTheta().convertToDouble(), 1.0});
          })
          .Case([&](RopeGradOp r) {
            return named("rope", {double(r.getHeadDim()),
                                  r.getTheta().convertToDouble(), -1.0});
          })
          .Case([&](AttentionOp a) { return attention(a); })
          .Case([&](AttentionGradOp a) { return attention(a); })
          .Case([&](SiluOp) { return named("silu"); })
          .Case([&](SwigluOp) { return named("swiglu"); })
          .Case([&](AddOp) { return named("add"); })
          .Case([&](MulOp) { return named("mul"); })
          .Case([&](CrossEntropyOp ce) {
            return named("cross_entropy",
                         {double(ce.getIgnoreIndexAttr().getInt()),
                          ce.getLossMask() ? 1.0 : 0.0});
          })
          .Case([&](CrossEntropyGradOp ce) {
            return named("cross_entropy_grad",
                         {double(ce.getIgnoreIndexAttr().getInt()),
                          ce.getLossMask() ? 1.0 : 0.0});
          })
          .Case([&](ReduceSumOp) { return named("reduce_sum"); })
          .Case([&](SiluGradOp) { return named("silu_grad"); })
          .Case([&](SwigluGradOp) { return named("swiglu_grad"); })
          .Case([&](RMSNormGradOp n) {
            return named("rms_norm_grad", {n.getEpsilon().convertToDouble()});
          })
          .Case([&](EmbeddingGradOp) { return named("embedding_grad"); })
          .Case([&](GlobalNormOp) { return named("global_norm"); })
          .Case([&](AllReduceOp) { return named("all_reduce"); })
          .Case([&](AdamWOp a) {
            return named("adamw", {a.getBeta1().convertToDouble(),
                                   a.getBeta2().convertToDouble(),
                                   a.getEpsilon().convertToDouble(),
                                   a.getWeightDecay().convertToDouble(),
                                   a.getMaxGradNorm().convertToDouble()});
          })
          .Case([&](SGDOp s) {
            return named("sgd", {s.getWeightDecay().convertToDouble(),
                                 s.getMaxGradNorm().convertToDouble()});
          })
          .Case([&](fp8::QuantizeOp q) {
            (void)named("quantize",
                        {q.getFormat() == fp8::Format::e5m2 ? 1.0 : 0.0,
                         q.getScaleRule() == fp8::ScaleRule::pow2 ? 1.0 : 0.0});
            appendBlock(c.attrs, q.getGranularity(), q.getInput());
            return success();
          })
          .Case([&](fp8::QuantizeDualOp q) {
            (void)named("quantize_dual",
                        {q.getFormat() == fp8::Format::e5m2 ? 1.0 : 0.0,
                         q.getScaleRule() == fp8::ScaleRule::pow2 ? 1.0 : 0.0});
            appendBlock(c.attrs, q.getGranularity(), q.getInput());
            appendBlock(c.attrs, q.getTransposedGranularity(), q.getDataT());
            return success();
          })
          .Case([&](fp8::DequantizeOp d) {
            (void)named("dequantize");
            appendBlock(c.attrs, d.getGranularity(), d.getData());
            return success();
          })
          .Case([&](fp8::ScaledMatmulOp m) {
            (void)named("scaled_matmul");
            appendBlock(c.attrs, m.getLhsGranularity(), m.getLhs());
            appendBlock(c.attrs, m.getRhsGranularity(), m.getRhs());
            return success();
          })
          .Case([&](fp8::AmaxOp a) {
            (void)named("amax");
            appendBlock(c.attrs, a.getGranularity(), a.getInput());
            return success();
          })
          .Default([&](Operation *) {
            return op->emitOpError()
                   << "has no runtime entry point to lower to";
          });
  if (failed(r))
    return failure();
  if (c.entry.empty())
    return std::optional<CallSpec>();
  if (!isEntryPoint(c.entry))
    return op->emitOpError() << "lowers to '" << c.entry
                             << "', which runtime/include/infir2/runtime/"
                                "ABI.def does not list";
  return std::optional<CallSpec>(std::move(c));
}

/// "infir2.rms_norm at model.mlir:12:5"
std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName() << " at ";
  if (auto file = dyn_cast<FileLineColLoc>(op->getLoc()))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
  else
    op->getLoc().print(os);
  return s;
}

class Lowerer {
public:
  Lowerer(ModuleOp out, const ModelPlan &plan)
      : b(out.getContext()), out(out), plan(plan) {
    b.setInsertionPointToEnd(out.getBody());
    ptr = LLVM::LLVMPointerType::get(out.getContext());
    i32 = b.getI32Type();
  }

  LogicalResult lowerFunction(const FunctionPlan &f);
  void addManifest(StringRef text);

private:
  LLVM::LLVMFuncOp entryPoint(StringRef name);
  Value global(Location loc, StringRef prefix, Attribute value, Type type);
  FailureOr<SmallVector<int64_t>>
  descriptor(const FunctionPlan &f, Operation *op, const CallSpec &call);
  void emitCall(Location loc, StringRef entry, ArrayRef<int64_t> desc,
                StringRef where, Value ctx, Block *fail);
  void encodeOperand(SmallVectorImpl<int64_t> &words, Buffer buffer,
                     RankedTensorType type, int64_t dtype);

  OpBuilder b;
  ModuleOp out;
  const ModelPlan &plan;
  Type ptr, i32;
  llvm::StringMap<LLVM::LLVMFuncOp> entries;
  int64_t globals = 0;
};

LLVM::LLVMFuncOp Lowerer::entryPoint(StringRef name) {
  std::string symbol = ("infir2rt_" + name).str();
  auto it = entries.find(symbol);
  if (it != entries.end())
    return it->second;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(out.getBody());
  auto fn = LLVM::LLVMFuncOp::create(
      b, out.getLoc(), symbol,
      LLVM::LLVMFunctionType::get(i32, {ptr, ptr, ptr}));
  entries[symbol] = fn;
  return fn;
}

Value Lowerer::global(Location loc, StringRef prefix, Attribute value,
                      Type type) {
  std::string name = (prefix + "_" + Twine(globals++)).str();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(out.getBody());
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                           LLVM::Linkage::Private, name, value);
  }
  return LLVM::AddressOfOp::create(b, loc, ptr, name);
}

void Lowerer::encodeOperand(SmallVectorImpl<int64_t> &words, Buffer buffer,
                            RankedTensorType type, int64_t dtype) {
  words.push_back(buffer.region);
  words.push_back(dtype);
  words.push_back(type.getRank());
  words.push_back(buffer.offset);
  words.push_back(type.getNumElements());
  for (int64_t i = 0; i < kMaxRank; ++i)
    words.push_back(i < type.getRank() ? type.getDimSize(i) : 1);
}

FailureOr<SmallVector<int64_t>> Lowerer::descriptor(const FunctionPlan &f,
                                                    Operation *op,
                                                    const CallSpec &call) {
  SmallVector<int64_t> words = {int64_t(call.operands.size()),
                                int64_t(call.attrs.size())};
  for (Value v : call.operands) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() > kMaxRank)
      return op->emitOpError() << "has an operand of rank " << type.getRank()
                               << "; the runtime takes at most " << kMaxRank;
    FailureOr<int64_t> dtype = dtypeCode(op, type.getElementType());
    if (failed(dtype))
      return failure();
    encodeOperand(words, f.buffers.lookup(v), type, *dtype);
  }
  for (double a : call.attrs)
    words.push_back(bitsOf(a));
  return words;
}

void Lowerer::emitCall(Location loc, StringRef entry, ArrayRef<int64_t> desc,
                       StringRef where, Value ctx, Block *fail) {
  MLIRContext *mctx = out.getContext();
  auto i64 = IntegerType::get(mctx, 64);
  auto descType = LLVM::LLVMArrayType::get(i64, desc.size());
  Value d =
      global(loc, "desc",
             DenseElementsAttr::get(
                 RankedTensorType::get({int64_t(desc.size())}, i64), desc),
             descType);
  std::string text = (where + Twine('\0')).str();
  Value w =
      global(loc, "where", b.getStringAttr(text),
             LLVM::LLVMArrayType::get(IntegerType::get(mctx, 8), text.size()));
  auto call =
      LLVM::CallOp::create(b, loc, entryPoint(entry), ValueRange{ctx, d, w});
  Value zero = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
  Value failed = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne,
                                      call.getResult(), zero);
  Block *current = b.getBlock();
  Block *next =
      b.createBlock(current->getParent(), std::next(current->getIterator()));
  b.setInsertionPointToEnd(current);
  LLVM::CondBrOp::create(b, loc, failed, fail, ValueRange{call.getResult()},
                         next, ValueRange{});
  b.setInsertionPointToStart(next);
}

LogicalResult Lowerer::lowerFunction(const FunctionPlan &f) {
  Location loc = f.fn.getLoc();
  OpBuilder::InsertionGuard guard(b);
  auto fn = LLVM::LLVMFuncOp::create(b, loc, f.symbol,
                                     LLVM::LLVMFunctionType::get(i32, {ptr}));
  Block *entry = fn.addEntryBlock(b);
  Value ctx = entry->getArgument(0);
  Block *fail = b.createBlock(&fn.getBody(), fn.getBody().end(), {i32}, {loc});
  LLVM::ReturnOp::create(b, loc, fail->getArgument(0));
  b.setInsertionPointToEnd(entry);
  for (Operation *op : f.schedule) {
    FailureOr<std::optional<CallSpec>> call = callFor(op);
    if (failed(call))
      return failure();
    if (!*call)
      continue;
    FailureOr<SmallVector<int64_t>> desc = descriptor(f, op, **call);
    if (failed(desc))
      return failure();
    emitCall(op->getLoc(), (*call)->entry, *desc, describe(op), ctx, fail);
  }
  // Results to their state slots.
  for (auto [value, slotIndex] : f.copyOut) {
    const StateSlot &s = plan.state[slotIndex];
    Buffer src = f.buffers.lookup(value), dst{0, s.offset};
    if (src.region == dst.region && src.offset == dst.offset)
      continue;
    auto type = cast<RankedTensorType>(value.getType());
    FailureOr<int64_t> dtype = dtypeCode(f.fn, type.getElementType());
    if (failed(dtype))
      return failure();
    SmallVector<int64_t> words = {2, 0};
    encodeOperand(words, src, type, *dtype);
    encodeOperand(words, dst, s.type, *dtype);
    emitCall(loc, "copy", words, "result " + s.kind + " " + s.name, ctx, fail);
  }
  Value zero = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
  LLVM::ReturnOp::create(b, loc, zero);
  // Keep the failure block last, for readability of the emitted IR.
  fail->moveBefore(&fn.getBody(), fn.getBody().end());
  return success();
}

void Lowerer::addManifest(StringRef text) {
  std::string s = (text + Twine('\0')).str();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(out.getBody());
  LLVM::GlobalOp::create(
      b, out.getLoc(),
      LLVM::LLVMArrayType::get(IntegerType::get(out.getContext(), 8), s.size()),
      /*isConstant=*/true, LLVM::Linkage::External, "infir2_model_manifest",
      b.getStringAttr(s));
}

} // namespace

FailureOr<OwningOpRef<ModuleOp>> lowering::lowerToLLVM(ModuleOp module,
                                                       const ModelPlan &plan) {
  MLIRContext *ctx = module.getContext();
  ctx->getOrLoadDialect<LLVM::LLVMDialect>();
  OwningOpRef<ModuleOp> out = ModuleOp::create(module.getLoc());
  Lowerer lowerer(*out, plan);
  for (const FunctionPlan &f : plan.functions)
    if (failed(lowerer.lowerFunction(f)))
      return failure();
  lowerer.addManifest(buildManifest(plan));
  return out;
}

LogicalResult lowering::emitLLVM(ModuleOp llvmModule, StringRef path,
                                 bool emitObject) {
  MLIRContext *ctx = llvmModule.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> m =
      translateModuleToLLVMIR(llvmModule, llvmContext, "infir2_model");
  if (!m)
    return llvmModule.emitError() << "translation to LLVM IR failed";

  std::error_code ec;
  auto file =
      std::make_unique<llvm::ToolOutputFile>(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvmModule.emitError()
           << "cannot write '" << path << "': " << ec.message();
  if (!emitObject) {
    m->print(file->os(), nullptr);
    file->keep();
    return success();
  }
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvmModule.emitError()
           << "no LLVM target for " << triple.str() << ": " << error;
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, "generic", "", options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Less));
  m->setTargetTriple(triple);
  m->setDataLayout(tm->createDataLayout());
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, file->os(), nullptr,
                              llvm::CodeGenFileType::ObjectFile))
    return llvmModule.emitError() << "the LLVM target cannot emit objects";
  pm.run(*m);
  file->keep();
  return success();
}
