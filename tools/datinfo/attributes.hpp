// DAT_IA_ATTR / DAT_PROVIDER_ATTR / named attributes -> report nodes.
#pragma once

#include "document.hpp"

#include <dat2/udat.h>

namespace datinfo {

// verbose: every field; otherwise the fields a user looks at first.
Node ia_attr_node(const DAT_IA_ATTR &a, bool verbose);
Node provider_attr_node(const DAT_PROVIDER_ATTR &a, bool verbose);

// A list of DAT_NAMED_ATTR as a map name -> value. The values of "debug_query" and
// "debug_modify" are function pointers, not strings: they are shown as "(function)".
Node named_attrs_node(const DAT_NAMED_ATTR *attrs, DAT_COUNT count);

// Upper bound on the attribute counts datinfo believes: a provider reporting garbage must
// not make it read far past the array.
constexpr DAT_COUNT kMaxNamedAttrs = 4096;

}  // namespace datinfo
