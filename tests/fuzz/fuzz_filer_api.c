/*
 * Fuzzes the JSON entry API's request parser and, through it, the entry JSON
 * codec's strict reader (client/entry_json.h): the first byte picks the
 * operation (its top bit: the body ends in raw content, the second byte says
 * how much), the rest is the body. Never crashes or leaks; whatever parses
 * names only canonical paths and bounded values, and a parsed entry or chunk
 * list written back by the codec reads back the same.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "client/entry_json.h"
#include "filer/filer_api_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const ops[] = {"lookup", "list",         "create", "update",     "delete",
				  "rename", "setXattr",     "removeXattr", "assign", "lookupVolume",
				  "link",   "statfs",       "freeChunks",  "bogus",  "setXattrs"};

/* e (a parsed create's entry) in the answer form, read back and written again, is the same. */
static void entry_again(const struct filer_entry *e)
{
	buf a = BUF_INIT, b = BUF_INIT;
	struct filer_entry *d = NULL;
	yajl_val v;

	entry_json(e, ENTRY_JSON_CONTENT, &a);
	v = json_parse(a.data, a.len, NULL, 0);
	if (!v || entry_json_read(v, 0, &d, NULL, NULL, 0))
		abort();
	entry_json(d, ENTRY_JSON_CONTENT, &b);
	if (a.len != b.len || memcmp(a.data, b.data, a.len))
		abort();
	yajl_tree_free(v);
	filer_entry_free(d);
	buf_free(&a);
	buf_free(&b);
}

/* update's chunk list written by the codec and read back strictly is the same list. */
static void chunks_again(const struct filer_entry *c)
{
	struct filer_entry *d = filer_entry_new("/", "x");
	buf a = BUF_INIT;
	json_w *w = jw_new(&a, false);
	yajl_val v;

	jw_obj_begin(w);
	entry_json_chunks_write(w, "chunks", c->chunks, c->n_chunks);
	jw_obj_end(w);
	jw_free(w);
	v = json_parse(a.data, a.len, NULL, 0);
	if (!v || entry_json_chunks_read(v, "chunks", ENTRY_JSON_REQUEST, d, NULL, 0) ||
	    d->n_chunks != c->n_chunks)
		abort();
	for (size_t i = 0; i < c->n_chunks; i++) {
		const struct filer_chunk *p = &c->chunks[i], *q = &d->chunks[i];
		if (strcmp(p->fid, q->fid) || p->offset != q->offset || p->size != q->size ||
		    p->mtime_ns != q->mtime_ns || !p->etag != !q->etag ||
		    (p->etag && strcmp(p->etag, q->etag)) || p->is_manifest != q->is_manifest)
			abort();
	}
	yajl_tree_free(v);
	filer_entry_free(d);
	buf_free(&a);
}

/* setXattrs' ops: 1..API_XATTR_OPS_MAX, canonical paths, bounded names and values, no pair
   twice. */
static void xattr_ops_check(const struct api_req *r)
{
	if (!r->nxops || r->nxops > API_XATTR_OPS_MAX)
		abort();
	for (size_t i = 0; i < r->nxops; i++) {
		const struct api_xattr_op *x = &r->xops[i];
		char *d = NULL, *n = NULL;
		if (filer_path_split(x->path, &d, &n) || strcmp(d, x->dir) || strcmp(n, x->name) ||
		    !*x->xname || strlen(x->xname) > FILER_SHORT_MAX || x->remove != !x->value ||
		    x->len > FILER_XATTR_VALUE_MAX || (x->remove && x->flag != API_XATTR_ANY))
			abort();
		free(d);
		free(n);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(r->xops[k].path, x->path) &&
			    !strcmp(r->xops[k].xname, x->xname))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct api_req *r = NULL;
	const uint8_t *raw = NULL;
	size_t raw_len = 0;
	char msg[256];
	if (size < 2)
		return 0;
	const char *op = ops[(data[0] & 0x7f) % (sizeof(ops) / sizeof(ops[0]))];
	if (data[0] & 0x80) { /* the body's last data[1] bytes (at most) are raw content */
		raw_len = data[1] % (size - 1);
		raw = data + size - raw_len;
	}
	if (api_req_parse(op, (const char *)data + 2, size - 2 - raw_len, raw, raw_len, &r, msg,
			  sizeof(msg)) == WFS_OK) {
		char *d = NULL, *n = NULL;
		if (!r->path || filer_path_split(r->path, &d, &n) != WFS_OK)
			if (r->op != API_ASSIGN && r->op != API_LOOKUP_VOLUME &&
			    r->op != API_STATFS && r->op != API_FREE_CHUNKS &&
			    r->op != API_SET_XATTRS)
				abort();
		free(d);
		free(n);
		if (r->op == API_SET_XATTRS)
			xattr_ops_check(r);
		if (r->op == API_LIST && (r->limit < 1 || r->limit > API_LIST_MAX))
			abort();
		if (r->entry && filer_entry_check(r->entry) != WFS_OK)
			abort();
		if (r->entry)
			entry_again(r->entry);
		if (r->chunks)
			chunks_again(r->chunks);
		api_req_free(r);
	} else if (!memchr(msg, '\0', sizeof(msg))) {
		abort();
	}
	return 0;
}
