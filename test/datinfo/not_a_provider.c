/* A library that loads fine but has no dat_provider_init: datinfo must say so. */
__attribute__((visibility("default"))) int datinfo_test_not_a_provider(void) {
    return 7;
}
