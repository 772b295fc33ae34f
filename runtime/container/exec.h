/* exec.h - a rank's last steps into the container (see exec.c). */
#ifndef MPICTR_EXEC_H
#define MPICTR_EXEC_H

#include <stdbool.h>

#include "plan/plan.h"

/* Join the namespaces, enter the start directory, drop every capability
 * and exec the plan's command with env; keep_fd (or -1) stays open.
 * Returns only on failure (-1 with *err; its exit code is 126 or 127 when
 * the command is at fault). */
int container_exec(const struct plan *p, char **env, int userns_fd,
		   int mntns_fd, int keep_fd, mpictr_err **err);
/* For a launcher that execs the command itself (the SPANK plugin): join
 * the namespaces, enter the start directory, check the command (127/126
 * errors as container_exec), drop every capability, and return. *env
 * gains what the exec needs; *program is NULL (exec argv as given: the
 * command was found on *env's PATH) or the program to exec in argv[0]'s
 * place with the same arguments: the image's env scripts, then the command
 * (freed by the caller). */
int container_enter_task(const struct plan *p, char ***env, int userns_fd,
			 int mntns_fd, char **program, mpictr_err **err);
/* True when the current root has environment scripts to source before
 * the command (the files ending in .sh in /.singularity.d/env). */
bool exec_image_has_env_scripts(void);

#endif
