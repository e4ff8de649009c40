/*
 * OpenDAT — hook for vendor additions shared by the kernel and user APIs.
 *
 * Independent implementation of the DAT 2.0 API. No vendor adds anything
 * here today; the file exists so that code including it keeps compiling.
 */
#ifndef OPENDAT_DAT_VENDOR_SPECIFIC_H
#define OPENDAT_DAT_VENDOR_SPECIFIC_H

#endif /* OPENDAT_DAT_VENDOR_SPECIFIC_H */
