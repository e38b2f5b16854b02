//===- ConvertInfir2rtToLLVM.cpp - Runtime calls in the LLVM dialect -----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Conversion/Passes.h"

#include "infir2/Dialect/Runtime/IR/RuntimeOps.h"
#include "infir2/runtime/ABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <cstring>

namespace infir2 {
#define GEN_PASS_DEF_CONVERTINFIR2RTTOLLVMPASS
#include "infir2/Conversion/Passes.h.inc"
} // namespace infir2

using namespace mlir;
using namespace infir2;

namespace {

// The descriptor geometry and element type codes come from the runtime's
// own header (runtime/include/infir2/runtime/ABI.h); infir2rt.call's
// verifier holds entry names to its one list (ABI.def).
constexpr int64_t kMaxRank = INFIR2RT_MAX_RANK,
                  kOperandWords = INFIR2RT_OPERAND_WORDS;
static_assert(kOperandWords == 5 + kMaxRank, "descriptor layout of ABI.h");

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

class Lowerer {
public:
  explicit Lowerer(ModuleOp out) : b(out.getContext()), out(out) {
    b.setInsertionPointToEnd(out.getBody());
    ptr = LLVM::LLVMPointerType::get(out.getContext());
    i32 = b.getI32Type();
  }

  LogicalResult lowerFunction(func::FuncOp fn);
  void addManifest(StringRef text);

private:
  LLVM::LLVMFuncOp entryPoint(StringRef name);
  Value global(Location loc, StringRef prefix, Attribute value, Type type);
  FailureOr<SmallVector<int64_t>> descriptor(rtir::CallOp call);
  void emitCall(Location loc, StringRef entry, ArrayRef<int64_t> desc,
                StringRef where, Value ctx, Block *fail);

  OpBuilder b;
  ModuleOp out;
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

FailureOr<SmallVector<int64_t>> Lowerer::descriptor(rtir::CallOp call) {
  SmallVector<int64_t> words = {int64_t(call.getBuffers().size()),
                                int64_t(call.getValues().size())};
  for (auto buffer : call.getBuffers().getAsRange<rtir::BufferAttr>()) {
    RankedTensorType type = buffer.getType();
    FailureOr<int64_t> dtype = dtypeCode(call, type.getElementType());
    if (failed(dtype))
      return failure();
    words.push_back(buffer.getRegion() == rtir::Region::scratch
                        ? INFIR2RT_SCRATCH
                        : INFIR2RT_STATE);
    words.push_back(*dtype);
    words.push_back(type.getRank());
    words.push_back(buffer.getOffset());
    words.push_back(type.getNumElements());
    for (int64_t i = 0; i < kMaxRank; ++i)
      words.push_back(i < type.getRank() ? type.getDimSize(i) : 1);
  }
  for (double a : call.getValues())
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

LogicalResult Lowerer::lowerFunction(func::FuncOp f) {
  Location loc = f.getLoc();
  if (!llvm::hasSingleElement(f.getBody()) || f.getNumArguments() ||
      f.getNumResults())
    return f.emitOpError() << "expects a single-block function of "
                              "infir2rt.call ops, without arguments or results";
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(f);
  auto fn = LLVM::LLVMFuncOp::create(b, loc, f.getSymName(),
                                     LLVM::LLVMFunctionType::get(i32, {ptr}));
  Block *entry = fn.addEntryBlock(b);
  Value ctx = entry->getArgument(0);
  Block *fail = b.createBlock(&fn.getBody(), fn.getBody().end(), {i32}, {loc});
  LLVM::ReturnOp::create(b, loc, fail->getArgument(0));
  b.setInsertionPointToEnd(entry);
  for (Operation &op : f.getBody().front().without_terminator()) {
    auto call = dyn_cast<rtir::CallOp>(op);
    if (!call)
      return op.emitOpError() << "cannot be lowered to runtime calls";
    FailureOr<SmallVector<int64_t>> desc = descriptor(call);
    if (failed(desc))
      return failure();
    emitCall(call.getLoc(), call.getEntry(), *desc, call.getWhere(), ctx, fail);
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

struct ConvertInfir2rtToLLVMPass
    : public infir2::impl::ConvertInfir2rtToLLVMPassBase<
          ConvertInfir2rtToLLVMPass> {
  void runOnOperation() override;
};

void ConvertInfir2rtToLLVMPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto manifest = module->getAttrOfType<StringAttr>(
      rtir::RuntimeDialect::getManifestAttrName());
  if (!manifest) {
    module.emitError() << "expects the '"
                       << rtir::RuntimeDialect::getManifestAttrName()
                       << "' module attribute (run --infir2-lower-to-runtime "
                          "first)";
    return signalPassFailure();
  }
  Lowerer lowerer(module);
  SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
  for (func::FuncOp fn : functions) {
    if (failed(lowerer.lowerFunction(fn)))
      return signalPassFailure();
    fn.erase();
  }
  lowerer.addManifest(manifest.getValue());
  module->removeAttr(rtir::RuntimeDialect::getManifestAttrName());
}

} // namespace
