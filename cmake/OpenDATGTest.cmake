# opendat_gtest_labels(<test-list-var> <label>...)
#
# gtest_discover_tests() flattens its PROPERTIES into one list, so a list-valued property
# such as LABELS "tcp;attack" is split there: the test gets the label "tcp" only, and every
# property after it is read shifted by one ("attack" becomes a property name, the TIMEOUT
# that follows is lost). Give gtest_discover_tests a TEST_LIST name and no LABELS, then
# call this with that name: it adds a CTest include file, read after the one that
# discovered the tests, which sets the labels on exactly those tests.
function(opendat_gtest_labels list_var)
  if(NOT ARGN)
    message(FATAL_ERROR "opendat_gtest_labels(${list_var}): no label given")
  endif()
  string(MAKE_C_IDENTIFIER "${list_var}" _id)
  set(_file "${CMAKE_CURRENT_BINARY_DIR}/${_id}_labels.cmake")
  list(JOIN ARGN ";" _labels)
  file(WRITE "${_file}"
       "if(DEFINED ${list_var})\n"
       "  set_tests_properties(\${${list_var}} PROPERTIES LABELS \"${_labels}\")\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${_file}")
endfunction()

# After discovery, the tests of `list_var` whose names match `regex` run alone
# (RUN_SERIAL): cases that time one connection against another and must not share the
# machine's two CPUs with a parallel test.
function(opendat_gtest_serial list_var regex)
  string(MAKE_C_IDENTIFIER "${list_var}_serial" _id)
  set(_file "${CMAKE_CURRENT_BINARY_DIR}/${_id}.cmake")
  file(WRITE "${_file}"
       "if(DEFINED ${list_var})\n"
       "  foreach(_t IN LISTS ${list_var})\n"
       "    if(_t MATCHES \"${regex}\")\n"
       "      set_tests_properties(\"\${_t}\" PROPERTIES RUN_SERIAL TRUE)\n"
       "    endif()\n"
       "  endforeach()\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${_file}")
endfunction()
