/* Lance Namespace REST requests: see lance_req.h. */
#include "config.h"
#include "catalog/lance_req.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/buf.h"
#include "lib/http_util.h"
#include "lib/util.h"

int lance_code_status(enum lance_code code)
{
	switch (code) {
	case LANCE_UNSUPPORTED:
		return 406;
	case LANCE_NAMESPACE_NOT_FOUND:
	case LANCE_TABLE_NOT_FOUND:
	case LANCE_TABLE_VERSION_NOT_FOUND:
		return 404;
	case LANCE_NAMESPACE_EXISTS:
	case LANCE_NAMESPACE_NOT_EMPTY:
	case LANCE_TABLE_EXISTS:
	case LANCE_CONCURRENT_MODIFICATION:
		return 409;
	case LANCE_INVALID_INPUT:
		return 400;
	case LANCE_PERMISSION_DENIED:
		return 403;
	case LANCE_UNAUTHENTICATED:
		return 401;
	case LANCE_SERVICE_UNAVAILABLE:
		return 503;
	case LANCE_INTERNAL:
		break;
	}
	return 500;
}

const char *lance_code_name(enum lance_code code)
{
	switch (code) {
	case LANCE_UNSUPPORTED:
		return "Unsupported";
	case LANCE_NAMESPACE_NOT_FOUND:
		return "NamespaceNotFound";
	case LANCE_NAMESPACE_EXISTS:
		return "NamespaceAlreadyExists";
	case LANCE_NAMESPACE_NOT_EMPTY:
		return "NamespaceNotEmpty";
	case LANCE_TABLE_NOT_FOUND:
		return "TableNotFound";
	case LANCE_TABLE_EXISTS:
		return "TableAlreadyExists";
	case LANCE_TABLE_VERSION_NOT_FOUND:
		return "TableVersionNotFound";
	case LANCE_INVALID_INPUT:
		return "InvalidInput";
	case LANCE_CONCURRENT_MODIFICATION:
		return "ConcurrentModification";
	case LANCE_PERMISSION_DENIED:
		return "PermissionDenied";
	case LANCE_UNAUTHENTICATED:
		return "Unauthenticated";
	case LANCE_SERVICE_UNAVAILABLE:
		return "ServiceUnavailable";
	case LANCE_INTERNAL:
		break;
	}
	return "Internal";
}

void lance_op_free(struct lance_op *op)
{
	lance_id_free(&op->id);
	lance_id_free(&op->new_namespace);
	free(op->page_token);
	free(op->location);
	free(op->new_table_name);
	jt_free(op->properties);
	memset(op, 0, sizeof(*op));
}

