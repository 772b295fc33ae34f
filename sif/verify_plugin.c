/* verify_plugin.c - the entry of the "verify" plugin
 * (runtime/common/plugin.h): sif/verify.c and sif/sign.c with OpenSSL and
 * RNP, loaded only to check or make a signature. */
#include <string.h>

#include "common/plugin.h"
#include "sif/verify.h"

static const struct verify_plugin verify_table = {
    .verify_image_fd = vplug_verify_image_fd,
    .sign_image = vplug_sign_image,
};

MPICTR_PLUGIN_DEFINE(verify_table)
