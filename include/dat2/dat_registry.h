/*
 * OpenDAT — the provider side of the DAT registry: how a provider library
 * registers its method table with libdat2 and the entry points libdat2
 * looks up in a provider library.
 *
 * Independent implementation of the DAT 2.0 API. Meant for providers, after
 * <dat2/udat.h>; it pulls in the dispatch definitions (struct dat_provider).
 */
#ifndef OPENDAT_DAT_REGISTRY_H
#define OPENDAT_DAT_REGISTRY_H

#include <dat2/udat.h>
#include <dat2/udat_redirection.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Adds / removes a provider's table under the key in `info` (IA name, API
 * version, thread safety). Providers pass back the info they were given in
 * their init function.
 */
extern DAT_RETURN DAT_API dat_registry_add_provider(const DAT_PROVIDER *,
                                                    const DAT_PROVIDER_INFO *);
extern DAT_RETURN DAT_API dat_registry_remove_provider(const DAT_PROVIDER *,
                                                       const DAT_PROVIDER_INFO *);

/* Symbols libdat2 resolves in a provider library after loading it. */
#define DAT_PROVIDER_INIT_FUNC_NAME dat_provider_init
#define DAT_PROVIDER_FINI_FUNC_NAME dat_provider_fini
#define DAT_PROVIDER_INIT_FUNC_STR "dat_provider_init"
#define DAT_PROVIDER_FINI_FUNC_STR "dat_provider_fini"

/* init(registry entry, ia_params string from dat.conf); fini(registry entry). */
typedef void (DAT_API *DAT_PROVIDER_INIT_FUNC)(const DAT_PROVIDER_INFO *, const char *);
typedef void (DAT_API *DAT_PROVIDER_FINI_FUNC)(const DAT_PROVIDER_INFO *);

/* Answer of dat_registry_providers_related(). */
typedef enum dat_ha_relationship {
    DAT_HA_FALSE,
    DAT_HA_TRUE,
    DAT_HA_UNKNOWN,
    DAT_HA_CONFLICTING,               /* the two IAs disagree */
    DAT_HA_EXTENSION_BASE
} DAT_HA_RELATIONSHIP;

/* Whether two IA names belong to one high-availability group. */
extern DAT_RETURN DAT_API dat_registry_providers_related(const DAT_NAME_PTR, const DAT_NAME_PTR,
                                                         DAT_HA_RELATIONSHIP *);

#ifdef __cplusplus
}
#endif

#endif /* OPENDAT_DAT_REGISTRY_H */
