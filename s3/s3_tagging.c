/*
 * Tagging: PutObjectTagging, GetObjectTagging, DeleteObjectTagging, the same
 * for buckets, the x-amz-tagging header of writes and the tagging field of
 * browser POST forms (a Tagging document, as S3's form takes it).
 *
 * DESIGN: a tag set is one extended attribute, "s3.tagging", holding the set
 * in the form of the x-amz-tagging header (URL-encoded "k1=v1&k2=v2"), on the
 * object's entry or the bucket's directory. Each change is one atomic setXattr
 * or removeXattr, so concurrent taggers never lose a whole write, and a tag
 * change leaves the object's mtime (and so its stored ETag) alone. S3's rules
 * are checked before anything is stored: at most 10 tags on an object and 50
 * on a bucket, keys of 1..128 and values of 0..256 characters, keys unique.
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "http_util.h"
#include "s3/s3_int.h"
#include "s3/s3_meta.h"
#include "util.h"

#define TAGS_OBJECT   10
#define TAGS_BUCKET   50
#define TAG_KEY_MAX   128
#define TAG_VALUE_MAX 256

struct tagset {
	char **k, **v;
	size_t n;
};

static void tags_free(struct tagset *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->k[i]);
		free(t->v[i]);
	}
	free(t->k);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* Characters (UTF-8 code points) in s, as S3 counts tag lengths. */
static size_t chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/* Adds one tag, checking S3's rules: S3_OK, or S3_INVALID_TAG with *why set. */
static enum s3_err tag_add(struct tagset *t, size_t max, const char *k, const char *v,
			   const char **why)
{
	if (t->n == max) {
		*why = max == TAGS_OBJECT ? "Object tags cannot be greater than 10"
					  : "Bucket tags cannot be greater than 50";
		return S3_INVALID_TAG;
	}
	if (!*k || chars(k) > TAG_KEY_MAX || chars(v) > TAG_VALUE_MAX) {
		*why = "The TagKey (1..128 characters) or TagValue (0..256) you have provided "
		       "is invalid";
		return S3_INVALID_TAG;
	}
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->k[i], k)) {
			*why = "Cannot provide multiple Tags with the same key";
			return S3_INVALID_TAG;
		}
	t->k = xrealloc(t->k, (t->n + 1) * sizeof(*t->k));
	t->v = xrealloc(t->v, (t->n + 1) * sizeof(*t->v));
	t->k[t->n] = xstrdup(k);
	t->v[t->n++] = xstrdup(v);
	return S3_OK;
}

/* Parses "k1=v1&k2=v2" (URL-encoded; the x-amz-tagging form) as tag_add does. */
static enum s3_err tags_from_query(const char *s, size_t len, size_t max, struct tagset *t,
				   const char **why)
{
	const char *end = s + len;
	enum s3_err e = S3_OK;
	while (s < end && !e) {
		const char *amp = memchr(s, '&', (size_t)(end - s)), *eq;
		const char *stop = amp ? amp : end;
		buf k = BUF_INIT, v = BUF_INIT;
		eq = memchr(s, '=', (size_t)(stop - s));
		if (!url_decode(s, (size_t)((eq ? eq : stop) - s), true, &k) ||
		    (eq && !url_decode(eq + 1, (size_t)(stop - eq - 1), true, &v))) {
			*why = "The tag set is not URL-encoded correctly";
			e = S3_INVALID_ARGUMENT;
		} else {
			buf_append(&k, "", 1);
			buf_append(&v, "", 1);
			e = tag_add(t, max, (char *)k.data, (char *)v.data, why);
		}
		buf_free(&k);
		buf_free(&v);
		s = stop + (amp != NULL);
	}
	return e;
}

#define MSG_MALFORMED                                                                     \
	"The XML you provided was not well-formed or did not validate against our published " \
	"schema"

/* Parses a Tagging document (PutObjectTagging's body, a form's tagging field) as tag_add
   does: S3_OK, else S3_MALFORMED_XML or tag_add's error, with *why set. */
