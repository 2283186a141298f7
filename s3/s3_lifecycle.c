/*
 * Lifecycle: PutBucketLifecycleConfiguration, GetBucketLifecycleConfiguration,
 * DeleteBucketLifecycle, and the sweeper that carries out expiration.
 *
 * DESIGN: a bucket's rules are checked when put and stored re-written in
 * canonical XML in the bucket directory's "s3.lifecycle" extended attribute.
 * Each gateway runs one sweeper thread: every -lifecycleSeconds it lists the
 * buckets, and for each with enabled rules walks the bucket's tree and deletes
 * the objects a rule expires (Expiration Days after the object's mtime, or a
 * Date passed; filtered by prefix, tags and size), and removes multipart
 * uploads older than AbortIncompleteMultipartUpload's days. In a bucket with
 * versioning, expiring makes a delete marker; NoncurrentVersionExpiration
 * deletes older versions some days after a newer one replaced them (keeping
 * NewerNoncurrentVersions of them), and ExpiredObjectDeleteMarker removes a
 * delete marker left with no version under it; locked versions stay. Several
 * gateways over one filer sweep the same buckets: deletes are idempotent, so
 * the only cost is repeated listing. An object is deleted only in the version
 * the rule was checked against (delete with ifEtag), so one rewritten
 * meanwhile stays.
 *
 * Testing hook: WEEDFS_S3_LIFECYCLE_DAY_SECONDS (read once, default 86400)
 * is how long a lifecycle "day" lasts.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include "client/filer_meta.h"
#include "log.h"
#include "s3/s3_int.h"
#include "s3/s3_keypath.h"
#include "util.h"

#define X_LIFECYCLE "s3.lifecycle"
#define RULES_MAX   1000
#define TAGS_MAX    10
#define ID_MAX      255 /* S3's bound on a rule's ID */

struct lc_rule {
	char *id, *prefix;
	bool enabled;
	bool legacy_prefix; /* given as the rule's Prefix (not a Filter): kept so */
	char *tag_k[TAGS_MAX], *tag_v[TAGS_MAX];
	size_t ntags;
	int64_t days;              /* Expiration Days; 0: none */
	int64_t date;              /* Expiration Date (unix s); 0: none */
	int64_t abort_days;        /* AbortIncompleteMultipartUpload; 0: none */
	int64_t noncurrent_days;   /* NoncurrentVersionExpiration NoncurrentDays; 0: none */
	int64_t newer_noncurrent;  /* ... NewerNoncurrentVersions kept; 0: none */
	bool expired_marker;       /* Expiration ExpiredObjectDeleteMarker */
	uint64_t size_gt, size_lt; /* ObjectSizeGreaterThan / LessThan; 0: none */
};

struct lc {
	struct lc_rule *r;
	size_t n;
};

static void lc_free(struct lc *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->r[i].id);
		free(c->r[i].prefix);
		for (size_t k = 0; k < c->r[i].ntags; k++) {
			free(c->r[i].tag_k[k]);
			free(c->r[i].tag_v[k]);
		}
	}
	free(c->r);
	memset(c, 0, sizeof(*c));
}

static bool positive(const char *s, int64_t *out) { return s && parse_i64(s, out) && *out > 0; }

/* "2026-12-01T00:00:00.000Z" or "2026-12-01T00:00:00Z": midnight UTC, as S3 requires. */
static bool parse_date(const char *s, int64_t *out)
{
	struct tm tm = {0};
	const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!p || (strcmp(p, "Z") && strcmp(p, ".000Z")) || tm.tm_hour || tm.tm_min || tm.tm_sec)
		return false;
	*out = (int64_t)timegm(&tm);
	return true;
}

static bool add_tag(struct lc_rule *r, const struct xml_node *t)
{
	const char *k = xml_child_text(t, "Key"), *v = xml_child_text(t, "Value");
	if (!k || !*k || r->ntags == TAGS_MAX)
		return false;
	r->tag_k[r->ntags] = xstrdup(k);
	r->tag_v[r->ntags++] = xstrdup(v ? v : "");
	return true;
}

