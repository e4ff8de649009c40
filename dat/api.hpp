// The exported C API, declared with default visibility. The project compiles with hidden
// visibility; the version script (libdat2.map) then picks what is actually exported. The
// reference headers carry no visibility attribute, so their declarations are wrapped here:
// every wrapper file must see this header before any other DAT header.
#pragma once

#pragma GCC visibility push(default)
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <dat2/dat_trace.h>

extern "C" {
// Exported by the reference for its providers, but declared in no header (dat-abi.md §3.2).
DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE handle, DAT_IA_HANDLE *ia_out);
}
#pragma GCC visibility pop
