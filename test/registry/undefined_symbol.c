/* A library that cannot be loaded with RTLD_NOW: it needs a symbol nobody defines. */
extern int opendat_test_symbol_that_does_not_exist(void);
__attribute__((visibility("default"))) void dat_provider_init(const void *info, const char *data) {
    (void)info;
    (void)data;
    opendat_test_symbol_that_does_not_exist();
}
