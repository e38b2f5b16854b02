//===- Infir2Dialect.cpp - The infir2 dialect and its attributes ----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "infir2/Dialect/Infir2/IR/Infir2Dialect.h"
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.h"
#include "infir2/Dialect/Infir2/IR/Infir2Ops.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace infir2;

#include "infir2/Dialect/Infir2/IR/Infir2Dialect.cpp.inc"
#include "infir2/Dialect/Infir2/IR/Infir2Enums.cpp.inc"
#include "infir2/Dialect/Infir2/IR/Infir2Interfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.cpp.inc"

void Infir2Dialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "infir2/Dialect/Infir2/IR/Infir2Ops.cpp.inc"
      >();
  registerAttributes();
}

void Infir2Dialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "infir2/Dialect/Infir2/IR/Infir2Attrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ParamAttr
//===----------------------------------------------------------------------===//

// Syntax: `<"name", zeros | ones | normal(std = S)>`.
Attribute ParamAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseLess() || parser.parseString(&name) || parser.parseComma())
    return {};
  SMLoc ruleLoc = parser.getCurrentLocation();
  StringRef rule;
  if (parser.parseKeyword(&rule))
    return {};
  std::optional<InitKind> init = symbolizeInitKind(rule);
  if (!init) {
    parser.emitError(ruleLoc, "unknown initialization rule '")
        << rule << "' (expected zeros, ones or normal)";
    return {};
  }
  double stddev = 0.0;
  if (*init == InitKind::normal) {
    if (parser.parseLParen() || parser.parseKeyword("std") ||
        parser.parseEqual() || parser.parseFloat(stddev) ||
        parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ParamAttr>(loc, parser.getContext(), name, *init,
                                      llvm::APFloat(stddev));
}

void ParamAttr::print(AsmPrinter &printer) const {
  printer << "<\"" << getName() << "\", " << stringifyInitKind(getInit());
  if (getInit() == InitKind::normal) {
    printer << "(std = ";
    printer.printFloat(getStd());
    printer << ")";
  }
  printer << ">";
}

LogicalResult ParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef name, InitKind init,
                                llvm::APFloat stddev) {
  if (name.empty())
    return emitError() << "parameter name must not be empty";
  double s = stddev.convertToDouble();
  if (init == InitKind::normal && !(s > 0.0 && std::isfinite(s)))
    return emitError() << "normal initialization of '" << name
                       << "' needs a positive, finite std, got " << s;
  if (init != InitKind::normal && s != 0.0)
    return emitError() << "initialization rule '" << stringifyInitKind(init)
                       << "' of '" << name << "' takes no std";
  return success();
}

SmallVector<std::pair<unsigned, ParamAttr>>
infir2::getParams(FunctionOpInterface fn) {
  SmallVector<std::pair<unsigned, ParamAttr>> params;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    if (auto p = fn.getArgAttrOfType<ParamAttr>(
            i, Infir2Dialect::getParamAttrName()))
      params.emplace_back(i, p);
  return params;
}

SmallVector<OpOperand *> infir2::getUsesThroughViews(Value v) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : v.getUses()) {
    if (isa<ReshapeOp, SliceOp, TPCopyOp>(use.getOwner()))
      uses.append(getUsesThroughViews(use.getOwner()->getResult(0)));
    else
      uses.push_back(&use);
  }
  return uses;
}

