/*
 * Store dispatch: picks a backend from the DSN, validates every argument once
 * (so backends may trust them), encodes entries, and turns a name prefix into
 * a byte range so listing stays an index range scan.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "filer/store.h"
#include "filer/store_impl.h"
#include "util.h"

static uint64_t (*hash_hook)(const char *dir);

uint64_t filer_store_dir_hash(const char *dir)
{
	if (hash_hook)
		return hash_hook(dir);
	return XXH64(dir, strlen(dir), 0);
}

void filer_store_set_hash_for_testing(uint64_t (*fn)(const char *dir))
{
	hash_hook = fn;
}

static bool has_prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

wfs_err filer_store_open(const char *dsn, struct filer_store **out)
{
	*out = NULL;
	if (!dsn)
		return WFS_EINVAL;
	if (has_prefix(dsn, "sqlite://"))
		return filer_store_sqlite_ops.open(dsn + strlen("sqlite://"), out);
	if (has_prefix(dsn, "postgres://") || has_prefix(dsn, "postgresql://") ||
	    (strchr(dsn, '=') && !strstr(dsn, "://")))
		return filer_store_postgres_ops.open(dsn, out);
	return WFS_EINVAL;
}

void filer_store_close(struct filer_store *s)
{
	if (s)
		s->ops->close(s);
}

const char *filer_store_name(const struct filer_store *s)
{
	return s->ops->name;
}

wfs_err filer_store_begin(struct filer_store *s, struct filer_tx **tx)
{
	*tx = NULL;
	return s->ops->begin(s, tx);
}

wfs_err filer_store_commit(struct filer_tx *tx)
{
	return tx->store->ops->commit(tx);
}

void filer_store_rollback(struct filer_tx *tx)
{
	if (tx)
		tx->store->ops->rollback(tx);
}

/* A stored directory: "/" or "/a/b" (no trailing slash, no empty/./.. components). */
static bool dir_ok(const char *dir)
{
	char *d, *n;
	if (!dir)
		return false;
	if (filer_path_split(dir, &d, &n))
		return false;
	free(d);
	free(n);
	return true;
}

