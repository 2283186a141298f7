/*
 * DESIGN: the entry encoding is a flat, big-endian record with a version byte
 * first (docs/filer-entry-format.md). It is canonical on purpose: the decoder
 * rejects anything the encoder would not produce (unknown flag bits, unsorted
 * or duplicate xattr names, NUL inside strings, trailing bytes), so a decoded
 * entry re-encodes to the very same bytes and the fuzzer can check that. Every
 * length is checked against both its bound and the bytes that remain before
 * anything is allocated, so a short hostile input cannot ask for a large
 * allocation.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "client/entry.h"
#include "util.h"

#define ENTRY_FLAG_HAS_CONTENT 0x01
/* Added after the first release: an i64 atime follows the chunk list, so blobs written
 * before it (bit clear, nothing after the chunks) still decode unchanged. */
#define ENTRY_FLAG_HAS_ATIME 0x02
/* Events: the content's length is there, its bytes are not (filer_entry.content_omitted). */
#define ENTRY_FLAG_CONTENT_OMITTED 0x04
/* Added later still: a u64 inode number follows the atime (if any), so it is the very end. */
#define ENTRY_FLAG_HAS_INODE 0x08
#define ENTRY_FLAGS_KNOWN                                                         \
	(ENTRY_FLAG_HAS_CONTENT | ENTRY_FLAG_HAS_ATIME | ENTRY_FLAG_CONTENT_OMITTED | \
	 ENTRY_FLAG_HAS_INODE)
#define CHUNK_FLAG_MANIFEST 0x01
/* Added with -encryptVolumeData: the 32-byte cipher key follows the flag byte, so records
 * written before it (bit clear) decode unchanged. */
#define CHUNK_FLAG_CIPHER_KEY 0x02
#define CHUNK_FLAGS_KNOWN     (CHUNK_FLAG_MANIFEST | CHUNK_FLAG_CIPHER_KEY)
/* Smallest encodings, used to bound counts by the bytes remaining. */
#define CHUNK_MIN_BYTES (2 + 1 + 8 + 8 + 8 + 2 + 1)
#define XATTR_MIN_BYTES (2 + 1 + 4)

static void free_attr_strings(struct filer_attr *a)
{
	free(a->mime);
	free(a->collection);
	free(a->replication);
	free(a->symlink_target);
	free(a->hard_link_id);
}

struct filer_entry *filer_entry_new(const char *dir, const char *name)
{
	struct filer_entry *e = xcalloc(1, sizeof(*e));
	e->dir = xstrdup(dir);
	e->name = xstrdup(name);
	return e;
}

void filer_chunks_clear(struct filer_chunk *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(c[i].fid);
		free(c[i].etag);
		c[i].fid = c[i].etag = NULL;
	}
}

void filer_chunks_free(struct filer_chunk *c, size_t n)
{
	if (!c)
		return;
	filer_chunks_clear(c, n);
	free(c);
}

void filer_entry_free(struct filer_entry *e)
{
	if (!e)
		return;
	free(e->dir);
	free(e->name);
	free_attr_strings(&e->attr);
	for (size_t i = 0; i < e->n_xattrs; i++) {
		free(e->xattrs[i].name);
		free(e->xattrs[i].value);
	}
	free(e->xattrs);
	free(e->content);
	filer_chunks_free(e->chunks, e->n_chunks);
	free(e);
}

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

static void *memdup(const void *p, size_t n)
{
	void *q;
	if (!p || !n)
		return NULL;
	q = xmalloc(n);
	memcpy(q, p, n);
	return q;
}

void filer_chunk_copy(struct filer_chunk *dst, const struct filer_chunk *src)
{
	*dst = *src;
	dst->fid = dup_or_null(src->fid);
	dst->etag = dup_or_null(src->etag);
}

void filer_chunk_copy_key(struct filer_chunk *dst, const struct filer_chunk *src)
{
	dst->has_cipher_key = src->has_cipher_key;
	memcpy(dst->cipher_key, src->cipher_key, sizeof(dst->cipher_key));
}

