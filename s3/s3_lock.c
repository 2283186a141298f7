/*
 * Object Lock: a bucket's default retention (?object-lock), a version's
 * retention (?retention) and legal hold (?legal-hold), and the refusal of
 * deletes of locked versions.
 *
 * DESIGN: the bucket's configuration is its s3.object-lock xattr, in a short
 * text form: "Enabled" or "Enabled <MODE> <Days|Years> <n>". A version's
 * lock is xattrs of its file (the current one or a file of .versions):
 * s3.lock.mode (GOVERNANCE or COMPLIANCE), s3.lock.until (unix seconds) and
 * s3.lock.hold ("ON"). Object Lock needs versioning, so a locked version is
 * never overwritten: a write makes a new version, a DELETE without a version
 * id a delete marker. What is refused is deleting the locked version itself
 * (DELETE ?versionId, DeleteObjects with a VersionId) while it is under legal
 * hold or retained: COMPLIANCE until the date, GOVERNANCE unless the request
 * says x-amz-bypass-governance-retention: true and may
 * s3:BypassGovernanceRetention. The lock is the gateway's: the filer API and
 * the mount do not enforce it.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include "client/filer_meta.h"
#include "http_util.h"
#include "s3/s3_int.h"
#include "util.h"

#define X_LOCK_CONFIG "s3.object-lock"
#define X_LOCK_MODE   "s3.lock.mode"
#define X_LOCK_UNTIL  "s3.lock.until"
#define X_LOCK_HOLD   "s3.lock.hold"
#define DAY_S         86400
#define RETENTION_MAX (100 * 365) /* days: S3 allows up to 100 years */

/* An xattr's value as a string (caller frees); NULL when absent. */
static char *xattr_text(const struct filer_entry *e, const char *name)
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, name);
	return x ? xstrndup((const char *)x->value, x->value_len) : NULL;
}

static bool mode_ok(const char *m)
{
	return m && (!strcmp(m, "GOVERNANCE") || !strcmp(m, "COMPLIANCE"));
}

/* ---- the bucket's configuration ---- */

/* A bucket's Object Lock configuration: mode[0] == '\0' without a default retention. */
struct lock_config {
	bool enabled;
	char mode[16];
	char unit[8]; /* "Days" or "Years" */
	unsigned n;
};

static bool config_of(const struct filer_entry *bucket, struct lock_config *c)
{
	char *t = xattr_text(bucket, X_LOCK_CONFIG);
	memset(c, 0, sizeof(*c));
	if (t) {
		c->enabled = true;
		if (sscanf(t, "Enabled %15s %7s %u", c->mode, c->unit, &c->n) != 3)
			c->mode[0] = '\0';
	}
	free(t);
	return c->enabled;
}

bool s3_lock_enabled(const struct filer_entry *bucket)
{
	struct lock_config c;
	return config_of(bucket, &c);
}

size_t s3_lock_bucket_xattrs(struct filer_xattr *out)
{
	out[0] = (struct filer_xattr){
		.name = X_LOCK_CONFIG, .value = (uint8_t *)"Enabled", .value_len = 7};
	out[1] = (struct filer_xattr){
		.name = "s3.versioning", .value = (uint8_t *)"Enabled", .value_len = 7};
	return 2;
}

void s3_get_lock_config(struct s3_req *r)
{
	struct filer_entry *b = s3_bucket_entry(r);
	struct lock_config c;
	xml_w *w;
	if (!b)
		return;
	if (!config_of(b, &c)) {
		s3_error(r, S3_NO_LOCK_CONFIG,
			 "Object Lock configuration does not exist for this bucket");
	} else {
		w = xml_w_new(&r->body);
		xml_open_s3(w, "ObjectLockConfiguration");
		xml_elem(w, "ObjectLockEnabled", "Enabled");
		if (c.mode[0]) {
			xml_open(w, "Rule");
			xml_open(w, "DefaultRetention");
			xml_elem(w, "Mode", c.mode);
			xml_elem_u64(w, c.unit, c.n);
			xml_close(w);
			xml_close(w);
		}
		s3_xml_ok(r, w);
	}
	filer_entry_free(b);
}

