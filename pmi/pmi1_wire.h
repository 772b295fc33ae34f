/* pmi1_wire.h - the PMI-1 "simple" wire protocol (MPICH src/pmi/simple):
 * newline-terminated lines of space-separated key=value pairs, the first one
 * being cmd=NAME (or mcmd=NAME). Pure parsing and formatting, no I/O. */
#ifndef MPICTR_PMI1_WIRE_H
#define MPICTR_PMI1_WIRE_H

#include <stdbool.h>
#include <stddef.h>

/* MPICH's PMIU_MAXLINE: a line, newline included, is at most 1024 bytes. */
#define PMI1_MAXLINE 1024
/* Most pairs in one line (MPICH's PMIU_MAXKEYVALS is 32). */
#define PMI1_MAXPAIRS 32
/* Limits announced in get_maxes (MPICH clamps vallen_max to what fits). */
#define PMI1_KVSNAME_MAX 256
#define PMI1_KEYLEN_MAX 256
#define PMI1_VALLEN_MAX 1024

enum pmi1_parse_error {
	PMI1_OK = 0,
	PMI1_ERR_EMPTY = -1,	 /* nothing but blanks */
	PMI1_ERR_TOO_LONG = -2,	 /* more than PMI1_MAXLINE bytes */
	PMI1_ERR_BAD_CHAR = -3,	 /* NUL or another control byte */
	PMI1_ERR_NO_EQUALS = -4, /* a word without '=' */
	PMI1_ERR_BAD_KEY = -5,	 /* empty key */
	PMI1_ERR_TOO_MANY = -6,	 /* more than PMI1_MAXPAIRS pairs */
	PMI1_ERR_NO_CMD = -7,	 /* first pair is not cmd= / mcmd= */
	PMI1_ERR_EMPTY_CMD = -8, /* cmd= with an empty value */
	PMI1_ERR_DUP_KEY = -9,	 /* a key given twice */
};

struct pmi1_pair {
	const char *key; /* point into msg->buf */
	const char *value;
};

struct pmi1_msg {
	char buf[PMI1_MAXLINE + 1]; /* the line, blanks replaced by NULs */
	const char *cmd;	    /* value of cmd= (or mcmd=) */
	bool multi;		    /* mcmd= (multi-line spawn) */
	size_t npairs;		    /* pairs after the command */
	struct pmi1_pair pairs[PMI1_MAXPAIRS];
};

/* Parse one line of n bytes (an optional final '\n' is dropped; blanks are
 * ' ' only). Returns PMI1_OK or a negative enum pmi1_parse_error; msg is
 * only meaningful on success. Pure: no allocation, no I/O. */
int pmi1_parse(const char *line, size_t n, struct pmi1_msg *msg);
/* Value of `key` in msg (after the command), or NULL. */
const char *pmi1_get(const struct pmi1_msg *msg, const char *key);
/* Static text for a parse error. */
const char *pmi1_strerror(int code);
/* True when s can be sent as a value: no blank, newline or control byte, and
 * short enough. */
bool pmi1_value_ok(const char *s, size_t max);

/* A connection's input: hand each complete line of buf[0..*len) to fn
 * (the line, newline included, and its length) while fn returns true,
 * then move what is left (the start of a line) to the front. 0; 1 when
 * fn stopped (the connection is gone; buf is left as it was); -1 when
 * the cap bytes of buf hold no newline (a line too long). */
typedef bool (*pmi1_line_fn)(void *ctx, const char *line, size_t n);
int pmi1_take_lines(char *buf, size_t *len, size_t cap, pmi1_line_fn fn,
		    void *ctx);

#endif
