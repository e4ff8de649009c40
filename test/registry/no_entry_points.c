/* A library that dlopens fine but has neither dat_provider_init nor dat_provider_fini. */
__attribute__((visibility("default"))) int opendat_test_not_a_provider(void) {
    return 42;
}