void s3_put_lock_config(struct s3_req *r)
{
	struct xml_node *root = NULL;
	const struct xml_node *rule, *dr;
	const char *en, *mode = NULL, *days, *years;
	struct filer_entry *b = NULL;
	char msg[128];
	buf doc = BUF_INIT;
	uint64_t n = 0;

	if (xml_parse(r->in.data ? r->in.data : "", r->in.len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "ObjectLockConfiguration") ||
	    !(en = xml_child_text(root, "ObjectLockEnabled")) || strcmp(en, "Enabled")) {
		s3_error(r, S3_MALFORMED_XML,
			 "The XML you provided was not well-formed or did not "
			 "validate against our published schema");
		goto out;
	}
	if ((rule = xml_child(root, "Rule"))) {
		dr = xml_child(rule, "DefaultRetention");
		mode = dr ? xml_child_text(dr, "Mode") : NULL;
		days = dr ? xml_child_text(dr, "Days") : NULL;
		years = dr ? xml_child_text(dr, "Years") : NULL;
		if (!mode_ok(mode) || !days == !years) {
			s3_error(r, S3_MALFORMED_XML,
				 "DefaultRetention needs a Mode (GOVERNANCE or COMPLIANCE) and "
				 "either Days or Years");
			goto out;
		}
		if (!parse_u64(days ? days : years, &n) || n == 0 ||
		    n * (days ? 1 : 365) > RETENTION_MAX) {
			s3_error(r, S3_INVALID_RETENTION,
				 "The retention period must be a positive number of at most 100 "
				 "years");
			goto out;
		}
		buf_printf(&doc, "Enabled %s %s %" PRIu64, mode, days ? "Days" : "Years", n);
	} else {
		buf_printf(&doc, "Enabled");
	}
	if (!(b = s3_bucket_entry(r)))
		goto out;
	if (s3_versioning_in(b) != S3_VERSIONING_ENABLED) {
		s3_error(r, S3_INVALID_BUCKET_STATE,
			 "Versioning must be 'Enabled' on the bucket to apply an Object Lock "
			 "configuration");
		goto out;
	}
	s3_bucket_config_set(r, X_LOCK_CONFIG, &doc, "storing the Object Lock configuration");
out:
	filer_entry_free(b);
	buf_free(&doc);
	xml_free(root);
}

/* ---- a write's lock ---- */

bool s3_lock_header(struct s3_req *r, struct filer_entry *into)
{
	const char *mode = http_req_header(r->req, "x-amz-object-lock-mode");
	const char *until = http_req_header(r->req, "x-amz-object-lock-retain-until-date");
	const char *hold = http_req_header(r->req, "x-amz-object-lock-legal-hold");
	time_t t;
	char v[24];

	if (!mode != !until) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "x-amz-object-lock-mode and x-amz-object-lock-retain-until-date must "
			 "both be supplied");
		return false;
	}
	if (mode && !mode_ok(mode)) {
		s3_error(r, S3_INVALID_ARGUMENT, "Unknown wormMode directive.");
		return false;
	}
	if (until && (!iso8601_parse(until, &t) || t <= time(NULL))) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "The retain until date must be an ISO 8601 time in the future");
		return false;
	}
	if (hold && strcmp(hold, "ON") && strcmp(hold, "OFF")) {
		s3_error(r, S3_INVALID_ARGUMENT, "Legal Hold must be either of 'ON' or 'OFF'");
		return false;
	}
	if (mode) {
		filer_entry_xattr_set(into, X_LOCK_MODE, mode, strlen(mode));
		snprintf(v, sizeof(v), "%lld", (long long)t);
		filer_entry_xattr_set(into, X_LOCK_UNTIL, v, strlen(v));
	}
	if (hold && !strcmp(hold, "ON"))
		filer_entry_xattr_set(into, X_LOCK_HOLD, "ON", 2);
	return true;
}

void s3_lock_inherit(struct filer_entry *into, const struct filer_entry *from)
{
	static const char *const names[] = {X_LOCK_MODE, X_LOCK_UNTIL, X_LOCK_HOLD};
	for (size_t i = 0; i < ARRAY_LEN(names); i++) {
		const struct filer_xattr *x = filer_entry_xattr_get(from, names[i]);
		if (x)
			filer_entry_xattr_set(into, x->name, x->value, x->value_len);
	}
}

/* Whether the xattrs of a new entry name a lock. */
static bool asks_lock(const struct filer_meta_new *nw)
{
	for (size_t i = 0; i < nw->n_xattrs; i++)
		if (!strncmp(nw->xattrs[i].name, "s3.lock.", 8))
			return true;
	return false;
}

bool s3_lock_apply(struct s3_req *r, const struct filer_entry *bucket, struct filer_meta_new *nw,
		   struct filer_xattr **scratch, char **values)
{
	struct lock_config c;
	struct filer_xattr *x;
	time_t until;