/* A Filter (or the legacy rule-level Prefix); NULL or why it is refused. */
static const char *read_filter(struct lc_rule *r, const struct xml_node *rule)
{
	const struct xml_node *f = xml_child(rule, "Filter"), *and, *t;
	const char *p = xml_child_text(rule, "Prefix"), *v;
	if (f && p)
		return "a rule takes Filter or Prefix, not both";
	if (!f) {
		r->prefix = xstrdup(p ? p : "");
		r->legacy_prefix = p != NULL;
		return NULL;
	}
	and = xml_child(f, "And");
	if (and)
		f = and;
	else if (xml_count(f, NULL) > 1)
		return "a Filter holding several conditions needs And";
	r->prefix = xstrdup((p = xml_child_text(f, "Prefix")) ? p : "");
	for (t = xml_child(f, "Tag"); t; t = xml_next(t, "Tag"))
		if (!add_tag(r, t))
			return "a Tag needs a Key; at most 10 tags";
	if ((v = xml_child_text(f, "ObjectSizeGreaterThan")) && !parse_u64(v, &r->size_gt))
		return "ObjectSizeGreaterThan must be a number";
	if ((v = xml_child_text(f, "ObjectSizeLessThan")) && !parse_u64(v, &r->size_lt))
		return "ObjectSizeLessThan must be a number";
	return NULL;
}

/* An Expiration's form (its values are checked): NULL, or why it is refused with *code. */
static const char *expiration_form(struct lc_rule *r, const char *d, const char *t,
				   const char *m, enum s3_err *code)
{
	*code = S3_INVALID_REQUEST;
	if (!!d + !!t + !!m != 1)
		return "Expiration takes one of Days, Date or ExpiredObjectDeleteMarker";
	if (m && strcmp(m, "true") && strcmp(m, "false"))
		return "ExpiredObjectDeleteMarker must be true or false";
	if (m && (r->expired_marker = !strcmp(m, "true")) && r->ntags)
		return "ExpiredObjectDeleteMarker cannot be used with a tag filter";
	*code = S3_INVALID_ARGUMENT;
	return NULL;
}

/* Whether an earlier rule of c than its last has the last one's ID. */
static bool id_repeated(const struct lc *c)
{
	const char *id = c->r[c->n - 1].id;
	for (size_t i = 0; id && i + 1 < c->n; i++)
		if (c->r[i].id && !strcmp(c->r[i].id, id))
			return true;
	return false;
}

/*
 * Reads a LifecycleConfiguration; NULL, or why it is refused with *code, as
 * S3 refuses it: MalformedXML for what breaks its schema (the form, a Status
 * other than Enabled or Disabled, Filter beside the rule's Prefix),
 * InvalidArgument for a bad value (an ID over 255 characters or repeated,
 * days not positive, a date not at midnight UTC), InvalidRequest else.
 */
static const char *lc_parse(const char *xml, size_t len, struct lc *c, enum s3_err *code)
{
	struct xml_node *root = NULL;
	const char *why = NULL;
	char msg[128];

	memset(c, 0, sizeof(*c));
	*code = S3_MALFORMED_XML;
	if (xml_parse(xml, len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "LifecycleConfiguration") || !xml_count(root, "Rule") ||
	    xml_count(root, "Rule") > RULES_MAX) {
		xml_free(root);
		return "The XML you provided was not well-formed or did not validate against our "
		       "published schema (1 to 1000 Rule elements)";
	}
	xml_foreach(n, root, "Rule")
	{
		const char *st = xml_child_text(n, "Status"), *id = xml_child_text(n, "ID");
		const struct xml_node *exp = xml_child(n, "Expiration");
		const struct xml_node *ab = xml_child(n, "AbortIncompleteMultipartUpload");
		const struct xml_node *nve = xml_child(n, "NoncurrentVersionExpiration");
		struct lc_rule *r;

		c->r = xrealloc(c->r, (c->n + 1) * sizeof(*c->r));
		r = &c->r[c->n++];
		memset(r, 0, sizeof(*r));
		r->id = id ? xstrdup(id) : NULL;
		*code = S3_MALFORMED_XML;
		if (!st || (strcmp(st, "Enabled") && strcmp(st, "Disabled")))
			why = "Status must be Enabled or Disabled";
		r->enabled = st && !strcmp(st, "Enabled");
		if (!why)
			why = read_filter(r, n);
		if (!why)
			*code = S3_INVALID_ARGUMENT;
		if (!why && id && strlen(id) > ID_MAX)
			why = "ID length should not exceed allowed limit of 255";
		else if (!why && id_repeated(c))
			why = "Rule ID must be unique. Found same ID for more than one rule";
		if (!why && exp) {
			const char *d = xml_child_text(exp, "Days"),
				   *t = xml_child_text(exp, "Date"),
				   *m = xml_child_text(exp, "ExpiredObjectDeleteMarker");
			if (d && !positive(d, &r->days))
				why = "'Days' for Expiration action must be a positive integer";
			else if (t && !parse_date(t, &r->date))
				why = "'Date' must be at midnight GMT";
			else
				why = expiration_form(r, d, t, m, code);
		}
		if (!why && ab &&
		    !positive(xml_child_text(ab, "DaysAfterInitiation"), &r->abort_days))
			why = "DaysAfterInitiation must be a positive integer";
		if (!why && ab && r->ntags) {
			*code = S3_INVALID_REQUEST;
			why = "AbortIncompleteMultipartUpload cannot be used with a tag filter";
		}
		if (!why && nve) {
			const char *k = xml_child_text(nve, "NewerNoncurrentVersions");
			if (!positive(xml_child_text(nve, "NoncurrentDays"), &r->noncurrent_days))
				why = "NoncurrentDays must be a positive integer";
			else if (k &&
				 (!positive(k, &r->newer_noncurrent) || r->newer_noncurrent > 100))
				why = "NewerNoncurrentVersions must be an integer 1..100";
		}
		if (!why && !exp && !ab && !nve) {
			*code = S3_INVALID_REQUEST;
			why = "A rule needs an action: Expiration, NoncurrentVersionExpiration or "
			      "AbortIncompleteMultipartUpload";
		}
		if (why)
			break;
	}
	xml_free(root);
	if (why)
		lc_free(c);
	return why;
}

