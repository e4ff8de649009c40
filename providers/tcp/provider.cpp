// The plugin's two exported entry points (see cmake/provider.map).
#include "tcp/transport.hpp"
#include "util/provider_table.hpp"

OPENDAT_PROVIDER_ENTRY_POINTS(&opendat::tcp::make_transport, &opendat::tcp::kHotEntries)
