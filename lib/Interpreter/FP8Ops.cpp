//===- FP8Ops.cpp - Interpreter rules of fp8 ops ----------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The rules of the fp8 dialect's ops and the FP8 numerics they follow bit for
// bit (roundToFP8, computeScale): scales and quotients in FP32, conversions
// with round-to-nearest-even and saturation.
//
//===----------------------------------------------------------------------===//

#include "InterpreterImpl.h"

#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace infir2;
using namespace infir2::interp;
using namespace infir2::interp::detail;

//===----------------------------------------------------------------------===//
// FP8 numerics
//===----------------------------------------------------------------------===//

double infir2::interp::roundToFP8(float value, bool e5m2) {
  if (std::isnan(value))
    return value;
  const llvm::fltSemantics &sem =
      e5m2 ? llvm::APFloat::Float8E5M2() : llvm::APFloat::Float8E4M3FN();
  double maxFinite = e5m2 ? 57344.0 : 448.0;
  // Saturate first: the conversion below would otherwise give inf or NaN.
  double clamped = std::clamp<double>(value, -maxFinite, maxFinite);
  llvm::APFloat f(clamped);
  bool losesInfo = false;
  f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return f.convertToDouble();
}

/// Whether `value` rounds beyond the format's largest finite value (which
/// roundToFP8 then clamps it to): saturated.
static bool overflowsFP8(float value, bool e5m2) {
  llvm::APFloat f(static_cast<double>(value));
  bool losesInfo = false;
  llvm::APFloat::opStatus status = f.convert(
      e5m2 ? llvm::APFloat::Float8E5M2() : llvm::APFloat::Float8E4M3FN(),
      llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return (status & llvm::APFloat::opOverflow) != 0;
}

float infir2::interp::computeScale(float amax, float fmtMax, bool pow2) {
  if (amax == 0.0f)
    return 1.0f;
  float s = std::max(amax, kAmaxFloor) / fmtMax;
  if (!pow2)
    return s;
  int e = 0;
  float m = std::frexp(s, &e); // s = m * 2^e, m in [0.5, 1)
  return m == 0.5f ? s : std::ldexp(1.0f, e);
}

float infir2::interp::computeFloorScale(float amax, int emax) {
  if (amax == 0.0f)
    return 1.0f;
  return std::ldexp(1.0f, std::ilogb(std::max(amax, kAmaxFloor)) - emax);
}

//===----------------------------------------------------------------------===//
// Scale blocks
//===----------------------------------------------------------------------===//

namespace {

/// For every element of a tensor of `shape`, the row-major index of the
/// scale block (of `block`) it belongs to.
std::vector<int64_t> blockIndexMap(ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> block) {
  SmallVector<int64_t> scaleShape;
  for (auto [d, b] : llvm::zip_equal(shape, block))
    scaleShape.push_back(d / b);
  SmallVector<int64_t> scaleStrides = stridesOf(scaleShape);
  std::vector<int64_t> map(product(shape));
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0, n = map.size(); flat < n; ++flat) {
    int64_t s = 0;
    for (size_t i = 0; i < shape.size(); ++i)
      s += (idx[i] / block[i]) * scaleStrides[i];
    map[flat] = s;
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
      if (++idx[i] < shape[i])
        break;
      idx[i] = 0;
    }
  }
  return map;
}

std::vector<int64_t> blockIndexMap(Value data,
                                   fp8::GranularityAttrInterface granularity) {
  ArrayRef<int64_t> shape = shapeOf(data);
  // The op verifier has checked that the granularity tiles the shape.
  SmallVector<int64_t> block =
      *granularity.getBlockShape(shape, [] { return InFlightDiagnostic(); });
  return blockIndexMap(shape, block);
}

} // namespace

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

