/*
 * OpenDAT — hook for vendor additions to the user-level API.
 *
 * Independent implementation of the DAT 2.0 API. Empty apart from pulling in
 * the common vendor hook; kept so that the header set has the usual shape.
 */
#ifndef OPENDAT_UDAT_VENDOR_SPECIFIC_H
#define OPENDAT_UDAT_VENDOR_SPECIFIC_H

#include <dat2/dat_vendor_specific.h>

#endif /* OPENDAT_UDAT_VENDOR_SPECIFIC_H */
