//===- infir2-capi-test.c - InfiR2's C API, used from C -------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Compiled as C, so that the headers are known to be C. Parses the model in
// argv[1], runs the FP8 recipe on it, counts its GEMMs through the generic C
// API (and through infir2CountGemms), then passes bad option strings and
// prints the diagnostics the context's handler receives. capi.test checks the
// output.
//
//===----------------------------------------------------------------------===//

#include "infir2-c/Dialects.h"
#include "infir2-c/Pipelines.h"
#include "infir2-c/Registration.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <string.h>

static void printToFile(MlirStringRef text, void *userData) {
  fwrite(text.data, 1, text.length, (FILE *)userData);
}

/// Prints every diagnostic as "diagnostic: <message>", on stdout so that the
/// test sees them in order with the rest.
static MlirLogicalResult handleDiagnostic(MlirDiagnostic diagnostic,
                                          void *userData) {
  int *count = (int *)userData;
  ++*count;
  printf("diagnostic: ");
  mlirDiagnosticPrint(diagnostic, printToFile, stdout);
  printf("\n");
  return mlirLogicalResultSuccess();
}

typedef MlirLogicalResult (*RunPipeline)(MlirModule, MlirStringRef);

typedef struct NamedCount {
  MlirStringRef name;
  intptr_t count;
} NamedCount;

static MlirWalkResult countIfNamed(MlirOperation op, void *userData) {
  NamedCount *counted = (NamedCount *)userData;
  if (mlirStringRefEqual(mlirIdentifierStr(mlirOperationGetName(op)),
                         counted->name))
    ++counted->count;
  return MlirWalkResultAdvance;
}

/// How many ops named `name` `root` holds, through the generic C API.
static long countOps(MlirOperation root, const char *name) {
  NamedCount counted = {mlirStringRefCreateFromCString(name), 0};
  mlirOperationWalk(root, countIfNamed, &counted, MlirWalkPreOrder);
  return (long)counted.count;
}

/// Parses the model and runs a pipeline on it with `options`; prints whether
/// it succeeded and returns the module (null on failure).
static MlirModule parseAndRun(MlirContext ctx, const char *path,
                              RunPipeline run, const char *pipeline,
                              const char *options) {
  MlirModule module =
      mlirModuleCreateParseFromFile(ctx, mlirStringRefCreateFromCString(path));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "cannot parse '%s'\n", path);
    return module;
  }
  MlirLogicalResult result =
      run(module, mlirStringRefCreateFromCString(options));
  printf("%s '%s': %s\n", pipeline, options,
         mlirLogicalResultIsSuccess(result) ? "succeeded" : "failed");
  if (mlirLogicalResultIsFailure(result)) {
    mlirModuleDestroy(module);
    return (MlirModule){NULL};
  }
  return module;
}

