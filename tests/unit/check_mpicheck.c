/* check_mpicheck.c - the PMI a command's MPI needs against what its
 * launcher offers (plan/mpicheck.c), and the ELF dynamic section reader
 * it uses (host/mpiinject.c). */
#include <check.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "host/mpiinject.h"
#include "plan/mpicheck.h"

static char *const slurm_none[] = {"SLURM_JOB_ID=1", NULL};
static char *const slurm_pmi2[] = {"PMI_FD=11", "PMI_RANK=0", NULL};
static char *const pmix[] = {"PMIX_NAMESPACE=slurm.pmix.1.0",
			     "PMIX_SERVER_URI4=x;tcp4://127.0.0.1:1", NULL};
static char *const check_off[] = {"MPICTR_MPI_CHECK=0", NULL};

static struct mpicheck_launcher L(enum launcher_rule rule, const char *name,
				  uint32_t size)
{
	return (struct mpicheck_launcher){true, rule, name, size, false};
}

/* The message of a refusal, checked for each needle. */
static void refused(struct mpicheck_launcher l, char *const *env,
		    enum mpi_family fam, const char *so, const char *a,
		    const char *b)
{
	mpictr_err *e = NULL;

	ck_assert_int_eq(mpicheck_verdict(&l, env, fam, so, &e), -1);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(mpictr_err_exit_code(e), 255);
	ck_assert_msg(strstr(mpictr_err_message(e), a), "%s: no '%s'",
		      mpictr_err_message(e), a);
	ck_assert_msg(strstr(mpictr_err_message(e), b), "%s: no '%s'",
		      mpictr_err_message(e), b);
	mpictr_err_free(e);
}

START_TEST(test_verdict_mismatch)
{
	refused(L(LAUNCHER_SLURM, "Slurm", 2), slurm_none, MPI_FAMILY_OPENMPI,
		"libmpi.so.40", "srun without --mpi", "srun --mpi=pmix");
	refused(L(LAUNCHER_SLURM, "Slurm", 2), slurm_none, MPI_FAMILY_MPICH,
		"libmpich.so.12", "MPICH (libmpich.so.12)", "srun --mpi=pmi2");
	refused(L(LAUNCHER_SLURM, "Slurm", 2), slurm_pmi2, MPI_FAMILY_OPENMPI,
		"libmpi.so.40", "PMI-2", "srun --mpi=pmix");
	refused(L(LAUNCHER_SLURM, "Slurm", 2), pmix, MPI_FAMILY_MPICH,
		"libmpich.so.12", "offers PMIx", "srun --mpi=pmi2");
	refused(L(LAUNCHER_OPENMPI, "Open MPI (ORTE)", 2), pmix,
		MPI_FAMILY_MPICH, "libmpich.so.12", "Open MPI (ORTE)",
		"mpiexec.hydra");
	refused(L(LAUNCHER_HYDRA, "MPICH Hydra", 2), slurm_pmi2,
		MPI_FAMILY_OPENMPI, "libmpi.so.40", "MPICH Hydra",
		"Open MPI's mpirun");
	refused(L(LAUNCHER_FLUX, "Flux", 2), slurm_none, MPI_FAMILY_MPICH,
		"libmpich.so.12", "Flux", "mpictr -n N");
}
END_TEST

START_TEST(test_verdict_fine)
{
	struct mpicheck_launcher l = L(LAUNCHER_SLURM, "Slurm", 2);
	mpictr_err *e = NULL;

	ck_assert_int_eq(mpicheck_verdict(&l, pmix, MPI_FAMILY_OPENMPI,
					  "libmpi.so.40", &e),
			 0);
	ck_assert_int_eq(mpicheck_verdict(&l, slurm_pmi2, MPI_FAMILY_MPICH,
					  "libmpich.so.12", &e),
			 0);
	/* no MPI, the check turned off, or not on in this mode */
	ck_assert_int_eq(mpicheck_verdict(&l, slurm_none, MPI_FAMILY_NONE,
					  NULL, &e),
			 0);
	ck_assert_int_eq(mpicheck_verdict(&l, check_off, MPI_FAMILY_MPICH,
					  "libmpich.so.12", &e),
			 0);
	l.on = false;
	ck_assert_int_eq(mpicheck_verdict(&l, slurm_none, MPI_FAMILY_MPICH,
					  "libmpich.so.12", &e),
			 0);
	/* one MPICH task without PMI is a working singleton */
	l = L(LAUNCHER_SLURM, "Slurm", 1);
	ck_assert_int_eq(mpicheck_verdict(&l, slurm_none, MPI_FAMILY_MPICH,
					  "libmpich.so.12", &e),
			 0);
	/* no launcher at all: a singleton under our own servers */
	l = L(LAUNCHER_NONE, "no launcher", LAUNCHER_UNKNOWN);
	ck_assert_int_eq(mpicheck_verdict(&l, slurm_none, MPI_FAMILY_OPENMPI,
					  "libmpi.so.40", &e),
			 MPICHECK_SINGLETON);
	ck_assert_ptr_null(e);
	/* a single process with mpictr's own PMI-1 service (PMI_PORT):
	 * MPICH is served there, Open MPI still runs again as -n 1 */
	{
		static char *const single[] = {"PMI_PORT=127.0.0.1:5",
					       "PMI_RANK=0", NULL};

		l.single_pmi = true;
		ck_assert_int_eq(mpicheck_verdict(&l, single,
						  MPI_FAMILY_MPICH,
						  "libmpich.so.12", &e),
				 0);
		ck_assert_int_eq(mpicheck_verdict(&l, single,
						  MPI_FAMILY_OPENMPI,
						  "libmpi.so.40", &e),
				 MPICHECK_SINGLETON);
		ck_assert_ptr_null(e);
	}
	ck_assert(mpicheck_disabled(check_off));
	ck_assert(!mpicheck_disabled(pmix));
}
END_TEST