static bool refuse(struct lance_refusal *r, enum lance_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool refuse(struct lance_refusal *r, enum lance_code code, const char *fmt, ...)
{
	va_list ap;
	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
	return false;
}

/* ---- routes ---- */

struct route {
	const char *scope; /* "namespace", "table" */
	const char *op;    /* the path's last segment(s) */
	const char *method;
	enum lance_route route;
	const char *what;
};

static const struct route ROUTES[] = {
	{"namespace", "create", "POST", LR_NS_CREATE, "CreateNamespace"},
	{"namespace", "list", "GET", LR_NS_LIST, "ListNamespaces"},
	{"namespace", "describe", "POST", LR_NS_DESCRIBE, "DescribeNamespace"},
	{"namespace", "drop", "POST", LR_NS_DROP, "DropNamespace"},
	{"namespace", "exists", "POST", LR_NS_EXISTS, "NamespaceExists"},
	{"namespace", "table/list", "GET", LR_TABLE_LIST, "ListTables"},
	{"table", "declare", "POST", LR_DECLARE, "DeclareTable"},
	{"table", "describe", "POST", LR_DESCRIBE, "DescribeTable"},
	{"table", "exists", "POST", LR_EXISTS, "TableExists"},
	{"table", "register", "POST", LR_REGISTER, "RegisterTable"},
	{"table", "deregister", "POST", LR_DEREGISTER, "DeregisterTable"},
	{"table", "drop", "POST", LR_DROP, "DropTable"},
	{"table", "rename", "POST", LR_RENAME, "RenameTable"},
};

/* op's route from "/v1/<scope>/<id>/<rest>" into *route and the id's segment. */
static bool find_route(const char *method, const char *path, struct lance_op *op,
		       const char **id, size_t *id_len, struct lance_refusal *r)
{
	const char *p, *slash;

	if (!strcmp(path, "/v1/table") || !strcmp(path, "/v1/table/")) {
		if (strcmp(method, "GET"))
			return refuse(r, LANCE_INVALID_INPUT, "ListAllTables is a GET");
		op->route = LR_TABLE_LIST_ALL;
		op->what = "ListAllTables";
		*id = "";
		*id_len = 0;
		return true;
	}
	for (size_t i = 0; i < sizeof(ROUTES) / sizeof(*ROUTES); i++) {
		const struct route *rt = &ROUTES[i];
		size_t sl = strlen(rt->scope);
		if (strncmp(path, "/v1/", 4) || strncmp(path + 4, rt->scope, sl) ||
		    path[4 + sl] != '/')
			continue;
		p = path + 4 + sl + 1;
		slash = strchr(p, '/');
		if (!slash && !strcmp(p, rt->op)) {
			slash = p - 1; /* no id at all: the root (a client drops a "." id) */
			p = slash;
		} else if (!slash || strcmp(slash + 1, rt->op)) {
			continue;
		}
		if (strcmp(method, rt->method))
			return refuse(r, LANCE_INVALID_INPUT, "%s is a %s", rt->what, rt->method);
		op->route = rt->route;
		op->what = rt->what;
		*id = p;
		*id_len = (size_t)(slash - p);
		return true;
	}
	return refuse(r, LANCE_UNSUPPORTED,
		      "%s %.120s is not served by this catalog (docs/catalog.md, \"Lance\": "
		      "the data plane, indexes, tags, branches and table versions are not)",
		      method, path);
}

/* ---- the query ---- */

/* Query parameter name as a bool into *out (unchanged when absent); false when malformed. */
static bool query_bool(const char *q, const char *name, bool *out, struct lance_refusal *r)
{
	char *s = url_query_param(q, name);
	bool ok = !s || parse_bool(s, out);
	free(s);
	return ok || refuse(r, LANCE_INVALID_INPUT, "%s must be true or false", name);
}

static bool parse_query(const char *q, struct lance_op *op, struct lance_refusal *r)
{
	char *delim = url_query_param(q, "delimiter"), *limit = url_query_param(q, "limit");
	uint64_t n = LANCE_PAGE_MAX;
	bool ok = true;

	if (delim && (!*delim || !lance_delimiter_ok(delim)))
		ok = refuse(r, LANCE_INVALID_INPUT, "the delimiter must be 1 to %d bytes without '/'",
			    LANCE_DELIM_MAX);
	else
		snprintf(op->delim, sizeof(op->delim), "%s", delim ? delim : "$");
	if (ok && limit && !parse_u64(limit, &n))
		ok = refuse(r, LANCE_INVALID_INPUT, "limit must be a number of items");
	op->limit = n > LANCE_PAGE_MAX ? LANCE_PAGE_MAX : (size_t)n;
	op->page_token = url_query_param(q, "page_token");
	if (op->page_token && !*op->page_token) {
		free(op->page_token); /* an empty token is the first page */
		op->page_token = NULL;
	}
	op->include_declared = true;
	ok = ok && query_bool(q, "include_declared", &op->include_declared, r) &&
	     query_bool(q, "with_table_uri", &op->with_table_uri, r) &&
	     query_bool(q, "load_detailed_metadata", &op->load_detailed_metadata, r) &&
	     query_bool(q, "check_declared", &op->check_declared, r);
	free(delim);
	free(limit);
	return ok;
}

/* ---- the body ---- */

/* A mode's words compared without case and '_' ("ExistOk", "exist_ok"). */
static bool word_is(const char *s, const char *word)
{
	for (;; s++) {
		if (*s == '_')
			continue;
		if (tolower((unsigned char)*s) != *word)
			return false;
		if (!*word)
			return true;
		word++;
	}
}

/*
 * An array of strings as an id into id: the parts joined with the delimiter
 * and split again, so ["a", "b"] and ["a$b"] (as some clients send the
 * path's id) are one id. false when it is no array of strings.
 */
static bool json_id(const jt *v, const char *delim, struct lance_id *id, const char *what,
		    struct lance_refusal *r)
{
	char why[LANCE_WHY_MAX];
	bool ok;
	buf b;

	id->n = 0;
	if (!jt_is(v, JT_ARR) || jt_len(v) > LANCE_ID_PARTS_MAX)
		return refuse(r, LANCE_INVALID_INPUT, "%s is an array of at most %d strings", what,
			      LANCE_ID_PARTS_MAX);
	buf_init(&b);
	for (size_t i = 0; i < jt_len(v); i++) {
		const jt *s = jt_at(v, i);
		if (!jt_is(s, JT_STR) || !s->slen || strlen(jt_as_str(s)) != s->slen) {
			buf_free(&b);
			return refuse(r, LANCE_INVALID_INPUT,
				      "%s holds a part that is no non-empty string without NUL", what);
		}
		if (i)
			buf_append_str(&b, delim);
		buf_append(&b, jt_as_str(s), s->slen);
	}
	ok = lance_id_split(b.data ? b.data : "", b.len, delim, id, why);
	buf_free(&b);
	return ok || refuse(r, LANCE_INVALID_INPUT, "%s: %s", what, why);
}

/* A string member of the body into *out (malloc'd); false when present and no string. */
static bool json_str(const jt *body, const char *key, char **out, struct lance_refusal *r)
{
	const jt *v = jt_get(body, key);
	if (!v || jt_is(v, JT_NULL))
		return true;
	if (!jt_is(v, JT_STR) || strlen(jt_as_str(v)) != v->slen)
		return refuse(r, LANCE_INVALID_INPUT, "%s must be a string without NUL", key);
	*out = xstrdup(jt_as_str(v));
	return true;
}

/* A bool member of the body into *out (unchanged when absent or null). */
static bool json_bool(const jt *body, const char *key, bool *out, struct lance_refusal *r)
{
	const jt *v = jt_get(body, key);
	if (!v || jt_is(v, JT_NULL))
		return true;
	return jt_as_bool(v, out) || refuse(r, LANCE_INVALID_INPUT, "%s must be a boolean", key);
}

static bool parse_mode(const jt *body, struct lance_op *op, struct lance_refusal *r)
{
	char *mode = NULL, *behavior = NULL;
	bool ok = json_str(body, "mode", &mode, r) && json_str(body, "behavior", &behavior, r);

	if (ok && mode && op->route == LR_NS_DROP) {
		if (word_is(mode, "fail"))
			op->drop_mode = LD_FAIL;
		else if (word_is(mode, "skip"))
			op->drop_mode = LD_SKIP;
		else
			ok = refuse(r, LANCE_INVALID_INPUT, "mode must be Fail or Skip");
	} else if (ok && mode) {
		bool create_ns = op->route == LR_NS_CREATE;
		if (word_is(mode, "create"))
			op->mode = LM_CREATE;
		else if (word_is(mode, "overwrite"))
			op->mode = LM_OVERWRITE;
		else if (create_ns && word_is(mode, "existok"))
			op->mode = LM_EXIST_OK;
		else
			ok = refuse(r, LANCE_INVALID_INPUT, "mode must be %s",
				    create_ns ? "Create, ExistOk or Overwrite" : "Create or Overwrite");
	}
	if (ok && behavior) {
		if (word_is(behavior, "restrict"))
			op->cascade = false;
		else if (word_is(behavior, "cascade"))
			op->cascade = true;
		else
			ok = refuse(r, LANCE_INVALID_INPUT, "behavior must be Restrict or Cascade");
	}
	free(mode);
	free(behavior);
	return ok;
}

static bool parse_properties(jt *body, struct lance_op *op, struct lance_refusal *r)
{
	jt *v = jt_get(body, "properties");
	if (!v || jt_is(v, JT_NULL))
		return true;
	if (!jt_is(v, JT_OBJ))
		return refuse(r, LANCE_INVALID_INPUT, "properties must be an object of strings");
	for (size_t i = 0; i < jt_len(v); i++)
		if (!jt_is(jt_at(v, i), JT_STR))
			return refuse(r, LANCE_INVALID_INPUT, "property %.100s is not a string",
				      v->keys[i]);
	op->properties = jt_take(body, "properties");
	return true;
}

static bool parse_body(jt *body, struct lance_op *op, struct lance_refusal *r)
{
	const jt *v;

	if ((v = jt_get(body, "id")) && !jt_is(v, JT_NULL)) {
		struct lance_id given = {0};
		bool same;
		if (!json_id(v, op->delim, &given, "id", r))
			return false;
		same = lance_id_equal(&given, &op->id);
		lance_id_free(&given);
		if (!same)
			return refuse(r, LANCE_INVALID_INPUT,
				      "the id of the body is not the id of the path");
	}
	if ((v = jt_get(body, "version")) && !jt_is(v, JT_NULL)) {
		if (!jt_as_u64(v, &op->version) || op->version > INT64_MAX)
			return refuse(r, LANCE_INVALID_INPUT, "version must be a number >= 0");
		op->has_version = true;
	}
	if ((v = jt_get(body, "new_namespace_id")) && !jt_is(v, JT_NULL)) {
		if (!json_id(v, op->delim, &op->new_namespace, "new_namespace_id", r))
			return false;
		op->has_new_namespace = true;
	}
	if ((jt_get(body, "tag") && !jt_is(jt_get(body, "tag"), JT_NULL)) ||
	    (jt_get(body, "branch") && !jt_is(jt_get(body, "branch"), JT_NULL)))
		return refuse(r, LANCE_UNSUPPORTED, "tags and branches are not served");
	return parse_mode(body, op, r) && parse_properties(body, op, r) &&
	       json_str(body, "location", &op->location, r) &&
	       json_str(body, "new_table_name", &op->new_table_name, r) &&
	       json_bool(body, "vend_credentials", &op->vend_credentials, r) &&
	       json_bool(body, "with_table_uri", &op->with_table_uri, r) &&
	       json_bool(body, "load_detailed_metadata", &op->load_detailed_metadata, r) &&
	       json_bool(body, "check_declared", &op->check_declared, r);
}

bool lance_parse(const char *method, const char *raw_path, const char *raw_query,
		 const char *body, size_t body_len, struct lance_op *op, struct lance_refusal *r)
{
	const char *id = "";
	char why[LANCE_WHY_MAX], msg[128];
	size_t id_len = 0;
	jt *doc = NULL;
	bool ok;

	memset(op, 0, sizeof(*op));
	if (!find_route(method, raw_path, op, &id, &id_len, r) || !parse_query(raw_query, op, r))
		return false;
	if (!lance_id_parse(id, id_len, op->delim, &op->id, why))
		return refuse(r, LANCE_INVALID_INPUT, "%s", why);
	while (body_len && isspace((unsigned char)*body))
		body++, body_len--;
	if (!body_len)
		return true; /* no body: every member has its default */
	doc = jt_parse(body, body_len, msg, sizeof(msg));
	if (!jt_is(doc, JT_OBJ))
		ok = refuse(r, LANCE_INVALID_INPUT, "the body of %s is a JSON object%s%s", op->what,
			    doc ? "" : ": ", doc ? "" : msg);
	else
		ok = parse_body(doc, op, r);
	jt_free(doc);
	return ok;
}