static void write_filter(xml_w *w, const struct lc_rule *r)
{
	bool and = r->ntags + (*r->prefix != 0) + (r->size_gt > 0) + (r->size_lt > 0) > 1;
	xml_open(w, "Filter");
	if (and)
		xml_open(w, "And");
	if (*r->prefix || !and)
		xml_elem(w, "Prefix", r->prefix);
	for (size_t k = 0; k < r->ntags; k++) {
		xml_open(w, "Tag");
		xml_elem(w, "Key", r->tag_k[k]);
		xml_elem(w, "Value", r->tag_v[k]);
		xml_close(w);
	}
	if (r->size_gt)
		xml_elem_u64(w, "ObjectSizeGreaterThan", r->size_gt);
	if (r->size_lt)
		xml_elem_u64(w, "ObjectSizeLessThan", r->size_lt);
	if (and)
		xml_close(w);
	xml_close(w);
}

static void lc_write(const struct lc *c, buf *out)
{
	xml_w *w = xml_w_new(out);
	char date[32];
	xml_open_s3(w, "LifecycleConfiguration");
	for (size_t i = 0; i < c->n; i++) {
		const struct lc_rule *r = &c->r[i];
		xml_open(w, "Rule");
		if (r->id)
			xml_elem(w, "ID", r->id);
		if (r->legacy_prefix) /* as it was written: the rule's Prefix, no Filter */
			xml_elem(w, "Prefix", r->prefix);
		else
			write_filter(w, r);
		xml_elem(w, "Status", r->enabled ? "Enabled" : "Disabled");
		if (r->days || r->date || r->expired_marker) {
			xml_open(w, "Expiration");
			if (r->days) {
				xml_elem_i64(w, "Days", r->days);
			} else if (r->date) {
				s3_iso8601(r->date * 1000000000, date);
				xml_elem(w, "Date", date);
			} else {
				xml_elem(w, "ExpiredObjectDeleteMarker", "true");
			}
			xml_close(w);
		}
		if (r->noncurrent_days) {
			xml_open(w, "NoncurrentVersionExpiration");
			xml_elem_i64(w, "NoncurrentDays", r->noncurrent_days);
			if (r->newer_noncurrent)
				xml_elem_i64(w, "NewerNoncurrentVersions", r->newer_noncurrent);
			xml_close(w);
		}
		if (r->abort_days) {
			xml_open(w, "AbortIncompleteMultipartUpload");
			xml_elem_i64(w, "DaysAfterInitiation", r->abort_days);
			xml_close(w);
		}
		xml_close(w);
	}
	xml_w_free(w);
}

/* ---- the bucket operations (workers) ---- */

void s3_put_lifecycle(struct s3_req *r)
{
	struct lc c;
	enum s3_err code;
	const char *why = lc_parse(r->in.data ? r->in.data : "", r->in.len, &c, &code);
	buf out = BUF_INIT;

	if (why) {
		s3_error(r, code, "%s", why);
		return;
	}
	lc_write(&c, &out);
	s3_bucket_config_set(r, X_LIFECYCLE, &out, "storing the lifecycle configuration");
	buf_free(&out);
	lc_free(&c);
}

