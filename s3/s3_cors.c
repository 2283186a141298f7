/*
 * CORS: PutBucketCors, GetBucketCors, DeleteBucketCors, the OPTIONS
 * preflight, and the CORS headers of ordinary answers to a browser.
 *
 * DESIGN: a bucket's configuration is parsed and checked when it is put, then
 * stored re-written in our own canonical XML in the bucket directory's
 * "s3.cors" extended attribute (one atomic setXattr). Requests read it back:
 * a preflight (OPTIONS, never signed: browsers send no credentials) needs it
 * to answer at all; an ordinary request that carries Origin gets the CORS
 * headers of the first rule that allows its origin and method. Only requests
 * with an Origin header pay the extra lookup. Origins and allowed headers
 * may hold one '*' wildcard, as in S3; methods are GET, PUT, HEAD, POST and
 * DELETE.
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "s3/s3_int.h"
#include "util.h"

#define X_CORS    "s3.cors"
#define RULES_MAX 100

struct list {
	char **v;
	size_t n;
};

struct rule {
	struct list origins, methods, headers, expose;
	long max_age; /* -1: none */
	char *id;
};

struct cors {
	struct rule *r;
	size_t n;
};

static void list_add(struct list *l, const char *s)
{
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = xstrdup(s);
}

static void list_free(struct list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static void cors_free(struct cors *c)
{
	for (size_t i = 0; i < c->n; i++) {
		list_free(&c->r[i].origins);
		list_free(&c->r[i].methods);
		list_free(&c->r[i].headers);
		list_free(&c->r[i].expose);
		free(c->r[i].id);
	}
	free(c->r);
	memset(c, 0, sizeof(*c));
}

static bool method_ok(const char *m)
{
	static const char *const ok[] = {"GET", "PUT", "HEAD", "POST", "DELETE"};
	for (size_t i = 0; i < ARRAY_LEN(ok); i++)
		if (!strcmp(m, ok[i]))
			return true;
	return false;
}

/*
 * Reads a CORSConfiguration document into c; NULL on success, else why it is
 * refused (the caller answers MalformedXML or InvalidRequest).
 */
static const char *cors_parse(const char *xml, size_t len, struct cors *c, bool *malformed)
{
	struct xml_node *root = NULL;
	char msg[128];
	const char *why = NULL;

	*malformed = false;
	memset(c, 0, sizeof(*c));
	if (xml_parse(xml, len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "CORSConfiguration")) {
		*malformed = true;
		xml_free(root);
		return "The XML you provided was not well-formed or did not validate against our "
		       "published schema";
	}
	if (!xml_count(root, "CORSRule") || xml_count(root, "CORSRule") > RULES_MAX)
		why = "A CORS configuration holds 1 to 100 CORSRule elements";
	xml_foreach(n, root, "CORSRule")
	{
		struct rule *r;
		const char *age = xml_child_text(n, "MaxAgeSeconds"), *id = xml_child_text(n, "ID");
		if (why)
			break;
		c->r = xrealloc(c->r, (c->n + 1) * sizeof(*c->r));
		r = &c->r[c->n++];
		memset(r, 0, sizeof(*r));
		r->max_age = -1;
		r->id = id ? xstrdup(id) : NULL;
		xml_foreach(o, n, "AllowedOrigin") list_add(&r->origins, o->text);
		xml_foreach(m, n, "AllowedMethod") list_add(&r->methods, m->text);
		xml_foreach(h, n, "AllowedHeader") list_add(&r->headers, h->text);
		xml_foreach(e, n, "ExposeHeader") list_add(&r->expose, e->text);
		if (!r->origins.n || !r->methods.n)
			why = "Every CORSRule needs an AllowedOrigin and an AllowedMethod";
		for (size_t i = 0; !why && i < r->methods.n; i++)
			if (!method_ok(r->methods.v[i]))
				why = "Found unsupported HTTP method in CORS config (GET, PUT, "
				      "HEAD, "
				      "POST and DELETE are allowed)";
		for (size_t i = 0; !why && i < r->origins.n; i++)
			if (strchr(r->origins.v[i], '*') != strrchr(r->origins.v[i], '*'))
				why = "AllowedOrigin can not have more than one wildcard";
		for (size_t i = 0; !why && i < r->headers.n; i++)
			if (strchr(r->headers.v[i], '*') != strrchr(r->headers.v[i], '*'))
				why = "AllowedHeader can not have more than one wildcard";
		if (!why && age) {
			char *end;
			long v = strtol(age, &end, 10);
			if (*end || end == age || v < 0)
				why = "MaxAgeSeconds must be a non-negative integer";
			r->max_age = v;
		}
	}
	xml_free(root);
	if (why)
		cors_free(c);
	return why;
}

static void cors_write(const struct cors *c, buf *out)
{
	xml_w *w = xml_w_new(out);
	xml_open_s3(w, "CORSConfiguration");
	for (size_t i = 0; i < c->n; i++) {
		const struct rule *r = &c->r[i];
		xml_open(w, "CORSRule");
		if (r->id)
			xml_elem(w, "ID", r->id);
		for (size_t k = 0; k < r->headers.n; k++)
			xml_elem(w, "AllowedHeader", r->headers.v[k]);
		for (size_t k = 0; k < r->methods.n; k++)
			xml_elem(w, "AllowedMethod", r->methods.v[k]);
		for (size_t k = 0; k < r->origins.n; k++)
			xml_elem(w, "AllowedOrigin", r->origins.v[k]);
		for (size_t k = 0; k < r->expose.n; k++)
			xml_elem(w, "ExposeHeader", r->expose.v[k]);
		if (r->max_age >= 0)
			xml_elem_i64(w, "MaxAgeSeconds", r->max_age);
		xml_close(w);
	}
	xml_w_free(w);
}

/* Whether s matches pattern p with at most one '*' (any run), case-insensitively if nocase. */
static bool wild_match(const char *p, const char *s, bool nocase)
{
	const char *star = strchr(p, '*');
	size_t pre, post, n = strlen(s);
	int (*cmp)(const char *, const char *, size_t) = nocase ? strncasecmp : strncmp;
	if (!star)
		return nocase ? !strcasecmp(p, s) : !strcmp(p, s);
	pre = (size_t)(star - p);
	post = strlen(star + 1);
	return n >= pre + post && !cmp(p, s, pre) && !cmp(star + 1, s + n - post, post);
}

static bool list_matches(const struct list *l, const char *s, bool nocase)
{
	for (size_t i = 0; i < l->n; i++)
		if (wild_match(l->v[i], s, nocase))
			return true;
	return false;
}

/* Every header of the comma list req is allowed by r. */
static bool headers_allowed(const struct rule *r, const char *req)
{
	char *copy, *save = NULL;
	bool ok = true;
	if (!req)
		return true;
	copy = xstrdup(req);
	for (char *h = strtok_r(copy, ", ", &save); h && ok; h = strtok_r(NULL, ", ", &save))
		ok = list_matches(&r->headers, h, true);
	free(copy);
	return ok;
}

static const struct rule *cors_match(const struct cors *c, const char *origin, const char *method,
				     const char *headers)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct rule *r = &c->r[i];
		bool m = false;
		for (size_t k = 0; k < r->methods.n && !m; k++)
			m = !strcmp(r->methods.v[k], method);
		if (m && list_matches(&r->origins, origin, false) && headers_allowed(r, headers))
			return r;
	}
	return NULL;
}

