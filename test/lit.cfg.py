# -*- Python -*-
# The InfiR2 lit suite: FileCheck tests of infir2-opt and, later, the other tools.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "InfiR2"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.infir2_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Unit", "Inputs", "python"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
# Debian's interpreter, which sees Debian's python3-torch (a pyenv python3 on
# PATH may not).
config.substitutions.append(("%torch-python", "/usr/bin/python3"))
config.substitutions.append(("%test-python", os.path.join(config.test_source_root, "python")))
config.substitutions.append(("%examples", os.path.join(config.infir2_src_root, "examples")))
# The build tree (test/package installs from it).
config.substitutions.append(("%infir2-build", config.infir2_obj_root))
# Real English text for trainer tests that need some (the README itself).
config.substitutions.append(("%text", os.path.join(config.infir2_src_root, "README.md")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["infir2-opt", "infir2-import", "infir2-run", "infir2-compile", "infir2-capi-test",
     "infir2-data", "infir2-bisect", "infir2-gemm-peak"],
    [config.infir2_tools_dir, config.llvm_tools_dir])

# The plugin for upstream mlir-opt, and that mlir-opt: the one of the LLVM
# InfiR2 is built against (Debian's mlir-opt-22 is a link to it).
config.substitutions.append(
    ("%infir2_plugin", os.path.join(config.infir2_lib_dir, "libInfiR2Plugin.so")))
# In the sanitizer build the plugin is instrumented and Debian's mlir-opt is
# not: the sanitizers' runtime must be loaded first, so it is preloaded.
_mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
if config.infir2_sanitize:
    _mlir_opt = "env LD_PRELOAD=%s %s" % (config.infir2_asan_runtime, _mlir_opt)
# A downstream project built against the installed package (test/package)
# links its instrumented libraries: with the same compiler and sanitizers.
_embed_toolchain = ""
if config.infir2_sanitize:
    _embed_toolchain = '-DCMAKE_CXX_COMPILER=%s "-DCMAKE_CXX_FLAGS=%s"' % (
        config.infir2_cxx_compiler, config.infir2_sanitizer_flags)
config.substitutions.append(("%embed-toolchain", _embed_toolchain))
llvm_config.add_tool_substitutions(
    [ToolSubst("mlir-opt-22", command=_mlir_opt),
     "llvm-nm", "llvm-readelf"],
    [config.llvm_tools_dir])

# The sanitizer build: how the sanitizers report (scripts/sanitizer-env.sh)
# reaches every tool and trainer the tests run.
for _var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
             "OMPI_MCA_mca_base_component_disable_dlclose",
             "PMIX_MCA_mca_base_component_disable_dlclose",
             "OMPI_MCA_mca_base_env_list"):
    if _var in os.environ:
        config.environment[_var] = os.environ[_var]

# Data-parallel trainer tests need MPI (trainers built with it, and mpirun).
# mpirun runs as root here only when told it may.
if config.infir2_have_mpi:
    config.available_features.add("mpi")
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"

# GPU tests (REQUIRES: cuda-gpu) run only where the CUDA backend can: the
# probe says which GPU, or why none; without one they are reported
# UNSUPPORTED (ctest: Skipped) with that reason.
probe = os.path.join(config.infir2_tools_dir, "infir2-cuda-probe")
if os.path.exists(probe):
    config.available_features.add("cuda-backend")
    import subprocess
    result = subprocess.run([probe], capture_output=True, text=True)
    if result.returncode == 0:
        config.available_features.add("cuda-gpu")
        lit_config.note("GPU tests run on " + result.stdout.strip())
    else:
        lit_config.note("GPU tests are skipped: " + result.stdout.strip())
else:
    lit_config.note("GPU tests are skipped: InfiR2 was built without the CUDA backend")

# The memory plan's HTML page is opened in headless Chromium (Debian's
# `chromium`, installed by scripts/install-deps.sh); without it that check is
# reported UNSUPPORTED.
import shutil
if shutil.which("chromium"):
    config.available_features.add("chromium")
else:
    lit_config.note("the HTML report's browser check is skipped: no chromium")
