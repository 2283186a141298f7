/*
 * Object metadata in the filer entry (s3_meta.h).
 */
#include "config.h"
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>
#include "s3/s3_int.h"
#include "s3/s3_meta.h"
#include "util.h"

#define X_ETAG        "s3.etag"
#define X_CKSUM       "s3.cksum."
#define X_META        "s3.meta."
#define X_HEADER      "s3.h."
#define X_PARTS       "s3.parts"
#define X_PARTS_CKSUM "s3.parts.cksum"

/* The content headers S3 stores with an object and gives back on reads. */
static const char *const content_headers[] = {
	"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires",
};

/* Content-Encoding without the aws-chunked token (it describes the upload, not the object). */
static char *content_encoding(const char *v)
{
	buf b = BUF_INIT;
	char *copy = xstrdup(v), *save = NULL, *out;
	size_t n;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		n = strlen(t);
		while (n && t[n - 1] == ' ')
			t[--n] = '\0';
		if (!n || !strcasecmp(t, "aws-chunked"))
			continue;
		if (b.len)
			buf_append(&b, ",", 1);
		buf_append(&b, t, n);
	}
	free(copy);
	if (!b.len) {
		buf_free(&b);
		return NULL;
	}
	buf_append(&b, "", 1);
	out = buf_steal(&b, &n);
	return out;
}

static bool header_at(const void *src, size_t i, const char **name, const char **value)
{
	return http_req_header_at(src, i, name, value);
}

bool s3_meta_from_request(struct s3_req *r, struct s3_meta *m)
{
	if (!s3_meta_from_pairs(r, m, header_at, r->req))
		return false;
	return s3_tagging_header(r, m->e) && s3_lock_header(r, m->e) && s3_acl_header(r, m->e);
}

bool s3_meta_from_pairs(struct s3_req *r, struct s3_meta *m,
			bool (*at)(const void *src, size_t i, const char **name,
				   const char **value),
			const void *src)
{
	const char *name, *value;
	size_t user = 0;

	m->e = filer_entry_new("/", "object");
	m->mime = NULL;
	for (size_t i = 0; at(src, i, &name, &value); i++) {
		char *x;
		value = value ? value : "";
		if (!strncasecmp(name, "x-amz-meta-", 11)) {
			user += strlen(name) - 11 + strlen(value);
			if (user > S3_META_USER_MAX) {
				s3_error(
					r, S3_METADATA_TOO_LARGE,
					"Your metadata headers exceed the maximum allowed metadata "
					"size (%d bytes).",
					S3_META_USER_MAX);
				return false;
			}
			x = xasprintf(X_META "%s", name + 11);
			for (char *c = x + strlen(X_META); *c; c++)
				*c = (char)tolower((unsigned char)*c);
			filer_entry_xattr_set(m->e, x, value, strlen(value));
			free(x);
			continue;
		}
		if (!strcasecmp(name, "Content-Type")) {
			free(m->mime);
			m->mime = *value ? xstrndup(value, FILER_SHORT_MAX) : NULL;
			continue;
		}
		for (size_t k = 0; k < ARRAY_LEN(content_headers); k++) {
			char *v;
			if (strcasecmp(name, content_headers[k]))
				continue;
			v = k == 2 ? content_encoding(value) : xstrdup(value);
			if (v) {
				x = xasprintf(X_HEADER "%s", content_headers[k]);
				filer_entry_xattr_set(m->e, x, v, strlen(v));
				free(x);
			}
			free(v);
		}
	}
	return true;
}

void s3_meta_from_entry(struct s3_meta *m, const struct filer_entry *src)
{
	for (size_t i = 0; i < src->n_xattrs; i++) {
		const struct filer_xattr *x = &src->xattrs[i];
		if (!strncmp(x->name, X_META, strlen(X_META)) ||
		    !strncmp(x->name, X_HEADER, strlen(X_HEADER)) ||
		    !strcmp(x->name, S3_XATTR_TAGGING))
			filer_entry_xattr_set(m->e, x->name, x->value, x->value_len);
	}
	free(m->mime);
	m->mime = src->attr.mime && *src->attr.mime ? xstrdup(src->attr.mime) : NULL;
}

/* Sets name to "<value>@<mtime_ns>": believed while the entry keeps that mtime. */
static void set_stamped(struct s3_meta *m, const char *name, const char *value, int64_t mtime_ns)
{
	char *v = xasprintf("%s@%" PRId64, value, mtime_ns);
	filer_entry_xattr_set(m->e, name, v, strlen(v));
	free(v);
}