struct filer_entry *filer_entry_dup(const struct filer_entry *e)
{
	struct filer_entry *d = filer_entry_new(e->dir, e->name);
	d->attr = e->attr;
	d->attr.mime = dup_or_null(e->attr.mime);
	d->attr.collection = dup_or_null(e->attr.collection);
	d->attr.replication = dup_or_null(e->attr.replication);
	d->attr.symlink_target = dup_or_null(e->attr.symlink_target);
	d->attr.hard_link_id = memdup(e->attr.hard_link_id, e->attr.hard_link_id_len);
	if (!d->attr.hard_link_id)
		d->attr.hard_link_id_len = 0;
	if (e->n_xattrs) {
		d->xattrs = xcalloc(e->n_xattrs, sizeof(*d->xattrs));
		d->n_xattrs = e->n_xattrs;
		for (size_t i = 0; i < e->n_xattrs; i++) {
			d->xattrs[i].name = xstrdup(e->xattrs[i].name);
			d->xattrs[i].value = memdup(e->xattrs[i].value, e->xattrs[i].value_len);
			d->xattrs[i].value_len = d->xattrs[i].value ? e->xattrs[i].value_len : 0;
		}
	}
	if (e->has_content)
		filer_entry_set_content(d, e->content, e->content_len);
	d->content_omitted = e->content_omitted;
	if (e->content_omitted)
		d->content_len = e->content_len;
	if (e->n_chunks) {
		d->chunks = xcalloc(e->n_chunks, sizeof(*d->chunks));
		d->n_chunks = d->cap_chunks = e->n_chunks;
		for (size_t i = 0; i < e->n_chunks; i++)
			filer_chunk_copy(&d->chunks[i], &e->chunks[i]);
	}
	return d;
}

void filer_entry_set_path(struct filer_entry *e, const char *dir, const char *name)
{
	char *d = xstrdup(dir), *n = xstrdup(name);
	free(e->dir);
	free(e->name);
	e->dir = d;
	e->name = n;
}

char *filer_entry_full_path(const struct filer_entry *e)
{
	if (!e->name[0])
		return xstrdup(e->dir);
	if (!strcmp(e->dir, "/"))
		return xasprintf("/%s", e->name);
	return xasprintf("%s/%s", e->dir, e->name);
}

wfs_err filer_path_split(const char *path, char **dir, char **name)
{
	size_t len = strlen(path), last = 0;
	const char *p;

	if (len == 0 || path[0] != '/' || len > FILER_PATH_MAX)
		return WFS_EINVAL;
	if (len == 1) {
		*dir = xstrdup("/");
		*name = xstrdup("");
		return WFS_OK;
	}
	/* check every component: non-empty, not "." or "..", bounded */
	for (p = path + 1;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || n > FILER_NAME_MAX || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return WFS_EINVAL;
		last = (size_t)(p - path);
		if (!slash)
			break;
		p = slash + 1;
	}
	*dir = last == 1 ? xstrdup("/") : xstrndup(path, last - 1);
	*name = xstrdup(path + last);
	return WFS_OK;
}

