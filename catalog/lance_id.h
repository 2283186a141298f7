/*
 * Lance Namespace identifiers (docs/catalog.md, "Lance"): the parts of an
 * object's id joined by a delimiter ("$" unless the request's `delimiter`
 * says otherwise) into one path segment, which clients percent-encode
 * ("%24"). The segment equal to the delimiter alone is the root (no parts);
 * empty parts (a leading "$", as in "$bucket$ns") are dropped. In the
 * catalog the first part is a table bucket, the middle ones a namespace's
 * levels and, for a table, the last the table's name.
 */
#ifndef WEEDFS_CATALOG_LANCE_ID_H
#define WEEDFS_CATALOG_LANCE_ID_H

#include <stdbool.h>
#include <stddef.h>

#define LANCE_ID_PARTS_MAX 18 /* a bucket, 16 namespace levels and a table */
#define LANCE_DELIM_MAX    8
#define LANCE_WHY_MAX      160

struct lance_id {
	char *parts[LANCE_ID_PARTS_MAX];
	size_t n;
};
void lance_id_free(struct lance_id *id);

/*
 * Whether delim is a usable delimiter: 1..LANCE_DELIM_MAX bytes, no NUL, no
 * '/' (it lives inside one path segment). NULL or "" is "$".
 */
bool lance_delimiter_ok(const char *delim);
/*
 * Parses a raw (percent-encoded) path segment of length len into id. false
 * with why on a malformed encoding, a NUL, a part holding "$" (with another
 * delimiter), or more than LANCE_ID_PARTS_MAX parts; id is then empty.
 */
bool lance_id_parse(const char *raw, size_t len, const char *delim, struct lance_id *id,
		    char why[LANCE_WHY_MAX]);
/*
 * The same for text already decoded (len bytes, the parts of a JSON id
 * joined): split at delim, empty parts dropped.
 */
bool lance_id_split(const char *text, size_t len, const char *delim, struct lance_id *id,
		    char why[LANCE_WHY_MAX]);
/* Whether a and b name the same object. */
bool lance_id_equal(const struct lance_id *a, const struct lance_id *b);
/* The parts from..n-1 joined with delim (caller frees). */
char *lance_id_join(const struct lance_id *id, size_t from, const char *delim);

#endif