void s3_meta_stamp(struct s3_meta *m, int64_t mtime_ns, const char *etag, enum s3_cksum alg,
		   const char *cksum_b64)
{
	set_stamped(m, X_ETAG, etag, mtime_ns);
	if (alg != S3_CKSUM_NONE) {
		char name[32];
		snprintf(name, sizeof(name), X_CKSUM "%s", s3_cksum_header(alg) + 15);
		set_stamped(m, name, cksum_b64, mtime_ns);
	}
}

void s3_meta_stamp_parts(struct s3_meta *m, int64_t mtime_ns, const uint64_t *sizes, size_t n)
{
	buf b = BUF_INIT;
	char *v;
	size_t len;
	for (size_t i = 0, run; i < n; i += run) {
		char item[48];
		for (run = 1; i + run < n && sizes[i + run] == sizes[i]; run++)
			;
		if (run > 1)
			snprintf(item, sizeof(item), "%s%" PRIu64 "*%zu", i ? "," : "", sizes[i],
				 run);
		else
			snprintf(item, sizeof(item), "%s%" PRIu64, i ? "," : "", sizes[i]);
		buf_append(&b, item, strlen(item));
	}
	buf_append(&b, "", 1);
	v = buf_steal(&b, &len);
	set_stamped(m, X_PARTS, v, mtime_ns);
	free(v);
}

void s3_meta_stamp_part_checksums(struct s3_meta *m, int64_t mtime_ns, const char *list)
{
	set_stamped(m, X_PARTS_CKSUM, list, mtime_ns);
}

void s3_meta_free(struct s3_meta *m)
{
	filer_entry_free(m->e);
	free(m->mime);
	m->e = NULL;
	m->mime = NULL;
}

/*
 * A stamped attribute's value (without its stamp, *len bytes, not
 * NUL-terminated) when it is current for e; NULL when absent, malformed or
 * stale.
 */
static const char *stamped(const struct filer_entry *e, const char *name, size_t *len)
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, name);
	char stamp[32];
	const char *at;
	size_t n;

	if (!x || !x->value_len)
		return NULL;
	at = memrchr(x->value, '@', x->value_len);
	if (!at)
		return NULL;
	n = (size_t)(at - (const char *)x->value);
	snprintf(stamp, sizeof(stamp), "%" PRId64, e->attr.mtime_ns);
	if (x->value_len - n - 1 != strlen(stamp) || memcmp(at + 1, stamp, strlen(stamp)))
		return NULL;
	*len = n;
	return (const char *)x->value;
}

/* The same into out (NUL-terminated); false also when it does not fit. */
static bool get_stamped(const struct filer_entry *e, const char *name, char *out, size_t outlen)
{
	size_t n;
	const char *v = stamped(e, name, &n);
	if (!v || n + 1 > outlen)
		return false;
	memcpy(out, v, n);
	out[n] = '\0';
	return true;
}

void s3_etag(const struct filer_entry *e, char out[S3_ETAG_MAX])
{
	char v[S3_ETAG_MAX - 2];
	XXH64_state_t *st;

	if (get_stamped(e, X_ETAG, v, sizeof(v))) {
		snprintf(out, S3_ETAG_MAX, "\"%s\"", v);
		return;
	}
	st = XXH64_createState();
	XXH64_reset(st, 0);
	XXH64_update(st, &e->attr.size, sizeof(e->attr.size));
	XXH64_update(st, &e->attr.mtime_ns, sizeof(e->attr.mtime_ns));
	for (size_t i = 0; i < e->n_chunks; i++)
		XXH64_update(st, e->chunks[i].fid, strlen(e->chunks[i].fid) + 1);
	snprintf(out, S3_ETAG_MAX, "\"%016llx\"", (unsigned long long)XXH64_digest(st));
	XXH64_freeState(st);
}

enum s3_cksum s3_meta_checksum(const struct filer_entry *e, char out[S3_CKSUM_VALUE_MAX])
{
	for (size_t i = 0; i < e->n_xattrs; i++) {
		const char *name = e->xattrs[i].name;
		char header[48];
		enum s3_cksum a;
		if (strncmp(name, X_CKSUM, strlen(X_CKSUM)))
			continue;
		snprintf(header, sizeof(header), "x-amz-checksum-%s", name + strlen(X_CKSUM));
		a = s3_cksum_from_header(header);
		if (a && get_stamped(e, name, out, S3_CKSUM_VALUE_MAX))
			return a;
	}
	return S3_CKSUM_NONE;
}

bool s3_meta_checksum_alg(const struct filer_entry *e, enum s3_cksum a,
			  char out[S3_CKSUM_VALUE_MAX])
{
	char name[32];
	if (!s3_cksum_header(a))
		return false;
	snprintf(name, sizeof(name), X_CKSUM "%s", s3_cksum_header(a) + 15);
	return get_stamped(e, name, out, S3_CKSUM_VALUE_MAX);
}

const char *s3_meta_checksum_type(const char *value)
{
	return strchr(value, '-') ? "COMPOSITE" : "FULL_OBJECT";
}

