/*
 * XML for the S3 gateway: a streaming writer for answers (ListBucketResult,
 * Error, ...) and a bounded reader for request bodies (CompleteMultipartUpload,
 * Delete, Tagging, ...). What both hand back is UTF-8; xml.c's DESIGN comment
 * says why they are built so.
 */
#ifndef WEEDFS_S3_XML_H
#define WEEDFS_S3_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "s3/s3_err.h"

#define XML_S3_NS "http://s3.amazonaws.com/doc/2006-03-01/"

/* ---- writer ---- */

typedef struct xml_w xml_w;

/*
 * A writer appending to out (borrowed: it must outlive the writer). Writes the
 * declaration <?xml version="1.0" encoding="UTF-8"?> and a newline at once.
 * The caller may send and empty *out between calls (a long listing streams);
 * the writer keeps its own copy of the open names. One thread at a time.
 *
 * Element and attribute names are the caller's constants, written as given
 * (never escaped). Text and attribute values are escaped:
 *   & < > " '                  -> &amp; &lt; &gt; &quot; &apos;
 *   CR                         -> &#xD; (a raw CR would read back as LF)
 *   U+0001-U+001F but TAB, LF  -> &#x1; ... &#x1F;, as S3 writes them in
 *                                 listings (XML 1.1 style: strict XML 1.0
 *                                 readers, this one included, refuse them)
 *   NUL, U+FFFE, U+FFFF, and each byte of anything that is not valid UTF-8
 *                              -> U+FFFD (no XML version can carry them)
 * Everything else, TAB and LF included, is copied as it is; in attribute
 * values TAB and LF become &#x9; and &#xA; (a reader turns raw ones into
 * spaces), so values too read back as written.
 */
xml_w *xml_w_new(buf *out);
/* <name> */
void xml_open(xml_w *w, const char *name);
/* <name xmlns="http://s3.amazonaws.com/doc/2006-03-01/"> */
void xml_open_s3(xml_w *w, const char *name);
/*
 * <name a1="v1" a2="v2">: attrs is NULL or a NULL-terminated list of name,
 * value pairs (borrowed); values are escaped like text.
 */
void xml_open_attrs(xml_w *w, const char *name, const char *const *attrs);
/* Closes the innermost open element; does nothing if none is open. */
void xml_close(xml_w *w);
/* Closes open elements until depth of them are left open. */
void xml_close_to(xml_w *w, size_t depth);
/* How many elements are open. */
size_t xml_w_depth(const xml_w *w);
/* <name>text</name>, text escaped; a NULL text writes <name></name>. */
void xml_elem(xml_w *w, const char *name, const char *text);
/* The same for len bytes of text, which may hold NUL (written as U+FFFD). */
void xml_elem_len(xml_w *w, const char *name, const char *text, size_t len);
/* The same with printf-formatted text, escaped after formatting. */
void xml_elem_fmt(xml_w *w, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* <name>decimal</name> */
void xml_elem_u64(xml_w *w, const char *name, uint64_t v);
void xml_elem_i64(xml_w *w, const char *name, int64_t v);
/* <name>true</name> or <name>false</name> */
void xml_elem_bool(xml_w *w, const char *name, bool v);
/* Closes what is still open and frees the writer (not out). NULL does nothing. */
void xml_w_free(xml_w *w);

/* Appends s[0..len) to out escaped as described above. Any thread. */
void xml_escape(buf *out, const char *s, size_t len);

/* ---- reader ---- */

/* One attribute of an element: local name, namespace stripped. */
struct xml_attr {
	const char *name;
	const char *value; /* NUL-terminated; value_len bytes */
	size_t value_len;
	const struct xml_attr *next;
};

/*
 * One element. Strings are NUL-terminated and live as long as the tree.
 * text is the element's own character data (not its children's), pieces
 * before, between and after children concatenated, exactly as the parser
 * delivered it: entities and character references resolved, CR LF turned
 * into LF as XML requires, no trimming. Never NULL ("" when there is none).
 * Text never holds NUL (XML cannot carry it).
 */
struct xml_node {
	const char *name; /* local name, prefix and namespace stripped */
	const char *ns;   /* namespace URI, "" when none */
	const char *text;
	size_t text_len;
	const struct xml_node *first; /* first child element, in document order */
	const struct xml_node *next;  /* next sibling element */
	const struct xml_attr *attrs; /* in document order; xmlns declarations excluded */
};

/* Bounds on one parse; 0 in a field means that field's default. */
struct xml_limits {
	size_t max_len;   /* body bytes (default XML_MAX_LEN) */
	size_t max_depth; /* element nesting, the root being 1 (default XML_MAX_DEPTH) */
	size_t max_nodes; /* elements plus attributes (default XML_MAX_NODES) */
	size_t max_text;  /* bytes of text plus attribute values (default XML_MAX_TEXT) */
};

#define XML_MAX_LEN   (4u << 20) /* a CompleteMultipartUpload of 10000 parts fits */
#define XML_MAX_DEPTH 32
#define XML_MAX_NODES 100000
#define XML_MAX_TEXT  (4u << 20)

/*
 * Parses the XML document data[0..len) (borrowed) into a tree returned in
 * *root (free it with xml_free). The encoding is what the document declares
 * (UTF-8 when it declares none; UTF-16 with a BOM; ISO-8859-1, US-ASCII);
 * the tree is UTF-8. Namespaces are resolved, then stripped from names (kept
 * in ns). A DOCTYPE of any kind is refused, hence every entity declaration,
 * external entity and entity expansion attack; comments and processing
 * instructions are skipped. lim may be NULL (all defaults).
 *
 * Returns S3_OK, or S3_MALFORMED_XML with *root NULL and a short message in
 * msg (msglen bytes, may be 0) on a syntax error, an empty body, a DOCTYPE or
 * any bound exceeded. Any thread; no shared state.
 */
enum s3_err xml_parse(const char *data, size_t len, const struct xml_limits *lim,
		      struct xml_node **root, char *msg, size_t msglen);
/* Frees a tree (the root xml_parse gave) all at once. NULL does nothing. */
void xml_free(struct xml_node *root);

/* The first child of n named name (any name if NULL), or NULL. n may be NULL. */
const struct xml_node *xml_child(const struct xml_node *n, const char *name);
/* The next sibling after c named name (any name if NULL), or NULL. */
const struct xml_node *xml_next(const struct xml_node *c, const char *name);
/* The text of n's first child named name, or NULL if there is no such child. */
const char *xml_child_text(const struct xml_node *n, const char *name);
/* How many children of n are named name (all children if NULL). */
size_t xml_count(const struct xml_node *n, const char *name);
/* The value of n's attribute with local name name, or NULL. */
const char *xml_attr(const struct xml_node *n, const char *name);

/* Iterates over the children of n named name (any if NULL). */
#define xml_foreach(c, n, name) \
	for (const struct xml_node *c = xml_child((n), (name)); c; c = xml_next(c, (name)))

#endif