/// The largest magnitude in every scale block of `data`; NaN propagates.
static Tensor blockAmax(const Tensor &x, Value data,
                        fp8::GranularityAttrInterface granularity,
                        ArrayRef<int64_t> scaleShape) {
  std::vector<int64_t> map = blockIndexMap(data, granularity);
  Tensor amax(scaleShape);
  for (int64_t i = 0, n = x.getNumElements(); i < n; ++i) {
    double &a = amax.data[map[i]];
    if (std::isnan(x.data[i]) || std::isnan(a))
      a = std::numeric_limits<double>::quiet_NaN();
    else
      a = std::max(a, std::fabs(x.data[i]));
  }
  return amax;
}

/// data · scale per block: exact in FP64 (FP8 values times FP32 scales).
static Tensor dequantized(const Tensor &q, const Tensor &s, Value data,
                          fp8::GranularityAttrInterface granularity) {
  std::vector<int64_t> map = blockIndexMap(data, granularity);
  Tensor out(q.shape);
  for (int64_t i = 0, n = q.getNumElements(); i < n; ++i)
    out.data[i] = q.data[i] * s.data[map[i]];
  return out;
}

/// Quantizes `x` (the value of `input`, whose shape it has) by `granularity`
/// into `data` and `scale`; fails, naming the block, on a non-finite amax.
static LogicalResult quantizeInto(Operation *op, const Tensor &x, Value input,
                                  fp8::GranularityAttrInterface granularity,
                                  fp8::Format format, fp8::ScaleRule rule,
                                  ArrayRef<int64_t> scaleShape, Tensor &data,
                                  Tensor &scale,
                                  const QuantizationObserver &observer,
                                  bool transposed) {
  // Rounding to FP32 is monotone, so the amax of the FP32 inputs is the FP32
  // rounding of this FP64 amax.
  Tensor amax = blockAmax(x, input, granularity, scaleShape);
  bool e5m2 = format == fp8::Format::e5m2;
  bool pow2 = rule == fp8::ScaleRule::pow2;
  float fmtMax = static_cast<float>(fp8::getMaxFinite(format));
  scale = Tensor(amax.shape);
  for (int64_t b = 0, n = amax.getNumElements(); b < n; ++b) {
    if (!std::isfinite(amax.data[b]))
      return op->emitOpError() << "non-finite amax ("
                               << (std::isnan(amax.data[b]) ? "nan" : "inf")
                               << ") in scale block " << b
                               << " of 'input': refusing to quantize it";
    scale.data[b] =
        rule == fp8::ScaleRule::floor
            ? computeFloorScale(static_cast<float>(amax.data[b]), e5m2 ? 15 : 8)
            : computeScale(static_cast<float>(amax.data[b]), fmtMax, pow2);
  }
  std::vector<int64_t> map = blockIndexMap(input, granularity);
  data = Tensor(x.shape);
  QuantizationRecord record;
  for (int64_t i = 0, n = x.getNumElements(); i < n; ++i) {
    float v = static_cast<float>(x.data[i]),
          scaled = v / static_cast<float>(scale.data[map[i]]);
    data.data[i] = roundToFP8(scaled, e5m2);
    record.amax = std::max(record.amax, std::fabs(double(v)));
    record.maxScaled = std::max(record.maxScaled, std::fabs(double(scaled)));
    if (v != 0.0f) {
      ++record.nonzero;
      record.saturated += overflowsFP8(scaled, e5m2);
      record.flushed += data.data[i] == 0.0;
    }
  }
  if (observer) {
    record.op = op;
    record.transposed = transposed;
    record.shape.assign(x.shape.begin(), x.shape.end());
    record.numel = x.getNumElements();
    auto [lo, hi] = std::minmax_element(scale.data.begin(), scale.data.end());
    record.scaleMin = scale.data.empty() ? 0.0 : *lo;
    record.scaleMax = scale.data.empty() ? 0.0 : *hi;
    observer(record);
  }
  return success();
}