/* Index of name in e's sorted xattrs, or the insertion point with *found false. */
static size_t xattr_find(const struct filer_entry *e, const char *name, bool *found)
{
	size_t lo = 0, hi = e->n_xattrs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(e->xattrs[mid].name, name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

void filer_entry_xattr_set(struct filer_entry *e, const char *name, const void *value, size_t len)
{
	bool found;
	size_t i = xattr_find(e, name, &found);
	struct filer_xattr *x;

	if (!found) {
		e->xattrs = xrealloc(e->xattrs, (e->n_xattrs + 1) * sizeof(*e->xattrs));
		memmove(&e->xattrs[i + 1], &e->xattrs[i], (e->n_xattrs - i) * sizeof(*e->xattrs));
		e->n_xattrs++;
		x = &e->xattrs[i];
		x->name = xstrdup(name);
	} else {
		x = &e->xattrs[i];
		free(x->value);
	}
	x->value = memdup(value, len);
	x->value_len = x->value ? len : 0;
}

const struct filer_xattr *filer_entry_xattr_get(const struct filer_entry *e, const char *name)
{
	bool found;
	size_t i = xattr_find(e, name, &found);
	return found ? &e->xattrs[i] : NULL;
}

wfs_err filer_entry_xattr_remove(struct filer_entry *e, const char *name)
{
	bool found;
	size_t i = xattr_find(e, name, &found);
	if (!found)
		return WFS_ENOENT;
	free(e->xattrs[i].name);
	free(e->xattrs[i].value);
	memmove(&e->xattrs[i], &e->xattrs[i + 1], (e->n_xattrs - i - 1) * sizeof(*e->xattrs));
	e->n_xattrs--;
	return WFS_OK;
}

void filer_entry_set_content(struct filer_entry *e, const void *data, size_t len)
{
	uint8_t *c = memdup(data, len);
	free(e->content);
	e->content = c;
	e->content_len = c ? len : 0;
	e->has_content = true;
	e->content_omitted = false;
}

void filer_entry_clear_content(struct filer_entry *e)
{
	free(e->content);
	e->content = NULL;
	e->content_len = 0;
	e->has_content = false;
	e->content_omitted = false;
}

struct filer_chunk *filer_entry_add_chunk(struct filer_entry *e, const char *fid, uint64_t offset,
					  uint64_t size, int64_t mtime_ns, const char *etag,
					  bool is_manifest)
{
	struct filer_chunk *c;
	if (e->n_chunks == e->cap_chunks) {
		e->cap_chunks = e->cap_chunks ? e->cap_chunks * 2 : 4;
		e->chunks = xrealloc(e->chunks, e->cap_chunks * sizeof(*e->chunks));
	}
	c = &e->chunks[e->n_chunks++];
	c->fid = xstrdup(fid);
	c->offset = offset;
	c->size = size;
	c->mtime_ns = mtime_ns;
	c->etag = etag && etag[0] ? xstrdup(etag) : NULL;
	c->is_manifest = is_manifest;
	c->has_cipher_key = false;
	memset(c->cipher_key, 0, sizeof(c->cipher_key));
	return c;
}

struct filer_chunk *filer_entry_push_chunk(struct filer_entry *e, const struct filer_chunk *src)
{
	struct filer_chunk *c = filer_entry_add_chunk(e, src->fid, src->offset, src->size,
						      src->mtime_ns, src->etag, src->is_manifest);
	filer_chunk_copy_key(c, src);
	return c;
}

/* ---- validation ---------------------------------------------------------------------------- */

static bool str_ok(const char *s, size_t max) { return !s || strlen(s) <= max; }

static bool chunk_ok(const struct filer_chunk *c)
{
	size_t fl = c->fid ? strlen(c->fid) : 0;
	return fl >= 1 && fl <= FILER_FID_MAX && str_ok(c->etag, FILER_ETAG_MAX) &&
	       c->offset <= UINT64_MAX - c->size;
}

wfs_err filer_entry_check(const struct filer_entry *e)
{
	const struct filer_attr *a = &e->attr;
	if (!str_ok(a->mime, FILER_SHORT_MAX) || !str_ok(a->collection, FILER_SHORT_MAX) ||
	    !str_ok(a->replication, FILER_SHORT_MAX) ||
	    !str_ok(a->symlink_target, FILER_SYMLINK_MAX) ||
	    a->hard_link_id_len > FILER_HARDLINK_ID_MAX ||
	    (a->hard_link_id_len && !a->hard_link_id))
		return WFS_EINVAL;
	if (e->n_xattrs > FILER_XATTRS_MAX)
		return WFS_EINVAL;
	for (size_t i = 0; i < e->n_xattrs; i++) {
		const struct filer_xattr *x = &e->xattrs[i];
		size_t nl = x->name ? strlen(x->name) : 0;
		if (nl == 0 || nl > FILER_SHORT_MAX || x->value_len > FILER_XATTR_VALUE_MAX ||
		    (x->value_len && !x->value))
			return WFS_EINVAL;
		if (i > 0 && strcmp(e->xattrs[i - 1].name, x->name) >= 0)
			return WFS_EINVAL;
	}
	if (e->has_content &&
	    (e->content_len > FILER_CONTENT_MAX || (e->content_len && !e->content)))
		return WFS_EINVAL;
	if (e->content_omitted &&
	    (e->has_content || e->content || e->content_len > FILER_CONTENT_MAX))
		return WFS_EINVAL;
	if (e->n_chunks > FILER_CHUNKS_MAX)
		return WFS_EINVAL;
	for (size_t i = 0; i < e->n_chunks; i++)
		if (!chunk_ok(&e->chunks[i]))
			return WFS_EINVAL;
	return WFS_OK;
}

/* ---- encoding ------------------------------------------------------------------------------ */

static void put8(buf *b, uint8_t v) { buf_append(b, &v, 1); }

static void put16(buf *b, uint16_t v)
{
	uint8_t p[2];
	put_be16(p, v);
	buf_append(b, p, 2);
}

static void put32(buf *b, uint32_t v)
{
	uint8_t p[4];
	put_be32(p, v);
	buf_append(b, p, 4);
}

static void put64(buf *b, uint64_t v)
{
	uint8_t p[8];
	put_be64(p, v);
	buf_append(b, p, 8);
}

static void put_str16(buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	put16(b, (uint16_t)n);
	if (n)
		buf_append(b, s, n);
}

void filer_chunk_list_encode(buf *out, const struct filer_chunk *c, size_t n)
{
	put32(out, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		put_str16(out, c[i].fid);
		put64(out, c[i].offset);
		put64(out, c[i].size);
		put64(out, (uint64_t)c[i].mtime_ns);
		put_str16(out, c[i].etag);
		put8(out, (uint8_t)((c[i].is_manifest ? CHUNK_FLAG_MANIFEST : 0) |
				    (c[i].has_cipher_key ? CHUNK_FLAG_CIPHER_KEY : 0)));
		if (c[i].has_cipher_key)
			buf_append(out, c[i].cipher_key, FILER_CHUNK_KEY_LEN);
	}
}

wfs_err filer_entry_encode(const struct filer_entry *e, buf *out)
{
	const struct filer_attr *a = &e->attr;
	wfs_err err = filer_entry_check(e);
	if (err)
		return err;
	put8(out, FILER_ENTRY_VERSION);
	put8(out, (uint8_t)((e->has_content ? ENTRY_FLAG_HAS_CONTENT : 0) |
			    (a->atime_ns != 0 ? ENTRY_FLAG_HAS_ATIME : 0) |
			    (e->content_omitted ? ENTRY_FLAG_CONTENT_OMITTED : 0) |
			    (a->inode != 0 ? ENTRY_FLAG_HAS_INODE : 0)));
	put32(out, a->mode);
	put32(out, a->uid);
	put32(out, a->gid);
	put64(out, a->size);
	put64(out, (uint64_t)a->mtime_ns);
	put64(out, (uint64_t)a->ctime_ns);
	put64(out, (uint64_t)a->crtime_ns);
	put32(out, a->nlink);
	put64(out, a->rdev);
	put32(out, a->ttl_sec);
	put_str16(out, a->mime);
	put_str16(out, a->collection);
	put_str16(out, a->replication);
	put_str16(out, a->symlink_target);
	put16(out, (uint16_t)a->hard_link_id_len);
	if (a->hard_link_id_len)
		buf_append(out, a->hard_link_id, a->hard_link_id_len);
	put32(out, (uint32_t)e->n_xattrs);
	for (size_t i = 0; i < e->n_xattrs; i++) {
		put_str16(out, e->xattrs[i].name);
		put32(out, (uint32_t)e->xattrs[i].value_len);
		if (e->xattrs[i].value_len)
			buf_append(out, e->xattrs[i].value, e->xattrs[i].value_len);
	}
	if (e->has_content || e->content_omitted)
		put32(out, (uint32_t)e->content_len);
	if (e->has_content && e->content_len)
		buf_append(out, e->content, e->content_len);
	filer_chunk_list_encode(out, e->chunks, e->n_chunks);
	if (a->atime_ns != 0)
		put64(out, (uint64_t)a->atime_ns);
	if (a->inode != 0)
		put64(out, a->inode);
	return WFS_OK;
}

/* ---- decoding ------------------------------------------------------------------------------ */

struct rd {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static const uint8_t *take(struct rd *r, size_t n)
{
	const uint8_t *p;
	if (r->bad || r->left < n) {
		r->bad = true;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

static uint8_t get8(struct rd *r)
{
	const uint8_t *p = take(r, 1);
	return p ? p[0] : 0;
}

static uint16_t get16(struct rd *r)
{
	const uint8_t *p = take(r, 2);
	return p ? get_be16(p) : 0;
}

static uint32_t get32(struct rd *r)
{
	const uint8_t *p = take(r, 4);
	return p ? get_be32(p) : 0;
}

static uint64_t get64(struct rd *r)
{
	const uint8_t *p = take(r, 8);
	return p ? get_be64(p) : 0;
}

/*
 * A u16-length string of min..max bytes without NUL; NULL when empty. Sets
 * r->bad on any violation.
 */
static char *get_str16(struct rd *r, size_t min, size_t max)
{
	uint16_t n = get16(r);
	const uint8_t *p;
	if (r->bad)
		return NULL;
	if (n < min || n > max) {
		r->bad = true;
		return NULL;
	}
	if (n == 0)
		return NULL;
	p = take(r, n);
	if (!p)
		return NULL;
	if (memchr(p, '\0', n)) {
		r->bad = true;
		return NULL;
	}
	return xstrndup((const char *)p, n);
}

static uint8_t *get_bytes(struct rd *r, size_t n)
{
	const uint8_t *p;
	if (n == 0)
		return NULL;
	p = take(r, n);
	return p ? memdup(p, n) : NULL;
}

static void chunk_list_read(struct rd *r, struct filer_chunk **out, size_t *nout)
{
	uint32_t n = get32(r);
	struct filer_chunk *c;
	size_t i;

	*out = NULL;
	*nout = 0;
	if (r->bad)
		return;
	if (n > FILER_CHUNKS_MAX || (uint64_t)n * CHUNK_MIN_BYTES > r->left) {
		r->bad = true;
		return;
	}
	if (n == 0)
		return;
	c = xcalloc(n, sizeof(*c));
	for (i = 0; i < n && !r->bad; i++) {
		uint8_t fl;
		c[i].fid = get_str16(r, 1, FILER_FID_MAX);
		c[i].offset = get64(r);
		c[i].size = get64(r);
		c[i].mtime_ns = (int64_t)get64(r);
		c[i].etag = get_str16(r, 0, FILER_ETAG_MAX);
		fl = get8(r);
		c[i].is_manifest = fl & CHUNK_FLAG_MANIFEST;
		if (fl & CHUNK_FLAG_CIPHER_KEY) {
			const uint8_t *k = take(r, FILER_CHUNK_KEY_LEN);
			if (k) {
				memcpy(c[i].cipher_key, k, FILER_CHUNK_KEY_LEN);
				c[i].has_cipher_key = true;
			}
		}
		if ((fl & ~CHUNK_FLAGS_KNOWN) || c[i].offset > UINT64_MAX - c[i].size)
			r->bad = true;
	}
	if (r->bad) {
		filer_chunks_free(c, n);
		return;
	}
	*out = c;
	*nout = n;
}

wfs_err filer_chunk_list_decode(const uint8_t *p, size_t len, size_t *used,
				struct filer_chunk **out, size_t *n)
{
	struct rd r = {p, len, false};
	chunk_list_read(&r, out, n);
	if (r.bad)
		return WFS_ECORRUPT;
	*used = len - r.left;
	return WFS_OK;
}

int filer_entry_encoded_version(const uint8_t *data, size_t len) { return len ? data[0] : -1; }

wfs_err filer_entry_decode(const uint8_t *data, size_t len, const char *dir, const char *name,
			   struct filer_entry **out)
{
	struct rd r = {data, len, false};
	struct filer_entry *e;
	struct filer_attr *a;
	uint8_t flags;
	uint32_t nx;
	uint16_t hl;

	*out = NULL;
	if (len > FILER_ENCODED_MAX || len < 2 || data[0] != FILER_ENTRY_VERSION)
		return WFS_ECORRUPT;
	e = filer_entry_new(dir, name);
	a = &e->attr;
	get8(&r);
	flags = get8(&r);
	if ((flags & ~ENTRY_FLAGS_KNOWN) ||
	    ((flags & ENTRY_FLAG_HAS_CONTENT) && (flags & ENTRY_FLAG_CONTENT_OMITTED)))
		goto bad;
	a->mode = get32(&r);
	a->uid = get32(&r);
	a->gid = get32(&r);
	a->size = get64(&r);
	a->mtime_ns = (int64_t)get64(&r);
	a->ctime_ns = (int64_t)get64(&r);
	a->crtime_ns = (int64_t)get64(&r);
	a->nlink = get32(&r);
	a->rdev = get64(&r);
	a->ttl_sec = get32(&r);
	a->mime = get_str16(&r, 0, FILER_SHORT_MAX);
	a->collection = get_str16(&r, 0, FILER_SHORT_MAX);
	a->replication = get_str16(&r, 0, FILER_SHORT_MAX);
	a->symlink_target = get_str16(&r, 0, FILER_SYMLINK_MAX);
	hl = get16(&r);
	if (r.bad || hl > FILER_HARDLINK_ID_MAX)
		goto bad;
	a->hard_link_id = get_bytes(&r, hl);
	a->hard_link_id_len = a->hard_link_id ? hl : 0;

	nx = get32(&r);
	if (r.bad || nx > FILER_XATTRS_MAX || (uint64_t)nx * XATTR_MIN_BYTES > r.left)
		goto bad;
	if (nx) {
		e->xattrs = xcalloc(nx, sizeof(*e->xattrs));
		for (uint32_t i = 0; i < nx && !r.bad; i++) {
			struct filer_xattr *x = &e->xattrs[i];
			uint32_t vl;
			x->name = get_str16(&r, 1, FILER_SHORT_MAX);
			if (r.bad)
				break;
			e->n_xattrs++;
			if (i > 0 && strcmp(e->xattrs[i - 1].name, x->name) >= 0)
				goto bad;
			vl = get32(&r);
			if (vl > FILER_XATTR_VALUE_MAX)
				goto bad;
			x->value = get_bytes(&r, vl);
			x->value_len = x->value ? vl : 0;
		}
	}
	if (r.bad)
		goto bad;
	if (flags & ENTRY_FLAG_HAS_CONTENT) {
		uint32_t cl = get32(&r);
		if (r.bad || cl > FILER_CONTENT_MAX)
			goto bad;
		e->has_content = true;
		e->content = get_bytes(&r, cl);
		e->content_len = e->content ? cl : 0;
	} else if (flags & ENTRY_FLAG_CONTENT_OMITTED) {
		uint32_t cl = get32(&r);
		if (r.bad || cl > FILER_CONTENT_MAX)
			goto bad;
		e->content_omitted = true;
		e->content_len = cl;
	}
	chunk_list_read(&r, &e->chunks, &e->n_chunks);
	e->cap_chunks = e->n_chunks;
	if (flags & ENTRY_FLAG_HAS_ATIME) {
		a->atime_ns = (int64_t)get64(&r);
		/* the encoder never sets the bit for 0: that spelling is not canonical */
		if (!r.bad && a->atime_ns == 0)
			goto bad;
	}
	if (flags & ENTRY_FLAG_HAS_INODE) {
		a->inode = get64(&r);
		if (!r.bad && a->inode == 0)
			goto bad; /* as for the atime: 0 is spelt by leaving the bit clear */
	}
	if (r.bad || r.left != 0)
		goto bad;
	*out = e;
	return WFS_OK;
bad:
	filer_entry_free(e);
	return WFS_ECORRUPT;
}
