/* fuzz_sif.c - libFuzzer target for the SIF reader: the input is written to
 * a memfd (the reader works on file descriptors), loaded with the strict
 * reader, and every formatter is run on what loads. Build with `make fuzz`;
 * run as in docs/fuzzing.md. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sif/sif.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct sif_image img;
	mpictr_err *err = NULL;
	size_t i;

	if (fd < 0) {
		fd = memfd_create("fuzz.sif", MFD_CLOEXEC);
		if (fd < 0)
			abort();
	}
	if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
	    write_full(fd, data, size) < 0)
		abort();
	if (sif_load_fd(fd, "fuzz.sif", &img, &err) < 0) {
		/* every failure must carry a message */
		if (!mpictr_err_message(err)[0])
			abort();
		mpictr_err_free(err);
		return 0;
	}
	free(sif_format_list(&img));
	free(sif_format_header(&img));
	for (i = 0; i < img.ndescs; i++) {
		char *s = sif_format_info(&img, img.descs[i].id, NULL);
		if (!s)
			abort();
		free(s);
	}
	(void)sif_primary_partition(&img);
	sif_image_free(&img);
	return 0;
}