	*scratch = NULL;
	*values = NULL;
	if (!config_of(bucket, &c)) {
		if (!asks_lock(nw))
			return true;
		s3_error(r, S3_INVALID_REQUEST, "Bucket is missing Object Lock Configuration");
		return false;
	}
	if (!c.mode[0])
		return true;
	for (size_t i = 0; i < nw->n_xattrs; i++)
		if (!strcmp(nw->xattrs[i].name, X_LOCK_MODE))
			return true; /* the write's own retention */
	/* the bucket's default retention, from now */
	until = time(NULL) + (time_t)c.n * (strcmp(c.unit, "Years") ? 1 : 365) * DAY_S;
	x = xcalloc(nw->n_xattrs + 2, sizeof(*x));
	memcpy(x, nw->xattrs, nw->n_xattrs * sizeof(*x));
	*values = xasprintf("%s%c%lld", c.mode, '\0', (long long)until);
	x[nw->n_xattrs] = (struct filer_xattr){
		.name = X_LOCK_MODE, .value = (uint8_t *)*values, .value_len = strlen(c.mode)};
	x[nw->n_xattrs + 1] =
		(struct filer_xattr){.name = X_LOCK_UNTIL,
				     .value = (uint8_t *)*values + strlen(c.mode) + 1,
				     .value_len = strlen(*values + strlen(c.mode) + 1)};
	nw->xattrs = x;
	nw->n_xattrs += 2;
	*scratch = x;
	return true;
}

/* ---- what a lock allows ---- */

/* The retention of e: its mode (NULL: none) and until (unix seconds). */
static const char *retention(const struct filer_entry *e, time_t *until, char mode[16])
{
	char *m = xattr_text(e, X_LOCK_MODE), *u = xattr_text(e, X_LOCK_UNTIL);
	long long t = 0;
	bool ok = mode_ok(m) && u && sscanf(u, "%lld", &t) == 1;
	if (ok)
		snprintf(mode, 16, "%s", m);
	*until = (time_t)t;
	free(m);
	free(u);
	return ok ? mode : NULL;
}

static bool held(const struct filer_entry *e)
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, X_LOCK_HOLD);
	return x && x->value_len == 2 && !memcmp(x->value, "ON", 2);
}

/* Whether r asks to bypass GOVERNANCE retention and may. */
static bool bypass(struct s3_req *r, const char *key)
{
	const char *h =
		r->req ? http_req_header(r->req, "x-amz-bypass-governance-retention") : NULL;
	return h && !strcasecmp(h, "true") &&
	       s3_permitted(r, r->bucket, key, "s3:BypassGovernanceRetention", S3_ACT_ADMIN);
}

bool s3_lock_forbids_delete(struct s3_req *r, const char *key, const struct filer_entry *e)
{
	char mode[16];
	time_t until;
	if (held(e))
		return true;
	if (!retention(e, &until, mode) || until <= time(NULL))
		return false;
	return !strcmp(mode, "COMPLIANCE") || !bypass(r, key);
}

void s3_lock_headers(struct s3_req *r, const struct filer_entry *e)
{
	char mode[16], when[32];
	time_t until;
	if (retention(e, &until, mode)) {
		s3_iso8601((int64_t)until * 1000000000, when);
		s3_header(r, "x-amz-object-lock-mode", mode);
		s3_header(r, "x-amz-object-lock-retain-until-date", when);
	}
	if (filer_entry_xattr_get(e, X_LOCK_HOLD))
		s3_header(r, "x-amz-object-lock-legal-hold", held(e) ? "ON" : "OFF");
}

/* ---- ?retention and ?legal-hold of a version ---- */

/*
 * The version r names (versionId, else the current one) and its file's path
 * (caller frees both); NULL with r's answer. The bucket must have Object Lock.
 */
static struct filer_entry *locked_version(struct s3_req *r, char **path)
{
	struct filer_entry *b = s3_bucket_entry(r);
	bool locking = b && s3_lock_enabled(b);

	*path = NULL;
	if (b && !locking)
		s3_error(r, S3_INVALID_REQUEST, "Bucket is missing Object Lock Configuration");
	filer_entry_free(b);
	return locking ? s3_version_target(r, path) : NULL;
}

