//===- RuntimeDialect.cpp - The infir2rt dialect --------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Runtime/IR/RuntimeDialect.h"
#include "infir2/Dialect/Runtime/IR/RuntimeAttrs.h"
#include "infir2/Dialect/Runtime/IR/RuntimeOps.h"
#include "infir2/runtime/ABI.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace infir2::rt;

#include "infir2/Dialect/Runtime/IR/RuntimeDialect.cpp.inc"
#include "infir2/Dialect/Runtime/IR/RuntimeEnums.cpp.inc"

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
  if (type.getRank() > INFIR2RT_MAX_RANK)
    return emitError() << "expects a rank of at most "
                       << static_cast<int64_t>(INFIR2RT_MAX_RANK)
                       << " (the runtime's descriptor), got " << type.getRank();
  return success();
}

LogicalResult CallOp::verify() {
  // The entry points are the runtime's own list.
  static const llvm::StringSet<> entries = {
#define INFIR2RT_ENTRY(n, attributes) #n,
#include "infir2/runtime/ABI.def"
  };
  if (!entries.contains(getEntry()))
    return emitOpError() << "calls '" << getEntry()
                         << "', which runtime/include/infir2/runtime/ABI.def "
                            "does not list";
  if (getBuffers().empty())
    return emitOpError() << "expects at least one buffer";
  return success();
}
