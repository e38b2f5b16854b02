# The sanitizer configuration (-DINFIR2_ENABLE_SANITIZERS=ON, clang only):
# every target of the tree built with AddressSanitizer and
# UndefinedBehaviorSanitizer, and the libFuzzer targets of fuzz/.
# scripts/test.sh --sanitize configures it in build-sanitize/.
#
# Every compilation also carries libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link), so that the fuzzers see which branches of our
# libraries an input reaches; only the fuzzers link libFuzzer's main().
#
# -fno-sanitize-recover=all: a UBSan finding aborts, so a test fails on it.
# float-divide-by-zero stays off (it is not in clang's -fsanitize=undefined):
# the runtime produces inf and NaN on purpose (NaN injection, overflow tests).

option(INFIR2_ENABLE_SANITIZERS
       "Build with ASan+UBSan (clang) and build the libFuzzer targets" OFF)

# '|'-separated flags that a trainer's link needs on top of the runtime's
# archives (runtime/CMakeLists.txt): the sanitizers' runtimes.
set(INFIR2_SANITIZER_LINK_FLAGS "")

if(INFIR2_ENABLE_SANITIZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "INFIR2_ENABLE_SANITIZERS needs clang (libFuzzer): "
                        "configure with CC=clang-22 CXX=clang++-22")
  endif()
  set(INFIR2_SANITIZER_FLAGS -fsanitize=address,undefined
      -fno-sanitize-recover=all)
  add_compile_options(${INFIR2_SANITIZER_FLAGS} -fno-omit-frame-pointer
                      -fsanitize=fuzzer-no-link)
  add_link_options(${INFIR2_SANITIZER_FLAGS})
  string(REPLACE ";" "|" INFIR2_SANITIZER_LINK_FLAGS
         "${INFIR2_SANITIZER_FLAGS}")
  message(STATUS "InfiR2: sanitizers ${INFIR2_SANITIZER_FLAGS}")
endif()

# The shared ASan runtime (with UBSan's handlers), which lit preloads into
# Debian's uninstrumented mlir-opt when it loads our instrumented plugin.
set(INFIR2_ASAN_RUNTIME "")
if(INFIR2_ENABLE_SANITIZERS)
  execute_process(
    COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
    OUTPUT_VARIABLE INFIR2_ASAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