std::optional<StringRef> infir2::getBatchInputRole(BlockArgument arg) {
  for (OpOperand &use : arg.getUses()) {
    Operation *user = use.getOwner();
    if (auto e = dyn_cast<EmbeddingOp>(user); e && e.getIds() == arg)
      return StringRef("input_ids");
    if (auto r = dyn_cast<RopeOp>(user); r && r.getPositions() == arg)
      return StringRef("positions");
    if (auto a = dyn_cast<AttentionOp>(user); a && a.getSegments() == arg)
      return StringRef("segments");
  }
  for (OpOperand *use : getUsesThroughViews(arg)) {
    auto ce = dyn_cast<CrossEntropyOp>(use->getOwner());
    if (ce && ce.getTargets() == use->get())
      return StringRef("targets");
    if (ce && ce.getLossMask() == use->get())
      return StringRef("loss_mask");
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Function-argument attributes
//===----------------------------------------------------------------------===//

/// The type of argument or result `index` of `op`'s signature (null when `op`
/// is not a function). Declarations have no region arguments, so the
/// signature, not the body, is read.
static Type signatureType(Operation *op, unsigned index, bool isResult) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return {};
  ArrayRef<Type> types = isResult ? fn.getResultTypes() : fn.getArgumentTypes();
  return index < types.size() ? types[index] : Type();
}

/// Checks the training-state attributes that name the parameter a tensor
/// belongs to (`infir2.grad_of`, `infir2.master_of`, ...) and the scalar
/// `infir2.input` roles, the decode step's `infir2.decode` roles and
/// `infir2.cache` names, and the FP8 weight cache's `infir2.fp8_cache`. Returns std::nullopt for other attribute names.
static std::optional<LogicalResult>
verifyStateAttr(Operation *op, StringRef what, unsigned index,
                NamedAttribute attr, Type type) {
  StringRef attrName = attr.getName().getValue();
  if (attrName == Infir2Dialect::getInputAttrName()) {
    auto role = dyn_cast<StringAttr>(attr.getValue());
    if (!role ||
        !llvm::is_contained({StringRef("learning_rate"), StringRef("step"),
                             StringRef("grad_scale")},
                            role.getValue()))
      return op->emitError()
             << "'" << attrName << "' on " << what << " #" << index
             << " must be \"learning_rate\", \"step\" or "
                "\"grad_scale\"";
    return success();
  }
  if (attrName == Infir2Dialect::getDecodeAttrName()) {
    auto role = dyn_cast<StringAttr>(attr.getValue());
    bool isResult = what == "result";
    if (!role || (isResult ? role.getValue() != "logits"
                           : role.getValue() != "input_ids" &&
                                 role.getValue() != "positions"))
      return op->emitError()
             << "'" << attrName << "' on " << what << " #" << index
             << (isResult ? " must be \"logits\""
                          : " must be \"input_ids\" or \"positions\"");
    return success();
  }
  if (attrName == Infir2Dialect::getCacheAttrName()) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue().empty())
      return op->emitError() << "'" << attrName << "' on " << what << " #"
                             << index << " must name the cache";
    auto tensor = dyn_cast_or_null<RankedTensorType>(type);
    if (!tensor || tensor.getRank() != 3 ||
        !isa<FloatType>(tensor.getElementType()))
      return op->emitError() << "cache '" << name.getValue() << "' (" << what
                             << " #" << index
                             << ") must be a float tensor [batch, length, "
                                "width], got "
                             << type;
    return success();
  }
  if (attrName == Infir2Dialect::getFP8CacheAttrName()) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    StringRef param, part;
    if (name)
      std::tie(param, part) = name.getValue().rsplit(':');
    if (!name || param.empty() || (part != "data" && part != "scale"))
      return op->emitError() << "'" << attrName << "' on " << what << " #"
                             << index
                             << " must be \"PARAM:data\" or \"PARAM:scale\"";
    auto tensor = dyn_cast_or_null<RankedTensorType>(type);
    bool fp8 = tensor && isa<Float8E4M3FNType, Float8E5M2Type>(
                             tensor.getElementType());
    bool scale = tensor && isa<Float32Type, Float8E8M0FNUType>(
                               tensor.getElementType());
    if (!tensor || tensor.getRank() != 2 || (part == "data" ? !fp8 : !scale))
      return op->emitError()
             << "FP8 weight cache '" << name.getValue() << "' (" << what
             << " #" << index << ") must be a 2-D "
             << (part == "data" ? "FP8 (f8E4M3FN or f8E5M2)"
                                : "f32 or f8E8M0FNU")
             << " tensor, got " << type;
    return success();
  }
  static const std::pair<StringRef, StringRef> kinds[] = {
      {Infir2Dialect::getGradOfAttrName(), "gradient accumulator"},
      {Infir2Dialect::getMasterOfAttrName(), "master weight"},
      {Infir2Dialect::getMoment1OfAttrName(), "first moment"},
      {Infir2Dialect::getMoment2OfAttrName(), "second moment"},
      {Infir2Dialect::getWorkingCopyOfAttrName(), "working copy"}};
  const auto *kind =
      llvm::find_if(kinds, [&](const auto &k) { return k.first == attrName; });
  if (kind == std::end(kinds))
    return std::nullopt;
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << attrName << "' on " << what << " #"
                           << index << " must name a parameter";
  auto tensor = dyn_cast_or_null<RankedTensorType>(type);
  // Working copies have the forward's precision; moments are FP32 or BF16
  // (optimizer-state=bf16); masters and gradient accumulators are FP32.
  bool isWorkingCopy = attrName == Infir2Dialect::getWorkingCopyOfAttrName();
  bool isMoment = attrName == Infir2Dialect::getMoment1OfAttrName() ||
                  attrName == Infir2Dialect::getMoment2OfAttrName();
  if (!tensor || (!isWorkingCopy && !tensor.getElementType().isF32() &&
                  !(isMoment && tensor.getElementType().isBF16())))
    return op->emitError() << kind->second << " of '" << name.getValue()
                           << "' (" << what << " #" << index << ") must be an "
                           << (isMoment ? "f32 or bf16" : "f32")
                           << " tensor, got " << type;
  return success();
}

