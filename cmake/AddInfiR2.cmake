# Thin wrappers over MLIR's CMake helpers, so that each dialect states only what
# differs.

# Generates a dialect's ops, dialect class, enums, attribute definitions and
# generated docs from <Name>Ops.td (which includes the rest), into the target
# InfiR2<Name>IncGen. `mnemonic` is the dialect's name in the IR.
function(add_infir2_dialect name mnemonic)
  set(LLVM_TARGET_DEFINITIONS ${name}Ops.td)
  mlir_tablegen(${name}Ops.h.inc -gen-op-decls)
  mlir_tablegen(${name}Ops.cpp.inc -gen-op-defs)
  mlir_tablegen(${name}Dialect.h.inc -gen-dialect-decls -dialect=${mnemonic})
  mlir_tablegen(${name}Dialect.cpp.inc -gen-dialect-defs -dialect=${mnemonic})
  mlir_tablegen(${name}Enums.h.inc -gen-enum-decls)
  mlir_tablegen(${name}Enums.cpp.inc -gen-enum-defs)
  mlir_tablegen(${name}Attrs.h.inc -gen-attrdef-decls -attrdefs-dialect=${mnemonic})
  mlir_tablegen(${name}Attrs.cpp.inc -gen-attrdef-defs -attrdefs-dialect=${mnemonic})
  # Interface generators emit only what the main file defines, so attribute
  # interfaces are read from <Name>Attrs.td.
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${name}Attrs.td)
    set(LLVM_TARGET_DEFINITIONS ${name}Attrs.td)
    mlir_tablegen(${name}AttrInterfaces.h.inc -gen-attr-interface-decls)
    mlir_tablegen(${name}AttrInterfaces.cpp.inc -gen-attr-interface-defs)
  endif()
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${name}Interfaces.td)
    set(LLVM_TARGET_DEFINITIONS ${name}Interfaces.td)
    mlir_tablegen(${name}Interfaces.h.inc -gen-op-interface-decls)
    mlir_tablegen(${name}Interfaces.cpp.inc -gen-op-interface-defs)
  endif()
  add_public_tablegen_target(InfiR2${name}IncGen)
  add_mlir_doc(${name}Ops ${name}Dialect Dialects/ -gen-dialect-doc -dialect=${mnemonic})
endfunction()