static enum s3_err tags_from_xml(const char *s, size_t len, size_t max, struct tagset *t,
				 const char **why)
{
	struct xml_node *root = NULL;
	const struct xml_node *set;
	enum s3_err e = S3_OK;
	char msg[128];

	if (xml_parse(s, len, NULL, &root, msg, sizeof(msg)) || strcmp(root->name, "Tagging") ||
	    !(set = xml_child(root, "TagSet"))) {
		*why = MSG_MALFORMED;
		e = S3_MALFORMED_XML;
		goto out;
	}
	xml_foreach(tag, set, "Tag")
	{
		const char *k = xml_child_text(tag, "Key"), *v = xml_child_text(tag, "Value");
		if (!k) {
			*why = "Every Tag needs a Key";
			e = S3_MALFORMED_XML;
			goto out;
		}
		if ((e = tag_add(t, max, k, v ? v : "", why)))
			goto out;
	}
out:
	xml_free(root);
	return e;
}

static void tags_encode(const struct tagset *t, buf *out)
{
	for (size_t i = 0; i < t->n; i++) {
		if (i)
			buf_append(out, "&", 1);
		url_encode_query(t->k[i], out);
		buf_append(out, "=", 1);
		url_encode_query(t->v[i], out);
	}
}

/* The stored tag set of e (none when absent or unreadable). */
static void tags_of(const struct filer_entry *e, struct tagset *t)
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, S3_XATTR_TAGGING);
	const char *why;
	memset(t, 0, sizeof(*t));
	if (x && tags_from_query((const char *)x->value, x->value_len, SIZE_MAX, t, &why))
		tags_free(t);
}

/* The tags a write gives its object into t: x-amz-tagging, or a POST form's tagging field
   (r->post_form set). S3_OK (none given: t empty), else the error with *why. */
static enum s3_err tags_of_write(const struct s3_req *r, struct tagset *t, const char **why)
{
	const char *h;
	memset(t, 0, sizeof(*t));
	if (r->post_form) {
		h = s3_form_get(r->post_form, "tagging");
		return h ? tags_from_xml(h, strlen(h), TAGS_OBJECT, t, why) : S3_OK;
	}
	h = http_req_header(r->req, "x-amz-tagging");
	return h ? tags_from_query(h, strlen(h), TAGS_OBJECT, t, why) : S3_OK;
}

bool s3_tagging_header(struct s3_req *r, struct filer_entry *into)
{
	struct tagset t;
	const char *why;
	buf enc = BUF_INIT;
	enum s3_err e = tags_of_write(r, &t, &why);
	if (e)
		s3_error(r, e, "%s", why);
	tags_encode(&t, &enc);
	if (!e && enc.len)
		filer_entry_xattr_set(into, S3_XATTR_TAGGING, enc.data, enc.len);
	buf_free(&enc);
	tags_free(&t);
	return !e;
}

bool s3_tags_have(const struct filer_entry *e, const char *k, const char *v)
{
	struct tagset t;
	bool found = false;
	tags_of(e, &t);
	for (size_t i = 0; i < t.n && !found; i++)
		found = !strcmp(t.k[i], k) && !strcmp(t.v[i], v);
	tags_free(&t);
	return found;
}

size_t s3_tag_count(const struct filer_entry *e)
{
	struct tagset t;
	size_t n;
	tags_of(e, &t);
	n = t.n;
	tags_free(&t);
	return n;
}

/* ---- what bucket policies see of tags ---- */

static void tags_each(struct tagset *t, s3_tag_fn fn, void *arg)
{
	for (size_t i = 0; i < t->n; i++)
		fn(arg, t->k[i], t->v[i]);
	tags_free(t);
}

void s3_tags_each_write(const struct s3_req *r, s3_tag_fn fn, void *arg)
{
	struct tagset t;
	const char *why;
	if (tags_of_write(r, &t, &why))
		tags_free(&t); /* refused by the write itself */
	tags_each(&t, fn, arg);
}

void s3_tags_each_entry(const struct filer_entry *e, s3_tag_fn fn, void *arg)
{
	struct tagset t;
	tags_of(e, &t);
	tags_each(&t, fn, arg);
}

