# opendat_dense_code: an interface target that packs the data path's code into fewer cache
# lines. Linked (PRIVATE) by libdat2, the shared provider layer and every provider.
#
# Between two system calls of a polled ping-pong, what the user-space code costs is mostly
# the distinct 64-byte lines and 4 KiB pages it touches, not the instructions it runs: the
# kernel's side of the call evicts the first-level caches, and on machines whose system
# calls flush the TLB (page-table isolation without PCID) every page is a walk
# (docs/benchmarks.md, "What a line costs"). At -O2 GCC starts every function, loop and
# jump target on a 16-byte boundary; on a path made of some forty short functions that
# padding spreads the code over more lines (a send/recv turnaround: 165 code lines with it,
# 158 without). The flags only drop padding: the code and the hot/cold split are the same.
# A compiler that does not take a flag without a warning (clang: the jumps and labels
# ones) does not get it.
include(CheckCXXCompilerFlag)

set(OPENDAT_DENSE_CODE_FLAGS "")
foreach(flag -falign-functions=1 -falign-jumps=1 -falign-loops=1 -falign-labels=1)
  string(MAKE_C_IDENTIFIER "OPENDAT_CXX_HAS${flag}" var)
  check_cxx_compiler_flag("${flag}" ${var})
  if(${var})
    list(APPEND OPENDAT_DENSE_CODE_FLAGS ${flag})
  endif()
endforeach()

add_library(opendat_dense_code INTERFACE)
target_compile_options(opendat_dense_code INTERFACE ${OPENDAT_DENSE_CODE_FLAGS})
