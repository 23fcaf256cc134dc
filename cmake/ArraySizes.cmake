# SPDX-License-Identifier: Apache-2.0
# The array sizes are listed once, in hw/spec/systole/spec.h
# (SYSTOLE_ARRAY_SIZES, SYSTOLE_HW_EMU_SIZES, one line each); this reads a
# list from there, so the Verilator builds follow the same list as the C++
# dispatch.
function(systole_array_sizes macro out)
  set(header ${PROJECT_SOURCE_DIR}/hw/spec/systole/spec.h)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${header})
  file(STRINGS ${header} line REGEX "^#define ${macro}\\(X\\) ")
  string(REGEX MATCHALL "X\\([0-9]+\\)" entries "${line}")
  set(sizes)
  foreach(entry IN LISTS entries)
    string(REGEX REPLACE "X\\(([0-9]+)\\)" "\\1" size "${entry}")
    list(APPEND sizes ${size})
  endforeach()
  if(NOT sizes)
    message(FATAL_ERROR "${header}: no one-line '#define ${macro}(X) X(4) ...' to read the array sizes from")
  endif()
  set(${out} ${sizes} PARENT_SCOPE)
endfunction()
