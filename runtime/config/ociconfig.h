/* ociconfig.h - the parts of an OCI image config that `run`, the working
 * directory and the environment use (docs/pull.md "At run time"), read
 * from the SIF's JSON.Generic object "oci-config.json" (the ImageConfig:
 * {"Entrypoint": [...], "Cmd": [...], "Env": ["K=V"...], "WorkingDir":
 * "...", "User": "..."}), and for `mpictr inspect` the descriptive ones
 * (Labels, ExposedPorts, Volumes, StopSignal). The SIF is untrusted: a small
 * strict JSON reader (no new library in libmpictr), duplicate keys refused,
 * depth and size limited.
 */
#ifndef MPICTR_OCICONFIG_H
#define MPICTR_OCICONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define OCI_CONFIG_MAX (1u << 20)

struct oci_config {
	char **entrypoint; /* NULL-terminated; NULL when absent or null */
	char **cmd;
	char **env; /* "NAME=VALUE" entries, as given */
	char *workdir;
	char *user;
	/* Labels: keys and values side by side (a value that is not a
	 * string, which the spec does not allow, as its JSON text). */
	char **label_keys, **label_values;
	char **exposed_ports; /* the keys of ExposedPorts ("80/tcp") */
	char **volumes;	      /* the keys of Volumes */
	char *stop_signal;
};

/* Parse buf[0..len) into *c (zeroed first). name is for messages. */
int oci_config_parse(const char *buf, size_t len, const char *name,
		     struct oci_config *c, mpictr_err **err);
void oci_config_free(struct oci_config *c);
/* True when the config names a user other than root ("", "0", "root",
 * "0:0", "root:root" are root). */
bool oci_config_user_nonroot(const struct oci_config *c);

#endif
