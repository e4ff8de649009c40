/*
 * OpenDAT — mapping of the DAT base types onto the platform (Linux, user space).
 *
 * Independent implementation of the DAT 2.0 API. Only Linux user space is
 * supported; every width below is part of the binary interface.
 */
#ifndef OPENDAT_DAT_PLATFORM_SPECIFIC_H
#define OPENDAT_DAT_PLATFORM_SPECIFIC_H

#if !defined(__linux__)
#error "OpenDAT: only Linux is supported"
#endif

#include <sys/types.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

/* Buffer alignment the providers like best; may be overridden before inclusion. */
#ifndef DAT_OPTIMAL_ALIGNMENT
#define DAT_OPTIMAL_ALIGNMENT 256
#endif

/* Fixed-width integers in host byte order. */
typedef u_int32_t DAT_UINT32;
typedef u_int64_t DAT_UINT64;
/* The widest unsigned integer the compiler offers. */
typedef unsigned long long DAT_UVERYLONG;
typedef void *DAT_PVOID;
/* Counts, lengths and queue sizes. */
typedef int DAT_COUNT;
/* Physical address (kernel API only, kept for completeness). */
typedef DAT_UINT64 DAT_PADDR;

/* 64-bit mask constants are spelled with UINT64_C(); supply it if <stdint.h> did not. */
#ifndef UINT64_C
#define UINT64_C(c) c ## ULL
#endif

/* Converting an IA handle to and from an integer (handles may be small indices). */
#define DAT_IA_HANDLE_TO_UL(a) (unsigned long)(a)
#define DAT_UL_TO_IA_HANDLE(a) (DAT_IA_HANDLE)(a)

/* Socket triple used to describe the transport of a common service point. */
typedef struct dat_comm {
    int domain;
    int type;
    int protocol;
} DAT_COMM;

/* A file descriptor (used by fd-based CNOs). */
typedef int DAT_FD;

/* Native socket address types; addresses are passed around as struct sockaddr *. */
typedef struct sockaddr DAT_SOCK_ADDR;
typedef struct sockaddr_in6 DAT_SOCK_ADDR6;

#define DAT_AF_INET AF_INET
#define DAT_AF_INET6 AF_INET6

/* Calling convention marker (the default one) and linkage of the API functions. */
#define DAT_API
#define DAT_EXPORT extern

/* Parameter direction markers; they expand to nothing. */
#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif
#ifndef INOUT
#define INOUT
#endif

#endif /* OPENDAT_DAT_PLATFORM_SPECIFIC_H */
