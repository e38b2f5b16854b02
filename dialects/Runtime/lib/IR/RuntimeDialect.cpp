//===- RuntimeDialect.cpp - The infir2rt dialect --------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"
#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.h"
#include "infir2/Dialect/Runtime/IR/RuntimeInterfaces.h"
#include "infir2/Dialect/Runtime/IR/RuntimeOps.h"
#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Signature.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace infir2::rtir;

#include "infir2/Dialect/Runtime/IR/RuntimeDialect.cpp.inc"
#include "infir2/Dialect/Runtime/IR/RuntimeEnums.cpp.inc"
#include "infir2/Dialect/Runtime/IR/RuntimeInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.cpp.inc"

#define GET_OP_CLASSES
#include "infir2/Dialect/Runtime/IR/RuntimeOps.cpp.inc"

void RuntimeDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "infir2/Dialect/Runtime/IR/RuntimeOps.cpp.inc"
      >();
}

void RuntimeDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.cpp.inc"
      >();
}

LogicalResult BufferAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 Region, int64_t offset,
                                 RankedTensorType type) {
  if (offset < 0)
    return emitError() << "expects a non-negative offset, got " << offset;
  if (!type.hasStaticShape())
    return emitError() << "expects a statically shaped tensor, got " << type;
  if (!type.getElementType().isIntOrFloat())
    return emitError() << "expects integer or floating-point elements, got "
                       << type;
  if (type.getRank() > INFIR2RT_MAX_RANK)
    return emitError() << "expects a rank of at most "
                       << static_cast<int64_t>(INFIR2RT_MAX_RANK)
                       << " (the runtime's descriptor), got " << type.getRank();
  return success();
}

namespace {
/// An infir2rt.call as infir2::rt::checkSignature sees it.
struct CallView {
  ArrayAttr buffers;
  ArrayRef<double> values;
  int64_t operandCount() const { return buffers.size(); }
  int64_t attrCount() const { return values.size(); }
  int64_t rank(int64_t i) const {
    return cast<BufferAttr>(buffers[i]).getType().getRank();
  }
  double attr(int64_t i) const { return values[i]; }
};
} // namespace

LogicalResult CallOp::verify() {
  // The entry points are the runtime's own list, each with its signature.
  static const llvm::StringMap<int> entries = [] {
    llvm::StringMap<int> m;
#define INFIR2RT_ENTRY(n, operands, attributes, doc)                           \
  m[#n] = INFIR2RT_ENTRY_##n;
#include "infir2/runtime/ABI.def"
    return m;
  }();
  auto entry = entries.find(getEntry());
  if (entry == entries.end())
    return emitOpError() << "calls '" << getEntry()
                         << "', which runtime/include/infir2/runtime/ABI.def "
                            "does not list";
  if (getBuffers().empty())
    return emitOpError() << "expects at least one buffer";
  std::string why;
  if (!infir2::rt::checkSignature(entry->second,
                                  CallView{getBuffers(), getValues()}, why))
    return emitOpError() << "does not match its entry point: " << why;
  return success();
}

LogicalResult SlotAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               SlotKind kind, StringRef name, int64_t offset,
                               RankedTensorType type, Attribute init) {
  if (name.empty())
    return emitError() << "expects a slot name";
  if (failed(BufferAttr::verify(emitError, Region::state, offset, type)))
    return failure();
  if (init && kind != SlotKind::param)
    return emitError() << "expects an initialization only on a param slot, "
                          "not on "
                       << stringifySlotKind(kind) << " '" << name << "'";
  return success();
}

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t stateBytes, int64_t scratchBytes,
                               int64_t batch, int64_t seq, int64_t vocab,
                               int64_t zero1WorldSize, ArrayAttr slots) {
  for (auto [name, v] : {std::pair<StringRef, int64_t>{"state_bytes",
                                                       stateBytes},
                         {"scratch_bytes", scratchBytes},
                         {"zero1_world_size", zero1WorldSize}})
    if (v < 0)
      return emitError() << "expects a non-negative " << name << ", got " << v;
  for (auto [name, v] : {std::pair<StringRef, int64_t>{"batch", batch},
                         {"seq", seq},
                         {"vocab", vocab}})
    if (v <= 0)
      return emitError() << "expects a positive " << name << ", got " << v;
  for (Attribute a : slots) {
    auto slot = dyn_cast<SlotAttr>(a);
    if (!slot)
      return emitError() << "expects slots to be #infir2rt.slot, got " << a;
    int64_t bytes =
        slot.getType().getNumElements() *
        std::max<int64_t>(1, slot.getType().getElementTypeBitWidth() / 8);
    if (slot.getOffset() + bytes > stateBytes)
      return emitError() << "slot '" << slot.getName()
                         << "' ends past the state region (" << stateBytes
                         << " bytes)";
  }
  return success();
}