/* The bucket's configuration into c: WFS_OK, WFS_ENODATA when it has none, or a filer error. */
static wfs_err cors_load(struct s3_req *r, struct cors *c)
{
	char *path = s3_bucket_path(r->bucket);
	struct filer_entry *e = NULL;
	const struct filer_xattr *x;
	bool malformed;
	wfs_err rc = filer_meta_lookup(r->g->filer, path, &e);

	memset(c, 0, sizeof(*c));
	if (!rc && !S_ISDIR(e->attr.mode))
		rc = WFS_ENOENT;
	if (!rc) {
		x = filer_entry_xattr_get(e, X_CORS);
		if (!x || cors_parse((const char *)x->value, x->value_len, c, &malformed))
			rc = WFS_ENODATA; /* none, or unreadable: CORS stays off */
	}
	filer_entry_free(e);
	free(path);
	return rc;
}

/* The headers a matching rule gives an answer (preflight: the methods and headers too). */
static void rule_headers(struct s3_req *r, const struct rule *rule, const char *origin,
			 bool preflight)
{
	bool any = rule->origins.n == 1 && !strcmp(rule->origins.v[0], "*");
	buf b = BUF_INIT;

	s3_header(r, "Access-Control-Allow-Origin", any ? "*" : origin);
	if (!any)
		s3_header(r, "Access-Control-Allow-Credentials", "true");
	s3_header(r, "Vary",
		  "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
	for (size_t i = 0; i < rule->expose.n; i++)
		buf_printf(&b, "%s%s", i ? ", " : "", rule->expose.v[i]);
	if (b.len) {
		buf_append(&b, "", 1);
		s3_header(r, "Access-Control-Expose-Headers", (char *)b.data);
	}
	if (preflight) {
		const char *h = http_req_header(r->req, "Access-Control-Request-Headers");
		buf_reset(&b);
		for (size_t i = 0; i < rule->methods.n; i++)
			buf_printf(&b, "%s%s", i ? ", " : "", rule->methods.v[i]);
		buf_append(&b, "", 1);
		s3_header(r, "Access-Control-Allow-Methods", (char *)b.data);
		if (h)
			s3_header(r, "Access-Control-Allow-Headers", h);
		if (rule->max_age >= 0) {
			char age[24];
			snprintf(age, sizeof(age), "%ld", rule->max_age);
			s3_header(r, "Access-Control-Max-Age", age);
		}
	}
	buf_free(&b);
}

/* ---- the operations (workers) ---- */

void s3_put_cors(struct s3_req *r)
{
	struct cors c;
	bool malformed;
	const char *why = cors_parse(r->in.data ? r->in.data : "", r->in.len, &c, &malformed);
	buf out = BUF_INIT;

	if (why) {
		s3_error(r, malformed ? S3_MALFORMED_XML : S3_INVALID_REQUEST, "%s", why);
		return;
	}
	cors_write(&c, &out);
	s3_bucket_config_set(r, X_CORS, &out, "storing the CORS configuration");
	buf_free(&out);
	cors_free(&c);
}

void s3_get_cors(struct s3_req *r)
{
	struct cors c;
	wfs_err rc = cors_load(r, &c);
	if (rc == WFS_ENOENT) {
		s3_error(r, S3_NO_SUCH_BUCKET, "The specified bucket does not exist");
	} else if (rc == WFS_ENODATA) {
		s3_error(r, S3_NO_SUCH_CORS, "The CORS configuration does not exist");
	} else if (rc) {
		s3_filer_error(r, rc, "reading the CORS configuration");
	} else {
		cors_write(&c, &r->body);
		r->status = 200;
		r->ctype = "application/xml";
	}
	cors_free(&c);
}

void s3_delete_cors(struct s3_req *r)
{
	s3_bucket_config_remove(r, X_CORS, "removing the CORS configuration");
}

void s3_cors_preflight(struct s3_req *r)
{
	const char *origin = http_req_header(r->req, "Origin");
	const char *method = http_req_header(r->req, "Access-Control-Request-Method");
	const struct rule *rule;
	struct cors c;
	wfs_err rc;

	if (!origin || !method) {
		s3_error(r, S3_INVALID_REQUEST,
			 "Insufficient information. Origin request header "
			 "and Access-Control-Request-Method needed.");
		return;
	}
	rc = cors_load(r, &c);
	if (rc == WFS_ENOENT)
		s3_error(r, S3_NO_SUCH_BUCKET, "The specified bucket does not exist");
	else if (rc == WFS_ENODATA)
		s3_error(r, S3_ACCESS_FORBIDDEN,
			 "CORSResponse: CORS is not enabled for this bucket.");
	else if (rc)
		s3_filer_error(r, rc, "reading the CORS configuration");
	else if (!(rule = cors_match(&c, origin, method,
				     http_req_header(r->req, "Access-Control-Request-Headers"))))
		s3_error(r, S3_ACCESS_FORBIDDEN,
			 "CORSResponse: This CORS request is not allowed. This is usually because "
			 "the evalution of Origin, request method / Access-Control-Request-Method "
			 "or Access-Control-Request-Headers are not whitelisted by the resource's "
			 "CORS spec.");
	else {
		rule_headers(r, rule, origin, true);
		r->status = 200;
	}
	cors_free(&c);
}

void s3_cors_answer(struct s3_req *r)
{
	const char *origin = http_req_header(r->req, "Origin");
	const struct rule *rule;
	struct cors c;
	if (!origin || !r->bucket || !s3_bucket_name_ok(r->bucket) || cors_load(r, &c))
		return;
	rule = cors_match(&c, origin, http_req_method_str(r->req), NULL);
	if (rule)
		rule_headers(r, rule, origin, false);
	cors_free(&c);
}
