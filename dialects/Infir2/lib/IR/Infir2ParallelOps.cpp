//===- Infir2ParallelOps.cpp - Verifiers of the tensor-parallel ops -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The verifiers of sequence parallelism's collectives (Infir2ParallelOps.td):
// tp_all_gather and tp_reduce_scatter, whose whole side is `size` times
// their slice side along `dim`.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "Infir2OpVerifiers.h"

using namespace mlir;
using namespace infir2;
using namespace infir2::detail;

/// `whole` is `slice` with dimension `dim` `size` times as large, of the
/// same element type.
static LogicalResult verifySlices(Operation *op, Value slice, Value whole,
                                  int64_t size, int64_t dim) {
  if (dim >= rankOf(slice))
    return op->emitOpError() << "splits dimension " << dim
                             << " of a tensor of rank " << rankOf(slice);
  SmallVector<int64_t> expected(shapeOf(slice));
  expected[dim] *= size;
  if (shapeOf(whole) != ArrayRef<int64_t>(expected) ||
      getElementTypeOrSelf(whole.getType()) !=
          getElementTypeOrSelf(slice.getType()))
    return op->emitOpError()
           << "expects the whole tensor to be the slice with dimension " << dim
           << " " << size << " times as large, of the same element type; got "
           << slice.getType() << " and " << whole.getType();
  return success();
}

LogicalResult TPAllGatherOp::verify() {
  return verifySlices(*this, getInput(), getResult(), int64_t(getSize()),
                      int64_t(getDim()));
}

LogicalResult TPReduceScatterOp::verify() {
  return verifySlices(*this, getResult(), getInput(), int64_t(getSize()),
                      int64_t(getDim()));
}