/// `attr` as an array of one #infir2rt.buffer per value of `values`, each of
/// its value's type.
static LogicalResult verifyBuffers(Operation *op, NamedAttribute attr,
                                   TypeRange types, StringRef what) {
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!array || array.size() != types.size() ||
      !llvm::all_of(array, [](Attribute a) { return isa<BufferAttr>(a); }))
    return op->emitOpError()
           << "expects '" << attr.getName().getValue() << "' to be an array of "
           << types.size() << " #infir2rt.buffer, one per " << what;
  for (auto [i, a, t] : llvm::enumerate(array, types))
    if (cast<BufferAttr>(a).getType() != t)
      return op->emitOpError()
             << "has a buffer of type " << cast<BufferAttr>(a).getType()
             << " for " << what << " #" << i << " of type " << t;
  return success();
}

LogicalResult RuntimeDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == getBuffersAttrName())
    return verifyBuffers(op, attr, op->getResultTypes(), "result");
  if (name == getCopyOutAttrName()) {
    if (!op->hasTrait<OpTrait::ReturnLike>() ||
        !isa<FunctionOpInterface>(op->getParentOp()))
      return op->emitOpError()
             << "expects '" << name << "' on a function's return only";
    if (failed(verifyBuffers(op, attr, op->getOperandTypes(), "operand")))
      return failure();
    for (Attribute a : cast<ArrayAttr>(attr.getValue()))
      if (cast<BufferAttr>(a).getRegion() != Region::state)
        return op->emitOpError()
               << "copies a result out to " << a
               << ", which is not in the state region";
    return success();
  }
  if (name == getPlanAttrName() || name == getManifestAttrName()) {
    if (!isa<ModuleOp>(op))
      return op->emitOpError() << "expects '" << name << "' on a module only";
    if (name == getPlanAttrName() ? !isa<PlanAttr>(attr.getValue())
                                  : !isa<StringAttr>(attr.getValue()))
      return op->emitOpError()
             << "expects '" << name << "' to be "
             << (name == getPlanAttrName() ? "an #infir2rt.plan" : "a string");
    return success();
  }
  if (name == getSymbolAttrName()) {
    auto symbol = dyn_cast<StringAttr>(attr.getValue());
    if (!symbol || !llvm::is_contained(getStepSymbols(), symbol.getValue()))
      return op->emitOpError()
             << "expects '" << name << "' to be one of the steps a trainer "
             << "calls: " << llvm::join(getStepSymbols(), ", ");
    return success();
  }
  if (name == getScratchBytesAttrName()) {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!bytes || bytes.getInt() < 0)
      return op->emitOpError()
             << "expects '" << name << "' to be a non-negative integer";
    return success();
  }
  return op->emitOpError() << "has an unknown infir2rt attribute '" << name
                           << "'";
}

LogicalResult RuntimeDialect::verifyRegionArgAttribute(Operation *op,
                                                       unsigned region,
                                                       unsigned arg,
                                                       NamedAttribute attr) {
  if (attr.getName() != getBufferAttrName())
    return op->emitOpError() << "has an unknown infir2rt argument attribute '"
                             << attr.getName().getValue() << "'";
  auto buffer = dyn_cast<BufferAttr>(attr.getValue());
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn || region != 0 || fn.isExternal())
    return op->emitOpError() << "expects '" << getBufferAttrName()
                             << "' on the arguments of a function with a body";
  Type type = fn.getArgumentTypes()[arg];
  if (!buffer || buffer.getType() != type)
    return op->emitOpError()
           << "expects argument #" << arg << "'s '" << getBufferAttrName()
           << "' to be an #infir2rt.buffer of its type " << type;
  return success();
}
