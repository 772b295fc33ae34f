/* fuzz_siteconf.c - libFuzzer target for the mpictr.conf parser (as a
 * site file, then as a user file on top of it) and the ELF soname reader. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "host/mpiinject.h"
#include "config/siteconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct siteconf sc = {0};
	mpictr_err *err = NULL;
	char *so = NULL;

	if (siteconf_parse(&sc, (const char *)data, size, "site", true,
			   &err) == 0) {
		char *names = siteconf_profile_names(&sc);
		free(names);
		siteconf_check_user_bind(&sc, "/home/x", "bind", NULL);
		siteconf_check_bind(&sc, "/", BIND_AUTO, "bind", NULL);
		siteconf_parse(&sc, (const char *)data, size, "user", false,
			       NULL);
	}
	mpictr_err_free(err);
	siteconf_free(&sc);
	err = NULL;
	if (mpiabi_elf_soname_mem(data, size, &so, &err) == 0)
		free(so);
	mpictr_err_free(err);
	return 0;
}