void s3_get_lifecycle(struct s3_req *r)
{
	char *path = s3_bucket_path(r->bucket);
	struct filer_entry *e = NULL;
	const struct filer_xattr *x;
	wfs_err rc = filer_meta_lookup(r->g->filer, path, &e);

	if (rc == WFS_ENOENT || (!rc && !S_ISDIR(e->attr.mode)))
		s3_error(r, S3_NO_SUCH_BUCKET, "The specified bucket does not exist");
	else if (rc)
		s3_filer_error(r, rc, "looking the bucket up");
	else if (!(x = filer_entry_xattr_get(e, X_LIFECYCLE)))
		s3_error(r, S3_NO_SUCH_LIFECYCLE, "The lifecycle configuration does not exist");
	else {
		buf_append(&r->body, x->value, x->value_len);
		r->status = 200;
		r->ctype = "application/xml";
	}
	filer_entry_free(e);
	free(path);
}

void s3_delete_lifecycle(struct s3_req *r)
{
	s3_bucket_config_remove(r, X_LIFECYCLE, "removing the lifecycle configuration");
}

/* ---- the sweeper ---- */

static pthread_once_t day_once = PTHREAD_ONCE_INIT;
static int64_t day_s = 86400;

static void day_load(void)
{
	const char *s = getenv("WEEDFS_S3_LIFECYCLE_DAY_SECONDS");
	int64_t d;
	if (s && *s && parse_i64(s, &d) && d >= 1)
		day_s = d;
}

/* How long a lifecycle day lasts, in seconds (86400 but in tests). */
static int64_t day_seconds(void)
{
	pthread_once(&day_once, day_load);
	return day_s;
}

struct sweep {
	struct s3_gateway *g;
	const char *bucket;
	const struct lc *c;
	int64_t now;
	size_t deleted;
	enum s3_versioning v; /* expiring a current version makes a delete marker */
};

/* Whether rule r applies to the version e of key (prefix, size and tag filters). */
static bool rule_covers(const struct lc_rule *r, const char *key, const struct filer_entry *e)
{
	if (!r->enabled || strncmp(key, r->prefix, strlen(r->prefix)))
		return false;
	if ((r->size_gt && e->attr.size <= r->size_gt) ||
	    (r->size_lt && e->attr.size >= r->size_lt))
		return false;
	for (size_t k = 0; k < r->ntags; k++)
		if (!s3_tags_have(e, r->tag_k[k], r->tag_v[k]))
			return false;
	return true;
}

static bool rule_expires(const struct lc_rule *r, const char *key, const struct filer_entry *e,
			 int64_t now)
{
	int64_t mtime = e->attr.mtime_ns / 1000000000;
	if ((!r->days && !r->date) || !rule_covers(r, key, e))
		return false;
	return r->days ? mtime + r->days * day_seconds() <= now : r->date <= now;
}

/* The first rule that expires e (the current version of key), or NULL. */
static const struct lc_rule *expiring_rule(const struct sweep *s, const char *key,
					   const struct filer_entry *e)
{
	for (size_t k = 0; k < s->c->n; k++)
		if (rule_expires(&s->c->r[k], key, e, s->now))
			return &s->c->r[k];
	return NULL;
}

/*
 * Expires the object key at path: in a versioned bucket a delete marker hides
 * it; otherwise it is deleted if, read again, it is still expired, and only in
 * that version (a rewrite meanwhile wins). WFS_OK or a filer error.
 */
static wfs_err expire(struct sweep *s, const char *key, char *path)
{
	struct s3_req r = {.g = s->g, .bucket = (char *)s->bucket};
	struct filer_entry *e = NULL;
	struct s3_deleted d;
	char etag[17];
	wfs_err rc;
	if (s->v != S3_UNVERSIONED)
		return s3_delete_versioned(&r, key, NULL, s->v, NULL, &d);
	rc = filer_meta_lookup_etag(s->g->filer, path, &e, etag);
	if (!rc && !expiring_rule(s, key, e))
		rc = WFS_EPRECOND;
	if (!rc)
		rc = filer_meta_delete_if(s->g->filer, path, etag);
	if (!rc)
		s3_drop_empty_parents(s->g, s->bucket, path);
	filer_entry_free(e);
	return rc;
}

