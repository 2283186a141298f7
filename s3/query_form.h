/*
 * The body of an AWS query-protocol call (STS, IAM): form-encoded
 * name=value pairs joined by '&' (application/x-www-form-urlencoded), each
 * name at most once.
 * Pure: any thread; a form belongs to its caller.
 */
#ifndef WEEDFS_S3_QUERY_FORM_H
#define WEEDFS_S3_QUERY_FORM_H

#include <stdbool.h>
#include <stddef.h>

#define QUERY_FORM_MAX 32 /* parameters */

struct query_form {
	size_t n;
	char *name[QUERY_FORM_MAX], *value[QUERY_FORM_MAX]; /* owned, decoded */
};

/*
 * Parses body[0..len) into *f (zeroed first): false with msg when a pair does
 * not decode, a name repeats or there are more than QUERY_FORM_MAX; f is then
 * empty. Empty pairs ("a=1&&b=2") are skipped.
 */
bool query_form_parse(const char *body, size_t len, struct query_form *f, char *msg,
		      size_t msglen);
void query_form_free(struct query_form *f);
/* The value of name (borrowed), or NULL. */
const char *query_form_get(const struct query_form *f, const char *name);
/* The first parameter not in known (NULL-terminated), or NULL when all are. */
const char *query_form_unknown(const struct query_form *f, const char *const *known);

#endif
