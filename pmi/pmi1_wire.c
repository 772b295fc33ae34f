/* pmi1_wire.c - parse one PMI-1 wire line into a command and key=value
 * pairs. Pure and bounded (PMI1_MAXLINE bytes, PMI1_MAXPAIRS pairs); the
 * fuzz target tests/fuzz/fuzz_pmi1.c drives it with arbitrary bytes. */
#include <string.h>

#include "pmi/pmi1_wire.h"

/* Bytes allowed in keys and values: printable ASCII and anything >= 0x80
 * (MPICH copies values blindly); blanks separate words. */
static bool word_char(unsigned char c)
{
	return c > ' ' && c != 0x7f;
}

int pmi1_parse(const char *line, size_t n, struct pmi1_msg *msg)
{
	size_t npairs = 0;
	char *p, *end;
	struct pmi1_pair all[PMI1_MAXPAIRS + 1];

	if (n > 0 && line[n - 1] == '\n')
		n--;
	if (n >= PMI1_MAXLINE) /* the newline must fit too */
		return PMI1_ERR_TOO_LONG;
	memcpy(msg->buf, line, n);
	msg->buf[n] = '\0';
	msg->cmd = NULL;
	msg->multi = false;
	msg->npairs = 0;

	p = msg->buf;
	end = msg->buf + n;
	for (char *q = p; q < end; q++) {
		if (*q == ' ')
			*q = '\0';
		else if (!word_char((unsigned char)*q))
			return PMI1_ERR_BAD_CHAR;
	}
	while (p < end) {
		char *eq;

		if (*p == '\0') {
			p++;
			continue;
		}
		if (npairs == PMI1_MAXPAIRS + 1)
			return PMI1_ERR_TOO_MANY;
		eq = strchr(p, '=');
		if (!eq)
			return PMI1_ERR_NO_EQUALS;
		if (eq == p)
			return PMI1_ERR_BAD_KEY;
		*eq = '\0';
		all[npairs].key = p;
		all[npairs].value = eq + 1;
		for (size_t i = 0; i < npairs; i++)
			if (strcmp(all[i].key, p) == 0)
				return PMI1_ERR_DUP_KEY;
		npairs++;
		p = eq + 1 + strlen(eq + 1);
	}
	if (npairs == 0)
		return PMI1_ERR_EMPTY;
	if (strcmp(all[0].key, "cmd") == 0)
		msg->multi = false;
	else if (strcmp(all[0].key, "mcmd") == 0)
		msg->multi = true;
	else
		return PMI1_ERR_NO_CMD;
	if (all[0].value[0] == '\0')
		return PMI1_ERR_EMPTY_CMD;
	msg->cmd = all[0].value;
	msg->npairs = npairs - 1;
	memcpy(msg->pairs, all + 1, msg->npairs * sizeof(all[0]));
	return PMI1_OK;
}

const char *pmi1_get(const struct pmi1_msg *msg, const char *key)
{
	for (size_t i = 0; i < msg->npairs; i++)
		if (strcmp(msg->pairs[i].key, key) == 0)
			return msg->pairs[i].value;
	return NULL;
}

const char *pmi1_strerror(int code)
{
	switch (code) {
	case PMI1_OK:
		return "success";
	case PMI1_ERR_EMPTY:
		return "empty line";
	case PMI1_ERR_TOO_LONG:
		return "line longer than 1024 bytes";
	case PMI1_ERR_BAD_CHAR:
		return "control byte in line";
	case PMI1_ERR_NO_EQUALS:
		return "word without '='";
	case PMI1_ERR_BAD_KEY:
		return "empty key";
	case PMI1_ERR_TOO_MANY:
		return "too many key=value pairs";
	case PMI1_ERR_NO_CMD:
		return "line does not start with cmd=";
	case PMI1_ERR_EMPTY_CMD:
		return "empty command";
	case PMI1_ERR_DUP_KEY:
		return "key given twice";
	default:
		return "unknown error";
	}
}

bool pmi1_value_ok(const char *s, size_t max)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= max || !word_char((unsigned char)s[n]))
			return false;
	return true;
}

int pmi1_take_lines(char *buf, size_t *len, size_t cap, pmi1_line_fn fn,
		    void *ctx)
{
	size_t start = 0;

	for (size_t i = 0; i < *len; i++) {
		if (buf[i] != '\n')
			continue;
		if (!fn(ctx, buf + start, i + 1 - start))
			return 1;
		start = i + 1;
	}
	memmove(buf, buf + start, *len - start);
	*len -= start;
	return *len == cap ? -1 : 0;
}
