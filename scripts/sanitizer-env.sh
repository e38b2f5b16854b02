# Sourced by test.sh --sanitize and fuzz.sh: how the sanitizers report.
# Every test (lit passes these through, test/lit.cfg.py) and every fuzzer
# runs with them.
_infir2_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# A finding ends the process with a stack; UBSan's too
# (-fno-sanitize-recover=all). allow_user_poisoning=0: LLVM's
# BumpPtrAllocator poisons its free slab space when inlined into our
# instrumented code, but Debian's uninstrumented libMLIR/libLLVM code
# allocates from the same slabs without unpoisoning, so every MLIRContext
# would report a false use-after-poison.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Leaks of Open MPI's own start-up, not ours: see the file.
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$_infir2_root/scripts/lsan.supp:print_suppressions=0}
unset _infir2_root
# Under mpirun: Open MPI keeps its components loaded (their frames keep
# their names, for lsan.supp), and its ranks unwind malloc's stacks the slow,
# exact way: Open MPI is built without frame pointers, and the fast unwinder
# stops before reaching the Open MPI frame a suppression names. Only the
# ranks pay for it (mca_base_env_list sets their environment).
export OMPI_MCA_mca_base_component_disable_dlclose=1
export PMIX_MCA_mca_base_component_disable_dlclose=1
export OMPI_MCA_mca_base_env_list="LSAN_OPTIONS=$LSAN_OPTIONS:fast_unwind_on_malloc=0"