void s3_checksum_elems(xml_w *w, const struct filer_entry *e)
{
	char v[S3_CKSUM_VALUE_MAX];
	enum s3_cksum a = s3_meta_checksum(e, v);
	if (!a)
		return;
	xml_elem(w, "ChecksumAlgorithm", s3_cksum_name(a));
	xml_elem(w, "ChecksumType", s3_meta_checksum_type(v));
}

/* Reads a decimal number of v[*i..n) (no sign, no leading '+'); false when none or too big. */
static bool parts_number(const char *v, size_t n, size_t *i, uint64_t *out)
{
	size_t start = *i;
	uint64_t x = 0;
	for (; *i < n && v[*i] >= '0' && v[*i] <= '9'; (*i)++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(v[*i] - '0');
	}
	*out = x;
	return *i > start;
}

uint32_t s3_meta_part(const struct filer_entry *e, uint32_t n, uint64_t *off, uint64_t *len)
{
	size_t vlen, i = 0;
	const char *v = stamped(e, X_PARTS, &vlen);
	uint64_t count = 0, pos = 0, size = e->has_content ? e->content_len : e->attr.size;

	if (!v)
		return 0;
	while (i < vlen) {
		uint64_t sz, run = 1;
		if (!parts_number(v, vlen, &i, &sz))
			return 0;
		if (i < vlen && v[i] == '*') {
			i++;
			if (!parts_number(v, vlen, &i, &run) || !run)
				return 0;
		}
		if (i < vlen && (v[i] != ',' || ++i == vlen))
			return 0; /* items are separated by ',', and one follows it */
		if (run > S3_PARTS_MAX - count || (sz && run > (UINT64_MAX - pos) / sz))
			return 0;
		if (n > count && n <= count + run) {
			*off = pos + (n - count - 1) * sz;
			*len = sz;
		}
		count += run;
		pos += run * sz;
	}
	/* a record that does not add up to the object is no record */
	return pos == size && count ? (uint32_t)count : 0;
}

const char *s3_meta_part_checksums(const struct filer_entry *e, size_t *len)
{
	return stamped(e, X_PARTS_CKSUM, len);
}

const char *s3_meta_list_next(const char **v, size_t *len, size_t *item_len)
{
	const char *item = *v, *comma = memchr(item, ',', *len);

	*item_len = comma ? (size_t)(comma - item) : *len;
	*len -= comma ? *item_len + 1 : *item_len;
	*v = comma ? comma + 1 : NULL;
	return item;
}

bool s3_meta_part_checksum(const struct filer_entry *e, uint32_t n, char out[S3_CKSUM_B64_SIZE])
{
	size_t vlen, len = 0;
	const char *v = stamped(e, X_PARTS_CKSUM, &vlen), *item = NULL;

	for (; v && n; n--)
		item = s3_meta_list_next(&v, &vlen, &len);
	if (n || !item || !len || len >= S3_CKSUM_B64_SIZE)
		return false;
	memcpy(out, item, len);
	out[len] = '\0';
	return true;
}

void s3_meta_answer(struct s3_req *r, const struct filer_entry *e, bool whole)
{
	const char *mode = http_req_header(r->req, "x-amz-checksum-mode");
	bool cksum = whole && mode && !strcasecmp(mode, "ENABLED");

	size_t tags = s3_tag_count(e);

	s3_header(r, "Content-Type",
		  e->attr.mime && *e->attr.mime ? e->attr.mime : "binary/octet-stream");
	if (tags) {
		char n[24];
		snprintf(n, sizeof(n), "%zu", tags);
		s3_header(r, "x-amz-tagging-count", n);
	}
	for (size_t i = 0; i < e->n_xattrs; i++) {
		const struct filer_xattr *x = &e->xattrs[i];
		char *name = NULL, *value;
		if (!strncmp(x->name, X_META, strlen(X_META)))
			name = xasprintf("x-amz-meta-%s", x->name + strlen(X_META));
		else if (!strncmp(x->name, X_HEADER, strlen(X_HEADER)))
			name = xstrdup(x->name + strlen(X_HEADER));
		if (name) {
			value = xstrndup((const char *)x->value, x->value_len);
			s3_header(r, name, value);
			free(value);
			free(name);
		} else if (cksum && !strncmp(x->name, X_CKSUM, strlen(X_CKSUM))) {
			char v[S3_CKSUM_VALUE_MAX];
			if (get_stamped(e, x->name, v, sizeof(v))) {
				name = xasprintf("x-amz-checksum-%s", x->name + strlen(X_CKSUM));
				s3_header(r, name, v);
				s3_header(r, "x-amz-checksum-type", s3_meta_checksum_type(v));
				free(name);
			}
		}
	}
}