LogicalResult Infir2Dialect::verifyRegionArgAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned argIndex,
                                                      NamedAttribute attr) {
  if (std::optional<LogicalResult> r =
          verifyStateAttr(op, "argument", argIndex, attr,
                          signatureType(op, argIndex, /*isResult=*/false)))
    return *r;
  if (attr.getName() == getTPShardAttrName()) {
    auto dim = dyn_cast<IntegerAttr>(attr.getValue());
    auto tensor = dyn_cast_or_null<RankedTensorType>(
        signatureType(op, argIndex, /*isResult=*/false));
    if (!dim || !tensor || dim.getInt() < 0 || dim.getInt() >= tensor.getRank())
      return op->emitError()
             << "'" << getTPShardAttrName() << "' on argument #" << argIndex
             << " must be a dimension of the argument's tensor";
    return success();
  }
  if (attr.getName() != getParamAttrName())
    return op->emitError() << "unknown argument attribute '"
                           << attr.getName().getValue() << "' on argument #"
                           << argIndex;
  auto param = dyn_cast<ParamAttr>(attr.getValue());
  if (!param)
    return op->emitError() << "'" << getParamAttrName() << "' on argument #"
                           << argIndex << " must be a #infir2.param, got "
                           << attr.getValue();

  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitError() << "'" << getParamAttrName()
                           << "' is only allowed on function arguments";
  Type type = signatureType(op, argIndex, /*isResult=*/false);
  auto tensor = dyn_cast_or_null<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !isa<BFloat16Type, Float16Type, Float32Type, Float64Type>(
          tensor.getElementType()))
    return op->emitError() << "parameter '" << param.getName()
                           << "' (argument #" << argIndex
                           << ") must be a statically shaped tensor of bf16, "
                              "f16, f32 or f64, got "
                           << type;

  for (unsigned i = 0; i < argIndex; ++i) {
    auto other = fn.getArgAttrOfType<ParamAttr>(i, getParamAttrName());
    if (other && other.getName() == param.getName())
      return op->emitError()
             << "parameter name '" << param.getName() << "' of argument #"
             << argIndex << " is already used by argument #" << i;
  }
  return success();
}

LogicalResult Infir2Dialect::verifyRegionResultAttribute(Operation *op,
                                                         unsigned regionIndex,
                                                         unsigned resultIndex,
                                                         NamedAttribute attr) {
  if (std::optional<LogicalResult> r =
          verifyStateAttr(op, "result", resultIndex, attr,
                          signatureType(op, resultIndex, /*isResult=*/true)))
    return *r;
  return op->emitError() << "'" << attr.getName().getValue()
                         << "' is not allowed on result #" << resultIndex
                         << " (parameters are function arguments)";
}

LogicalResult Infir2Dialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  if (attr.getName() == getGemmRoleAttrName()) {
    auto role = dyn_cast<StringAttr>(attr.getValue());
    if (!role || (role.getValue() != "dgrad" && role.getValue() != "wgrad"))
      return op->emitError() << "'" << getGemmRoleAttrName()
                             << "' must be \"dgrad\" or \"wgrad\"";
    if (!isa<GemmOpInterface>(op))
      return op->emitError() << "'" << getGemmRoleAttrName()
                             << "' is only meaningful on a GEMM";
    return success();
  }
  if (attr.getName() == getGemmGradOperandAttrName()) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || (index.getInt() != 0 && index.getInt() != 1))
      return op->emitError()
             << "'" << getGemmGradOperandAttrName() << "' must be 0 or 1";
    return success();
  }
  if (attr.getName() == getGemmWeightAttrName()) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue().empty())
      return op->emitError()
             << "'" << getGemmWeightAttrName() << "' must name a parameter";
    return success();
  }
  if (attr.getName() == getChunkedAttrName()) {
    if (!isa<LossWeightOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << getChunkedAttrName()
                             << "' is a string on an 'infir2.loss_weight'";
    return success();
  }
  if (attr.getName() == getRecomputeAttrName()) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError()
             << "'" << getRecomputeAttrName() << "' must be a string (why)";
    return success();
  }
  if (attr.getName() == getTensorParallelAttrName()) {
    auto size = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !size || size.getInt() < 2)
      return op->emitError() << "'" << getTensorParallelAttrName()
                             << "' is an integer of at least 2 (the group's "
                                "size) on the module";
    return success();
  }
  if (attr.getName() == getModelConfigAttrName()) {
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << getModelConfigAttrName()
                             << "' belongs on the module";
    auto text = dyn_cast<StringAttr>(attr.getValue());
    llvm::Expected<llvm::json::Value> json =
        text ? llvm::json::parse(text.getValue())
             : llvm::Expected<llvm::json::Value>(llvm::json::Value(nullptr));
    bool isObject = json && json->getAsObject();
    if (!json)
      llvm::consumeError(json.takeError());
    if (!isObject)
      return op->emitError()
             << "'" << getModelConfigAttrName()
             << "' must be a string holding a JSON object (the Hugging Face "
                "config.json)";
    return success();
  }
  return op->emitError() << "unknown attribute '" << attr.getName().getValue()
                         << "' on '" << op->getName() << "'";
}