/// The transpose of `x` viewed as a matrix of rows: [T, K] -> [K, T].
static Tensor transposeRows(const Tensor &x) {
  int64_t cols = x.shape.back(), rows = x.getNumElements() / cols;
  Tensor out(ArrayRef<int64_t>{cols, rows});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out.data[j * rows + i] = x.data[i * cols + j];
  return out;
}

LogicalResult Interpreter::quantize(fp8::QuantizeOp op) {
  Tensor data, scale;
  if (failed(quantizeInto(op, get(op.getInput()), op.getInput(),
                          op.getGranularity(), op.getFormat(),
                          op.getScaleRule(), shapeOf(op.getScale()), data,
                          scale, observer, /*transposed=*/false)))
    return failure();
  set(op.getData(), std::move(data));
  set(op.getScale(), std::move(scale));
  return success();
}

LogicalResult Interpreter::quantizeDual(fp8::QuantizeDualOp op) {
  // Defined as two quantize ops: of the input, and of its [K, T] transpose.
  Tensor data, scale, dataT, scaleT;
  if (failed(quantizeInto(op, get(op.getInput()), op.getData(),
                          op.getGranularity(), op.getFormat(),
                          op.getScaleRule(), shapeOf(op.getScale()), data,
                          scale, observer, /*transposed=*/false)) ||
      failed(quantizeInto(op, transposeRows(get(op.getInput())), op.getDataT(),
                          op.getTransposedGranularity(), op.getFormat(),
                          op.getScaleRule(), shapeOf(op.getScaleT()), dataT,
                          scaleT, observer, /*transposed=*/true)))
    return failure();
  set(op.getData(), std::move(data));
  set(op.getScale(), std::move(scale));
  set(op.getDataT(), std::move(dataT));
  set(op.getScaleT(), std::move(scaleT));
  return success();
}

LogicalResult Interpreter::fused(fp8::FusedOp op) {
  // The body's ops, in order; the results are what it yields.
  Block &body = op.getBody().front();
  for (Operation &inner : body.without_terminator())
    if (failed(run(&inner)))
      return failure();
  for (auto [result, value] :
       llvm::zip_equal(op.getResults(), body.getTerminator()->getOperands()))
    set(result, get(value));
  return success();
}

LogicalResult Interpreter::dequantize(fp8::DequantizeOp op) {
  set(op.getResult(), dequantized(get(op.getData()), get(op.getScale()),
                                  op.getData(), op.getGranularity()));
  return success();
}

LogicalResult Interpreter::scaledMatmul(fp8::ScaledMatmulOp op) {
  // The exact product of the dequantized operands: only the sum rounds.
  Tensor a = dequantized(get(op.getLhs()), get(op.getLhsScale()), op.getLhs(),
                         op.getLhsGranularity());
  Tensor b = dequantized(get(op.getRhs()), get(op.getRhsScale()), op.getRhs(),
                         op.getRhsGranularity());
  int64_t k = a.shape.back(), m = a.shape[a.shape.size() - 2];
  int64_t n = b.shape[b.shape.size() - 2];
  int64_t batch = product(ArrayRef<int64_t>(a.shape).drop_back(2));
  bool sharedRhs = b.shape.size() == 2;
  // With an accumulator: acc + the product.
  Tensor out = op.getAcc() ? get(op.getAcc()) : Tensor(shapeOf(op.getResult()));
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double *A = a.data.data() + (p * m + i) * k;
        const double *B = b.data.data() + ((sharedRhs ? 0 : p * n) + j) * k;
        double acc = 0.0;
        for (int64_t l = 0; l < k; ++l)
          acc += A[l] * B[l];
        out.data[(p * m + i) * n + j] += acc;
      }
  set(op.getResult(), std::move(out));
  return success();
}

LogicalResult Interpreter::amax(fp8::AmaxOp op) {
  set(op.getResult(), blockAmax(get(op.getInput()), op.getInput(),
                                op.getGranularity(), shapeOf(op.getResult())));
  return success();
}