void s3_tags_each_body(const buf *in, s3_tag_fn fn, void *arg)
{
	struct tagset t = {0};
	const char *why;
	if (tags_from_xml(in->data ? in->data : "", in->len, TAGS_OBJECT, &t, &why))
		tags_free(&t); /* PutObjectTagging refuses it */
	tags_each(&t, fn, arg);
}

/* ---- the operations ---- */

/*
 * The entry tagged: r's object (the version ?versionId names), or its bucket;
 * NULL with r's answer. *path set (caller frees).
 */
static struct filer_entry *target(struct s3_req *r, char **path)
{
	struct filer_entry *e = NULL;
	wfs_err rc;
	if (r->key)
		return s3_version_target(r, path); /* ?versionId: that version's tags */
	*path = s3_bucket_path(r->bucket);
	rc = *path ? filer_meta_lookup(r->g->filer, *path, &e) : WFS_ENOENT;
	if (!rc && S_ISDIR(e->attr.mode))
		return e;
	filer_entry_free(e);
	if (rc && rc != WFS_ENOENT && rc != WFS_ENOTDIR)
		s3_filer_error(r, rc, "looking the bucket up");
	else
		s3_error(r, S3_NO_SUCH_BUCKET, "The specified bucket does not exist");
	return NULL;
}

void s3_put_tagging(struct s3_req *r)
{
	struct tagset t = {0};
	struct filer_entry *e = NULL;
	char *path = NULL;
	const char *why;
	enum s3_err err;
	buf enc = BUF_INIT;
	wfs_err rc;

	err = tags_from_xml(r->in.data ? r->in.data : "", r->in.len,
			    r->key ? TAGS_OBJECT : TAGS_BUCKET, &t, &why);
	if (err) {
		s3_error(r, err, "%s", why);
		goto out;
	}
	if (!(e = target(r, &path)))
		goto out;
	tags_encode(&t, &enc);
	rc = enc.len ? filer_meta_set_xattr(r->g->filer, path, S3_XATTR_TAGGING, enc.data, enc.len,
					    FM_XATTR_ANY)
		     : filer_meta_remove_xattr(r->g->filer, path, S3_XATTR_TAGGING);
	if (rc && rc != WFS_ENODATA)
		s3_filer_error(r, rc, "storing the tags");
	else
		r->status = r->key ? 200 : 204;
out:
	buf_free(&enc);
	tags_free(&t);
	filer_entry_free(e);
	free(path);
}

void s3_get_tagging(struct s3_req *r)
{
	struct filer_entry *e;
	struct tagset t;
	char *path = NULL;
	xml_w *w;

	if (!(e = target(r, &path))) {
		free(path);
		return;
	}
	tags_of(e, &t);
	if (!r->key && !t.n) {
		s3_error(r, S3_NO_SUCH_TAG_SET, "The TagSet does not exist");
	} else {
		/* sorted by key, as S3 answers (at most 50 tags: an insertion sort) */
		size_t *ord = xcalloc(t.n + 1, sizeof(*ord));
		for (size_t i = 0; i < t.n; i++) {
			size_t j = i;
			for (; j > 0 && strcmp(t.k[ord[j - 1]], t.k[i]) > 0; j--)
				ord[j] = ord[j - 1];
			ord[j] = i;
		}
		w = xml_w_new(&r->body);
		xml_open_s3(w, "Tagging");
		xml_open(w, "TagSet");
		for (size_t i = 0; i < t.n; i++) {
			xml_open(w, "Tag");
			xml_elem(w, "Key", t.k[ord[i]]);
			xml_elem(w, "Value", t.v[ord[i]]);
			xml_close(w);
		}
		free(ord);
		s3_xml_ok(r, w);
	}
	tags_free(&t);
	filer_entry_free(e);
	free(path);
}

void s3_delete_tagging(struct s3_req *r)
{
	struct filer_entry *e;
	char *path = NULL;
	wfs_err rc;

	if (!(e = target(r, &path))) {
		free(path);
		return;
	}
	rc = filer_meta_remove_xattr(r->g->filer, path, S3_XATTR_TAGGING);
	if (rc && rc != WFS_ENODATA)
		s3_filer_error(r, rc, "removing the tags");
	else
		r->status = 204;
	filer_entry_free(e);
	free(path);
}