/* Sets (value non-NULL) or removes one lock xattr of the file at path; false with r's answer. */
static bool lock_set(struct s3_req *r, const char *path, const char *name, const char *value)
{
	wfs_err rc = value ? filer_meta_set_xattr(r->g->filer, path, name, value, strlen(value),
						  FM_XATTR_ANY)
			   : filer_meta_remove_xattr(r->g->filer, path, name);
	if (rc && rc != WFS_ENODATA) {
		s3_filer_error(r, rc, "storing the object's lock");
		return false;
	}
	return true;
}

void s3_get_retention(struct s3_req *r)
{
	char *path, mode[16], when[32];
	struct filer_entry *e = locked_version(r, &path);
	time_t until;
	xml_w *w;
	if (!e)
		return;
	if (!retention(e, &until, mode)) {
		s3_error(r, S3_NO_LOCK_CONFIG_OBJECT,
			 "The specified object does not have a ObjectLock configuration");
	} else {
		s3_iso8601((int64_t)until * 1000000000, when);
		w = xml_w_new(&r->body);
		xml_open_s3(w, "Retention");
		xml_elem(w, "Mode", mode);
		xml_elem(w, "RetainUntilDate", when);
		s3_xml_ok(r, w);
	}
	filer_entry_free(e);
	free(path);
}

void s3_put_retention(struct s3_req *r)
{
	struct xml_node *root = NULL;
	const char *mode, *date;
	struct filer_entry *e = NULL;
	char *path = NULL, old_mode[16], msg[128], v[24];
	time_t until = 0, old_until;

	if (xml_parse(r->in.data ? r->in.data : "", r->in.len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "Retention")) {
		s3_error(r, S3_MALFORMED_XML, "The XML you provided was not well-formed");
		goto out;
	}
	mode = xml_child_text(root, "Mode");
	date = xml_child_text(root, "RetainUntilDate");
	if (!mode != !date || (mode && !mode_ok(mode))) {
		s3_error(r, S3_MALFORMED_XML,
			 "Retention needs a Mode (GOVERNANCE or COMPLIANCE) and a "
			 "RetainUntilDate, or neither");
		goto out;
	}
	if (date && (!iso8601_parse(date, &until) || until <= time(NULL))) {
		s3_error(r, S3_INVALID_ARGUMENT, "The retain until date must be in the future");
		goto out;
	}
	if (!(e = locked_version(r, &path)))
		goto out;
	/* a retention in force may only grow, unless GOVERNANCE is bypassed */
	if (retention(e, &old_until, old_mode) && old_until > time(NULL) &&
	    (!mode || strcmp(mode, old_mode) || until < old_until) &&
	    (!strcmp(old_mode, "COMPLIANCE") || !bypass(r, r->key))) {
		s3_error(r, S3_ACCESS_DENIED,
			 "Access Denied because object protected by object lock.");
		goto out;
	}
	snprintf(v, sizeof(v), "%lld", (long long)until);
	if (lock_set(r, path, X_LOCK_UNTIL, mode ? v : NULL) &&
	    lock_set(r, path, X_LOCK_MODE, mode))
		r->status = 200;
out:
	filer_entry_free(e);
	free(path);
	xml_free(root);
}

void s3_get_legal_hold(struct s3_req *r)
{
	char *path;
	struct filer_entry *e = locked_version(r, &path);
	xml_w *w;
	if (!e)
		return;
	if (!filer_entry_xattr_get(e, X_LOCK_HOLD)) {
		s3_error(r, S3_NO_LOCK_CONFIG_OBJECT,
			 "The specified object does not have a ObjectLock configuration");
	} else {
		w = xml_w_new(&r->body);
		xml_open_s3(w, "LegalHold");
		xml_elem(w, "Status", held(e) ? "ON" : "OFF");
		s3_xml_ok(r, w);
	}
	filer_entry_free(e);
	free(path);
}

void s3_put_legal_hold(struct s3_req *r)
{
	struct xml_node *root = NULL;
	struct filer_entry *e = NULL;
	const char *st = NULL;
	char *path = NULL, msg[128];

	if (xml_parse(r->in.data ? r->in.data : "", r->in.len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "LegalHold") || !(st = xml_child_text(root, "Status")) ||
	    (strcmp(st, "ON") && strcmp(st, "OFF"))) {
		s3_error(r, S3_MALFORMED_XML, "LegalHold needs a Status of ON or OFF");
		goto out;
	}
	if ((e = locked_version(r, &path)) && lock_set(r, path, X_LOCK_HOLD, st))
		r->status = 200;
out:
	filer_entry_free(e);
	free(path);
	xml_free(root);
}
