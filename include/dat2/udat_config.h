/*
 * OpenDAT — build-time configuration of the user-level DAT API:
 * the API version a consumer is compiled for, its thread-safety request and
 * whether the extension interface is visible.
 *
 * Independent implementation of the DAT 2.0 API (no reference text reused).
 */
#ifndef OPENDAT_UDAT_CONFIG_H
#define OPENDAT_UDAT_CONFIG_H

/* API version a consumer asks for when it calls dat_ia_open(). */
#define DAT_VERSION_MAJOR 2
#define DAT_VERSION_MINOR 0

/*
 * Consumers ask for a non-thread-safe IA by default; this is part of the
 * registry lookup key, so it must agree with the "nonthreadsafe" dat.conf
 * entries.
 */
#define DAT_THREADSAFE DAT_FALSE

/* The extension interface (dat_extension_op, DAT_EXTENSION...) is on by default. */
#ifndef DAT_EXTENSIONS
#define DAT_EXTENSIONS 1
#endif

#endif /* OPENDAT_UDAT_CONFIG_H */