/* A directory being swept: the bucket's tree, its .versions tree or its uploads. */
struct walk {
	struct sweep *s;
	const char *dir, *key; /* the keys' prefix ("" or "a/"), or .versions' key (NULL: its root) */
	struct history *h;     /* sweep_versions: the key's versions */
};

static void sweep_dir(struct sweep *s, const char *dir, const char *key_prefix);

static bool sweep_entry(const struct filer_entry *e, void *arg)
{
	struct walk *w = arg;
	char *comp = s3_keypath_decode(e->name), *key, *path;
	if (comp)
		key = xasprintf("%s%s", w->key, comp);
	else if (*w->key && !strcmp(e->name, S3_KEYPATH_SELF))
		key = xstrndup(w->key, strlen(w->key) - 1); /* "d" beside "d/..." */
	else
		return true; /* a reserved name that is no key's */
	free(comp);
	path = xasprintf("%s/%s", w->dir, e->name);
	if (S_ISDIR(e->attr.mode)) {
		if (*w->key ||
		    (strcmp(e->name, S3_UPLOADS_NAME) && strcmp(e->name, S3_VERSIONS_NAME))) {
			char *sub = xasprintf("%s/", key);
			sweep_dir(w->s, path, sub);
			free(sub);
		}
	} else if (S_ISREG(e->attr.mode) && expiring_rule(w->s, key, e) &&
		   !expire(w->s, key, path)) {
		w->s->deleted++;
	}
	free(key);
	free(path);
	return true;
}

static void sweep_dir(struct sweep *s, const char *dir, const char *key_prefix)
{
	struct walk w = {.s = s, .dir = dir, .key = key_prefix};
	(void)filer_meta_each(s->g->filer, dir, sweep_entry, &w);
}

/* ---- older versions (buckets with versioning) ---- */

/* The entries of a key's version directory: its versions (files), newest first. */
struct history {
	struct filer_entry **v;
	size_t n;
	bool *gone; /* deleted by this pass */
};

/* Whether some rule expires the noncurrent version i of h (replaced at since, unix s). */
static bool noncurrent_expires(const struct sweep *s, const char *key, const struct filer_entry *e,
			       int64_t since, size_t newer)
{
	for (size_t k = 0; k < s->c->n; k++) {
		const struct lc_rule *r = &s->c->r[k];
		if (r->noncurrent_days && rule_covers(r, key, e) &&
		    newer >= (size_t)r->newer_noncurrent &&
		    since + r->noncurrent_days * day_seconds() <= s->now)
			return true;
	}
	return false;
}

static bool marker_rule(const struct sweep *s, const char *key)
{
	for (size_t k = 0; k < s->c->n; k++) {
		const struct lc_rule *r = &s->c->r[k];
		if (r->enabled && r->expired_marker && !strncmp(key, r->prefix, strlen(r->prefix)))
			return true;
	}
	return false;
}

/* Deletes version i of key (the file dir/<name>) unless Object Lock keeps it. */
static void drop_version(struct sweep *s, const char *key, const char *dir, struct history *h,
			 size_t i)
{
	struct s3_req r = {.g = s->g, .bucket = (char *)s->bucket};
	char *path;
	if (s3_lock_forbids_delete(&r, key, h->v[i]))
		return;
	path = xasprintf("%s/%s", dir, h->v[i]->name);
	if (!filer_meta_delete(s->g->filer, path, false)) {
		h->gone[i] = true;
		s->deleted++;
		s3_drop_empty_parents(s->g, s->bucket, path);
	}
	free(path);
}

/* Applies the noncurrent and delete-marker rules to one key's history. */
static void sweep_history(struct sweep *s, const char *key, const char *dir, struct history *h)
{
	char *cur_path = s3_object_path(s->bucket, key);
	struct filer_entry *cur = NULL;
	size_t newer = 0, left = 0;
	bool has_cur;

	has_cur = cur_path &&
		  !s3_object_inside(s->g, &cur_path, &cur,
				    filer_meta_lookup(s->g->filer, cur_path, &cur)) &&
		  S_ISREG(cur->attr.mode);
	h->gone = xcalloc(h->n, sizeof(*h->gone));
	/* without a current file the newest version is the latest, not noncurrent */
	for (size_t i = has_cur ? 0 : 1; i < h->n; i++) {
		const struct filer_entry *replaced_by = i ? h->v[i - 1] : cur;
		if (noncurrent_expires(s, key, h->v[i], replaced_by->attr.mtime_ns / 1000000000,
				       newer))
			drop_version(s, key, dir, h, i);
		newer++;
	}
	for (size_t i = 0; i < h->n; i++)
		left += !h->gone[i];
	if (!has_cur && left == 1 && !h->gone[0] && s3_is_delete_marker(h->v[0]) &&
	    marker_rule(s, key))
		drop_version(s, key, dir, h, 0);
	filer_entry_free(cur);
	free(cur_path);
}

