/* exec.c - the last steps of every rank, in launch and join mode alike:
 * join the holder's namespaces, enter the start directory, wrap the
 * command with the image's environment scripts or find it on PATH (for
 * 126/127), mark inherited descriptors close-on-exec, drop every
 * capability and execve.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caps.h"
#include "error.h"
#include "exec.h"
#include "ns.h"
#include "proc.h"

/* Find cmd on PATH (from env) as execvp would, for 126/127. */
int exec_resolve_command(const char *cmd, char *const *env, char **out,
			 mpictr_err **err)
{
	const char *path = env_get(env, "PATH");
	int saw_eacces = 0;
	cleanup_free char *copy = NULL;
	char *save = NULL;

	if (strchr(cmd, '/')) {
		if (access(cmd, X_OK) == 0) {
			*out = xstrdup(cmd);
			return 0;
		}
		if (errno == ENOENT || errno == ENOTDIR)
			return err_set_exit(err, MPICTR_EXIT_NOT_FOUND, errno,
					    "command '%s' in the container",
					    cmd);
		return err_set_exit(err, MPICTR_EXIT_CANNOT_EXEC, errno,
				    "command '%s' in the container", cmd);
	}
	copy = xstrdup(path ? path : CONTAINER_DEFAULT_PATH);
	for (char *d = strtok_r(copy, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		cleanup_free char *cand = xasprintf("%s/%s", *d ? d : ".", cmd);
		struct stat st;

		if (stat(cand, &st) < 0 || S_ISDIR(st.st_mode))
			continue;
		if (access(cand, X_OK) == 0) {
			*out = steal_ptr(&cand);
			return 0;
		}
		saw_eacces = 1;
	}
	if (saw_eacces)
		return err_set_exit(err, MPICTR_EXIT_CANNOT_EXEC, EACCES,
				    "command '%s' in the container", cmd);
	return err_set_exit(err, MPICTR_EXIT_NOT_FOUND, 0,
			    "command '%s' not found in the container (PATH=%s)",
			    cmd, path ? path : CONTAINER_DEFAULT_PATH);
}

/* True when the image (the current root) has environment scripts to
 * source before the command (Apptainer's: the files ending in .sh in
 * /.singularity.d/env). */
bool exec_image_has_env_scripts(void)
{
	DIR *d = opendir("/.singularity.d/env");
	struct dirent *de;
	bool any = false;

	if (!d)
		return false;
	while (!any && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		any = l > 3 && strcmp(de->d_name + l - 3, ".sh") == 0;
	}
	closedir(d);
	return any;
}

/* The image's env scripts are sourced by the image's own /bin/sh before
 * the command (Apptainer's order); the user's variables are exported again
 * afterwards so they win. Names are validated, values travel in the
 * environment, so nothing user-supplied is parsed by the shell. */
static char **wrap_with_env_scripts(char ***env, char *const *user_env,
				    char *const *argv)
{
	struct strbuf sb = STRBUF_INIT;
	char **out = NULL;
	int k = 0;

	if (!exec_image_has_env_scripts() || access("/bin/sh", X_OK) < 0)
		return NULL;
	sb_puts(&sb, "for __mpictr_f in /.singularity.d/env/*.sh; do "
		     "[ -r \"$__mpictr_f\" ] && . \"$__mpictr_f\"; done; "
		     "unset __mpictr_f; ");
	for (size_t i = 0; user_env && user_env[i]; i++) {
		const char *eq = strchr(user_env[i], '=');
		cleanup_free char *name = NULL, *var = NULL;

		if (!eq ||
		    !env_name_valid(user_env[i], (size_t)(eq - user_env[i])))
			continue;
		name = xstrndup(user_env[i], (size_t)(eq - user_env[i]));
		var = xasprintf("__mpictr_u%d", k++);
		env_set(env, var, eq + 1);
		sb_printf(&sb, "export %s=\"$%s\"; unset %s; ", name, var, var);
	}
	sb_puts(&sb, "command -v \"$1\" >/dev/null 2>&1 || { echo \"mpictr: "
		     "command '$1' not found in the container (PATH=$PATH)\" "
		     ">&2; exit 127; }; exec \"$@\"");
	strv_push(&out, "/bin/sh");
	strv_push(&out, "-c");
	strv_push_own(&out, sb_steal(&sb));
	strv_push(&out, "mpictr-env");
	for (size_t i = 0; argv[i]; i++)
		strv_push(&out, argv[i]);
	return out;
}

int container_exec(const struct plan *p, char **env, int userns_fd,
		   int mntns_fd, int keep_fd, mpictr_err **err)
{
	cleanup_free char *exe = NULL;
	char **argv = p->argv, **wrapped;

	if (ns_join(userns_fd, mntns_fd, err) < 0)
		return -1;
	if (chdir(p->cwd) < 0) {
		err_set(err, errno, "start directory '%s' in the container",
			p->cwd);
		return err_hint(err, "bind it with -B or choose another with "
				     "--pwd");
	}
	wrapped = wrap_with_env_scripts(&env, p->user_env, argv);
	if (wrapped) {
		argv = wrapped;
		exe = xstrdup("/bin/sh");
	} else if (exec_resolve_command(argv[0], env, &exe, err) < 0) {
		return -1;
	}
	mark_cloexec_except(keep_fd);
	if (keep_fd >= 0 && fcntl(keep_fd, F_SETFD, 0) < 0)
		return err_set(err, errno, "keep the PMI descriptor open");
	if (caps_drop_all(err) < 0)
		return -1;
	execve(exe, argv, env);
	if (errno == ENOENT)
		return err_set_exit(err, MPICTR_EXIT_NOT_FOUND, errno,
				    "execute '%s' in the container", exe);
	return err_set_exit(err, MPICTR_EXIT_CANNOT_EXEC, errno,
			    "execute '%s' in the container", exe);
}