/* A name inside dir: one component, or "" for the root entry itself. */
static bool name_ok(const char *dir, const char *name)
{
	size_t n;
	if (!name)
		return false;
	n = strlen(name);
	if (n == 0)
		return !strcmp(dir, "/");
	return n <= FILER_NAME_MAX && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

static bool tx_matches(struct filer_store *s, struct filer_tx *tx)
{
	return !tx || tx->store == s;
}

static wfs_err put_entry(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e,
			 bool insert)
{
	buf b = BUF_INIT;
	wfs_err err;
	if (!tx_matches(s, tx) || !dir_ok(e->dir) || !name_ok(e->dir, e->name))
		return WFS_EINVAL;
	err = filer_entry_encode(e, &b);
	if (!err)
		err = insert ? s->ops->insert(s, tx, e->dir, e->name, b.data, b.len)
			     : s->ops->update(s, tx, e->dir, e->name, b.data, b.len);
	buf_free(&b);
	return err;
}

wfs_err filer_store_insert(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e)
{
	return put_entry(s, tx, e, true);
}

wfs_err filer_store_update(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e)
{
	return put_entry(s, tx, e, false);
}

wfs_err filer_store_find(struct filer_store *s, struct filer_tx *tx, const char *dir,
			 const char *name, struct filer_entry **out)
{
	*out = NULL;
	if (!tx_matches(s, tx) || !dir_ok(dir) || !name_ok(dir, name))
		return WFS_EINVAL;
	return s->ops->find(s, tx, dir, name, out);
}

wfs_err filer_store_delete(struct filer_store *s, struct filer_tx *tx, const char *dir,
			   const char *name)
{
	if (!tx_matches(s, tx) || !dir_ok(dir) || !name_ok(dir, name))
		return WFS_EINVAL;
	return s->ops->del(s, tx, dir, name);
}

wfs_err filer_store_delete_children(struct filer_store *s, struct filer_tx *tx, const char *dir,
				    uint64_t *deleted)
{
	uint64_t n = 0;
	wfs_err err;
	if (!tx_matches(s, tx) || !dir_ok(dir))
		return WFS_EINVAL;
	err = s->ops->delete_children(s, tx, dir, &n);
	if (deleted)
		*deleted = n;
	return err;
}

/* Length of the valid UTF-8 character at p (n bytes left), or 0 if invalid. */
static size_t utf8_char(const unsigned char *p, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, c = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, c = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, c = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	*cp = c;
	return len;
}

static size_t utf8_put(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 0x3f));
	out[2] = (char)(0x80 | (c >> 6 & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

char *filer_store_prefix_end(const char *prefix)
{
	const unsigned char *p = (const unsigned char *)prefix;
	size_t n = strlen(prefix), pos = 0, nchars = 0;
	size_t *starts = xmalloc((n + 1) * sizeof(*starts));
	uint32_t *cps = xmalloc((n + 1) * sizeof(*cps));
	char *out = NULL;
	bool valid = true;

	while (pos < n) {
		size_t l = utf8_char(p + pos, n - pos, &cps[nchars]);
		if (!l) {
			valid = false;
			break;
		}
		starts[nchars++] = pos;
		pos += l;
	}
	if (valid) {
		/* drop trailing U+10FFFF, then increment the last code point (skipping surrogates) */
		while (nchars && cps[nchars - 1] == 0x10ffff)
			nchars--;
		if (nchars) {
			uint32_t c = cps[nchars - 1] + 1;
			if (c == 0xd800)
				c = 0xe000;
			out = xmalloc(starts[nchars - 1] + 5);
			memcpy(out, prefix, starts[nchars - 1]);
			out[starts[nchars - 1] + utf8_put(out + starts[nchars - 1], c)] = '\0';
		}
	} else {
		/* arbitrary bytes: drop trailing 0xff, then increment the last byte */
		while (n && p[n - 1] == 0xff)
			n--;
		if (n) {
			out = xstrndup(prefix, n);
			out[n - 1] = (char)(p[n - 1] + 1);
		}
	}
	free(starts);
	free(cps);
	return out;
}

wfs_err filer_store_list(struct filer_store *s, struct filer_tx *tx, const char *dir,
			 const char *start, bool inclusive, size_t limit, const char *prefix,
			 filer_list_fn fn, void *ctx, size_t *count)
{
	const char *lo = start && start[0] ? start : NULL;
	bool lo_incl = inclusive;
	char *hi = NULL;
	size_t got = 0;
	wfs_err err;

	if (count)
		*count = 0;
	if (!tx_matches(s, tx) || !dir_ok(dir) || limit == 0 || limit > FILER_LIST_LIMIT_MAX ||
	    (lo && strlen(lo) > FILER_NAME_MAX) || (prefix && strlen(prefix) > FILER_NAME_MAX))
		return WFS_EINVAL;
	if (prefix && prefix[0]) {
		/* the range starts at the later of start and prefix */
		if (!lo || strcmp(prefix, lo) > 0) {
			lo = prefix;
			lo_incl = true;
		}
		hi = filer_store_prefix_end(prefix);
	} else {
		prefix = NULL;
	}
	err = s->ops->list(s, tx, dir, lo, lo_incl, hi, prefix, limit, fn, ctx, &got);
	free(hi);
	if (count)
		*count = got;
	return err;
}

static bool kv_args_ok(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen)
{
	return tx_matches(s, tx) && key && klen >= 1 && klen <= FILER_KV_KEY_MAX;
}

wfs_err filer_store_kv_put(struct filer_store *s, struct filer_tx *tx, const void *key,
			   size_t klen, const void *val, size_t vlen)
{
	if (!kv_args_ok(s, tx, key, klen) || vlen > FILER_KV_VALUE_MAX || (vlen && !val))
		return WFS_EINVAL;
	return s->ops->kv_put(s, tx, key, klen, val, vlen);
}

wfs_err filer_store_kv_get(struct filer_store *s, struct filer_tx *tx, const void *key,
			   size_t klen, void **val, size_t *vlen)
{
	*val = NULL;
	*vlen = 0;
	if (!kv_args_ok(s, tx, key, klen))
		return WFS_EINVAL;
	return s->ops->kv_get(s, tx, key, klen, val, vlen);
}

wfs_err filer_store_kv_delete(struct filer_store *s, struct filer_tx *tx, const void *key,
			      size_t klen)
{
	if (!kv_args_ok(s, tx, key, klen))
		return WFS_EINVAL;
	return s->ops->kv_delete(s, tx, key, klen);
}
