# The installed package: `cmake --install build --prefix P` gives
#   P/bin                  the tools
#   P/include/infir2       public headers, dialect headers, generated .inc/.td
#   P/lib                  the libraries and the runtime archives
#   P/lib/infir2           trainer-link.txt (infir2-compile's link, relative)
#   P/lib/cmake/InfiR2     InfiR2Config.cmake, its version file and targets
# and `find_package(InfiR2 0.1 CONFIG REQUIRED)` the namespaced targets
# InfiR2::Dialects, ::Transforms, ::Pipelines, ::Compiler, ::Interpreter,
# ::Import, ::Runtime and ::CAPI (each with what it needs of MLIR). Nothing in it
# names the build tree, so the prefix can move.
include(CMakePackageConfigHelpers)

# Umbrella targets: what a downstream project links, by role.
function(add_infir2_umbrella name)
  set(target InfiR2Umbrella${name})
  add_library(${target} INTERFACE)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_link_libraries(${target} INTERFACE ${ARGN})
  target_include_directories(${target} INTERFACE $<INSTALL_INTERFACE:include>)
  install(TARGETS ${target} EXPORT MLIRTargets)
  add_library(InfiR2::${name} ALIAS ${target})
endfunction()

add_infir2_umbrella(Dialects InfiR2Infir2Dialect InfiR2FP8Dialect
                    InfiR2RuntimeDialect InfiR2Interfaces)
add_infir2_umbrella(Transforms InfiR2UmbrellaDialects InfiR2Transforms
                    InfiR2Conversion)
add_infir2_umbrella(Pipelines InfiR2UmbrellaTransforms InfiR2Pipelines
                    InfiR2Registration)
add_infir2_umbrella(Compiler InfiR2UmbrellaPipelines InfiR2Compiler)
add_infir2_umbrella(Interpreter InfiR2UmbrellaDialects InfiR2Interpreter)
add_infir2_umbrella(Import InfiR2UmbrellaDialects InfiR2Import)
add_infir2_umbrella(Runtime infir2rt_numerics infir2rt_manifest)
add_infir2_umbrella(CAPI InfiR2CAPI)

# Headers: the public ones, each dialect's, and the generated declarations a
# downstream dialect or pass includes (Passes.h.inc, *Ops.h.inc, ...).
set(_infir2_header_patterns FILES_MATCHING PATTERN "*.h" PATTERN "*.td"
    PATTERN "*.inc" PATTERN "*.def" PATTERN "CMakeFiles" EXCLUDE)
install(DIRECTORY include/infir2 ${PROJECT_BINARY_DIR}/include/infir2
        DESTINATION include COMPONENT infir2-headers ${_infir2_header_patterns})
install(DIRECTORY include/infir2-c DESTINATION include
        COMPONENT infir2-headers FILES_MATCHING PATTERN "*.h")
foreach(dialect Infir2 FP8 Runtime)
  install(DIRECTORY dialects/${dialect}/include/infir2
          ${PROJECT_BINARY_DIR}/dialects/${dialect}/include/infir2
          DESTINATION include COMPONENT infir2-headers
          ${_infir2_header_patterns})
endforeach()

set(_infir2_tools infir2-opt infir2-import infir2-run infir2-bisect)
# infir2-gemm-peak measures the machine for --report-step-time=cpu.
foreach(tool infir2-compile infir2-cuda-probe infir2-gemm-peak)
  if(TARGET ${tool})
    list(APPEND _infir2_tools ${tool})
  endif()
endforeach()
install(TARGETS ${_infir2_tools} RUNTIME DESTINATION bin COMPONENT infir2-tools)

install(EXPORT MLIRTargets NAMESPACE InfiR2:: FILE InfiR2Targets.cmake
        DESTINATION lib/cmake/InfiR2 COMPONENT infir2-cmake)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/InfiR2Config.cmake.in
  ${PROJECT_BINARY_DIR}/lib/cmake/InfiR2/InfiR2Config.cmake
  INSTALL_DESTINATION lib/cmake/InfiR2)
# 0.x: a minor version may break the API, so 0.1 accepts 0.1.* only.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/lib/cmake/InfiR2/InfiR2ConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lib/cmake/InfiR2/InfiR2Config.cmake
        ${PROJECT_BINARY_DIR}/lib/cmake/InfiR2/InfiR2ConfigVersion.cmake
        DESTINATION lib/cmake/InfiR2 COMPONENT infir2-cmake)

# The dialect and pass references, generated from ODS (mlir-tblgen
# -gen-dialect-doc / -gen-pass-doc) by every build into build/docs, and
# installed with the package.
add_custom_target(infir2-doc ALL)
add_dependencies(infir2-doc mlir-doc)
install(DIRECTORY ${PROJECT_BINARY_DIR}/docs/ DESTINATION share/doc/infir2
        COMPONENT infir2-doc FILES_MATCHING PATTERN "*.md")