/* A minimal ELF executable: header, a dynamic section and its strings. */
struct tiny_elf {
	Elf64_Ehdr eh;
	Elf64_Shdr sh[3]; /* null, .dynamic, .dynstr */
	Elf64_Dyn dyn[5];
	char str[64];
};

static void tiny_elf(struct tiny_elf *t, uint16_t type)
{
	static const char s[] = "\0libmpi.so.40\0libc.so.6\0$ORIGIN/../lib";

	memset(t, 0, sizeof(*t));
	memcpy(t->eh.e_ident, ELFMAG, SELFMAG);
	t->eh.e_ident[EI_CLASS] = ELFCLASS64;
	t->eh.e_ident[EI_DATA] = ELFDATA2LSB;
	t->eh.e_type = type;
	t->eh.e_shoff = offsetof(struct tiny_elf, sh);
	t->eh.e_shentsize = sizeof(Elf64_Shdr);
	t->eh.e_shnum = 3;
	t->sh[1] = (Elf64_Shdr){.sh_type = SHT_DYNAMIC,
				.sh_link = 2,
				.sh_offset = offsetof(struct tiny_elf, dyn),
				.sh_size = sizeof(t->dyn)};
	t->sh[2] = (Elf64_Shdr){.sh_type = SHT_STRTAB,
				.sh_offset = offsetof(struct tiny_elf, str),
				.sh_size = sizeof(s)};
	memcpy(t->str, s, sizeof(s));
	t->dyn[0] = (Elf64_Dyn){.d_tag = DT_NEEDED, .d_un.d_val = 1};
	t->dyn[1] = (Elf64_Dyn){.d_tag = DT_NEEDED, .d_un.d_val = 14};
	t->dyn[2] = (Elf64_Dyn){.d_tag = DT_RUNPATH, .d_un.d_val = 24};
	t->dyn[3] = (Elf64_Dyn){.d_tag = DT_NULL};
}

static int rd(void *ctx, void *buf, size_t n, uint64_t off)
{
	const struct tiny_elf *t = ctx;

	if (off > sizeof(*t) || n > sizeof(*t) - off)
		return -1;
	memcpy(buf, (const char *)t + off, n);
	return 0;
}

START_TEST(test_elf_dynamic)
{
	struct tiny_elf t;
	struct elf_dynamic d;
	mpictr_err *e = NULL;

	tiny_elf(&t, ET_EXEC);
	ck_assert_int_eq(mpiabi_elf_dynamic(rd, &t, sizeof(t), "t",
					    ELF_DYN_NEEDED | ELF_DYN_PROGRAM,
					    &d, &e),
			 0);
	ck_assert_ptr_nonnull(d.needed);
	ck_assert_str_eq(d.needed[0], "libmpi.so.40");
	ck_assert_str_eq(d.needed[1], "libc.so.6");
	ck_assert_ptr_null(d.needed[2]);
	ck_assert_str_eq(d.runpath, "$ORIGIN/../lib");
	ck_assert_ptr_null(d.soname);
	elf_dynamic_free(&d);
	/* a library's reader refuses an executable */
	ck_assert_int_eq(mpiabi_elf_dynamic(rd, &t, sizeof(t), "t", 0, &d, &e),
			 -1);
	mpictr_err_free(e);
	e = NULL;
	elf_dynamic_free(&d);
	/* a DT_NEEDED offset outside the string table */
	t.dyn[1].d_un.d_val = 4000;
	ck_assert_int_eq(mpiabi_elf_dynamic(rd, &t, sizeof(t), "t",
					    ELF_DYN_NEEDED | ELF_DYN_PROGRAM,
					    &d, &e),
			 -1);
	ck_assert(strstr(mpictr_err_message(e), "DT_NEEDED"));
	mpictr_err_free(e);
	elf_dynamic_free(&d);
}
END_TEST

Suite *suite_mpicheck(void);
Suite *suite_mpicheck(void)
{
	Suite *s = suite_create("mpicheck");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_verdict_mismatch);
	tcase_add_test(tc, test_verdict_fine);
	tcase_add_test(tc, test_elf_dynamic);
	suite_add_tcase(s, tc);
	return s;
}