static void sweep_versions(struct sweep *s, const char *dir, const char *key);

static bool history_entry(const struct filer_entry *e, void *arg)
{
	struct walk *w = arg;
	if (S_ISREG(e->attr.mode) && w->key) {
		w->h->v = xrealloc(w->h->v, (w->h->n + 1) * sizeof(*w->h->v));
		w->h->v[w->h->n++] = filer_entry_dup(e);
	} else if (S_ISDIR(e->attr.mode)) {
		char *comp = s3_keypath_decode(e->name), *sub, *sub_key;
		if (!comp)
			return true; /* no key's */
		sub = xasprintf("%s/%s", w->dir, e->name);
		sub_key = w->key ? xasprintf("%s/%s", w->key, comp) : xstrdup(comp);
		sweep_versions(w->s, sub, sub_key);
		free(sub);
		free(sub_key);
		free(comp);
	}
	return true;
}

/* Walks the .versions directory dir of key (NULL for the root): its files are key's versions. */
static void sweep_versions(struct sweep *s, const char *dir, const char *key)
{
	struct history h = {0};
	struct walk w = {.s = s, .dir = dir, .key = key, .h = &h};
	(void)filer_meta_each(s->g->filer, dir, history_entry, &w);
	if (h.n)
		sweep_history(s, key, dir, &h);
	for (size_t i = 0; i < h.n; i++)
		filer_entry_free(h.v[i]);
	free(h.v);
	free(h.gone);
}

static bool upload_entry(const struct filer_entry *e, void *arg)
{
	struct walk *w = arg;
	const struct filer_xattr *kx = filer_entry_xattr_get(e, "s3.upload.key");
	char *key = kx ? xstrndup((const char *)kx->value, kx->value_len) : xstrdup("");
	int64_t started = e->attr.crtime_ns / 1000000000;
	for (size_t k = 0; k < w->s->c->n; k++) {
		const struct lc_rule *r = &w->s->c->r[k];
		if (r->enabled && r->abort_days && !strncmp(key, r->prefix, strlen(r->prefix)) &&
		    started + r->abort_days * day_seconds() <= w->s->now) {
			char *up = xasprintf("%s/%s", w->dir, e->name);
			(void)filer_meta_delete(w->s->g->filer, up, true);
			free(up);
			break;
		}
	}
	free(key);
	return true;
}

/* Removes the uploads an AbortIncompleteMultipartUpload rule has given up on. */
static void sweep_uploads(struct sweep *s, const char *bucket_dir)
{
	char *dir = xasprintf("%s/" S3_UPLOADS_NAME, bucket_dir);
	struct walk w = {.s = s, .dir = dir};
	(void)filer_meta_each(s->g->filer, dir, upload_entry, &w);
	free(dir);
}

/* One bucket of the sweep: its rules carried out, if it has any. */
static bool sweep_bucket(const struct filer_entry *b, void *arg)
{
	struct s3_gateway *g = arg;
	const struct filer_xattr *x = filer_entry_xattr_get(b, X_LIFECYCLE);
	struct sweep s = {
		.g = g, .bucket = b->name, .now = (int64_t)time(NULL), .v = s3_versioning_in(b)};
	struct lc c;
	enum s3_err code;
	char *dir;

	if (!S_ISDIR(b->attr.mode) || !x ||
	    lc_parse((const char *)x->value, x->value_len, &c, &code))
		return true;
	s.c = &c;
	dir = xasprintf(S3_BUCKETS_DIR "/%s", b->name);
	sweep_dir(&s, dir, "");
	sweep_uploads(&s, dir);
	if (s.v != S3_UNVERSIONED) {
		char *vdir = xasprintf("%s/" S3_VERSIONS_NAME, dir);
		sweep_versions(&s, vdir, NULL);
		free(vdir);
	}
	if (s.deleted)
		log_info("lifecycle: %zu objects of bucket %s expired", s.deleted, b->name);
	free(dir);
	lc_free(&c);
	return true;
}

void s3_lifecycle_sweep(struct s3_gateway *g)
{
	(void)filer_meta_each(g->filer, S3_BUCKETS_DIR, sweep_bucket, g);
}