/// Runs a pipeline with a bad option string on `module`: it must fail with a
/// diagnostic and leave the module as it was.
static int runBadOptions(RunPipeline run, const char *pipeline,
                         MlirModule module, const char *options,
                         int *diagnostics) {
  int before = *diagnostics;
  MlirLogicalResult result =
      run(module, mlirStringRefCreateFromCString(options));
  printf("%s '%s': %s, %d diagnostic(s)\n", pipeline, options,
         mlirLogicalResultIsFailure(result) ? "failed" : "succeeded",
         *diagnostics - before);
  return mlirLogicalResultIsFailure(result) && *diagnostics > before ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s model.mlir\n", argv[0]);
    return 2;
  }
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  infir2RegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  // Twice, to show that a second call is harmless.
  infir2RegisterAllPasses();
  infir2RegisterAllPasses();

  // The dialect handles.
  MlirDialect fp8 =
      mlirDialectHandleLoadDialect(mlirGetDialectHandle__fp8__(), ctx);
  MlirStringRef fp8Name = mlirDialectGetNamespace(fp8);
  printf("loaded dialect: %.*s\n", (int)fp8Name.length, fp8Name.data);
  MlirStringRef irName =
      mlirDialectHandleGetNamespace(mlirGetDialectHandle__infir2__());
  MlirStringRef rtName =
      mlirDialectHandleGetNamespace(mlirGetDialectHandle__infir2rt__());
  printf("dialect handles: %.*s %.*s\n", (int)irName.length, irName.data,
         (int)rtName.length, rtName.data);

  int diagnostics = 0;
  mlirContextAttachDiagnosticHandler(ctx, handleDiagnostic, &diagnostics, NULL);

  MlirModule module = mlirModuleCreateParseFromFile(
      ctx, mlirStringRefCreateFromCString(argv[1]));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "cannot parse '%s'\n", argv[1]);
    mlirContextDestroy(ctx);
    return 1;
  }
  MlirOperation moduleOp = mlirModuleGetOperation(module);

  // Bad option strings first: they must fail before any work.
  int status = 0;
  status |= runBadOptions(infir2RunFP8Recipe, "fp8-recipe", module,
                          "granularity=nvfp4", &diagnostics);
  status |= runBadOptions(infir2RunFP8Recipe, "fp8-recipe", module,
                          "format=e4m3 bogus-key=1", &diagnostics);
  status |= runBadOptions(infir2RunFP8Recipe, "fp8-recipe", module, "beta1=abc",
                          &diagnostics);
  status |= runBadOptions(infir2RunFP8Recipe, "fp8-recipe", module, "beta1=1.5",
                          &diagnostics);
  status |= runBadOptions(infir2RunBF16Recipe, "bf16-recipe", module,
                          "optimizer=adam", &diagnostics);
  status |= runBadOptions(infir2RunTrainerPipeline, "infir2-trainer", module,
                          "stop-after=linker", &diagnostics);
  printf("after the bad options: func.func %ld, fp8.scaled_matmul %ld\n",
         countOps(moduleOp, "func.func"),
         countOps(moduleOp, "fp8.scaled_matmul"));
  mlirModuleDestroy(module);

  // The FP8 recipe: its GEMMs by name through the generic C API, and by
  // where they run through infir2CountGemms.
  module = parseAndRun(ctx, argv[1], infir2RunFP8Recipe, "fp8-recipe", "");
  if (mlirModuleIsNull(module)) {
    mlirContextDestroy(ctx);
    return 1;
  }
  moduleOp = mlirModuleGetOperation(module);
  printf("fp8.scaled_matmul: %ld\n", countOps(moduleOp, "fp8.scaled_matmul"));
  printf("infir2.matmul: %ld\n", countOps(moduleOp, "infir2.matmul"));
  Infir2GemmCounts gemms = infir2CountGemms(moduleOp);
  printf("infir2CountGemms: fp8 %ld, high precision %ld\n", (long)gemms.fp8,
         (long)gemms.highPrecision);
  printf("module verifies: %s\n", mlirOperationVerify(moduleOp) ? "yes" : "no");
  mlirModuleDestroy(module);

  // The baseline: every GEMM in high precision.
  module = parseAndRun(ctx, argv[1], infir2RunBF16Recipe, "bf16-recipe", "");
  if (mlirModuleIsNull(module)) {
    mlirContextDestroy(ctx);
    return 1;
  }
  gemms = infir2CountGemms(mlirModuleGetOperation(module));
  printf("bf16 infir2CountGemms: fp8 %ld, high precision %ld\n",
         (long)gemms.fp8, (long)gemms.highPrecision);
  mlirModuleDestroy(module);

  // The whole way to the LLVM dialect.
  module =
      parseAndRun(ctx, argv[1], infir2RunTrainerPipeline, "infir2-trainer", "");
  if (mlirModuleIsNull(module)) {
    mlirContextDestroy(ctx);
    return 1;
  }
  printf("trainer llvm.func: %ld\n",
         countOps(mlirModuleGetOperation(module), "llvm.func"));
  mlirModuleDestroy(module);

  // infir2RegisterAllPasses made the pipelines known by name to the generic
  // C API's pipeline parser.
  MlirPassManager pm = mlirPassManagerCreateOnOperation(
      ctx, mlirStringRefCreateFromCString("builtin.module"));
  MlirLogicalResult parsed = mlirParsePassPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString(
          "builtin.module(fp8-recipe{granularity=tensorwise},cse)"),
      printToFile, stderr);
  printf("parse pipeline by name: %s\n",
         mlirLogicalResultIsSuccess(parsed) ? "succeeded" : "failed");
  mlirPassManagerDestroy(pm);

  mlirContextDestroy(ctx);
  printf("diagnostics in all: %d\n", diagnostics);
  return status;
}
