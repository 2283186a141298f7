/*
 * Catalog load generator (Iceberg REST and Lance Namespace REST): C
 * concurrent requests on one libcurl multi handle, against the catalog or,
 * for the floors, against the filer operations the catalog does per request.
 * Prints one line of figures; exits 1 if a request failed unexpectedly, 2 on
 * bad flags. A benchmark, not a test.
 *
 *   tests/bench/catalog_load -endpoint=127.0.0.1:8181 -prefix=lake -ns=bench \
 *           -table=t -mode=commit -c=16 -duration=10
 *
 * Modes (TABLE: -table, or TABLE0..TABLE<tables-1> when -tables > 1; the
 * filer modes name entries -path or PATH0..PATH<tables-1> the same way):
 *   load      GET loadTable of TABLE: 200
 *   commit    set-properties {"bench": "v<i>"} with the requirement
 *             assert-table-uuid, which holds whatever else commits: the
 *             server redoes a lost swap itself. A 409 (CommitFailed: it lost
 *             8 rounds) is counted as a retry and sent again.
 *   conflict  set-current-schema to the other of schemas 0 and 1 with the
 *             requirement assert-current-schema-id of the one this writer
 *             last saw, as an engine's optimistic commit: a writer that lost
 *             the race gets 409, reloads the table (GET) and retries. The
 *             table needs a schema 1 (tests/bench/catalog.sh adds it).
 *   raw-get   filer GET of PATH (a metadata file): 200
 *   raw-lookup  filer POST /.api/v1/lookup of PATH: 200
 *   raw-cas   filer setXattrs of the attribute bench.cas on PATH with ifEtag:
 *             the catalog's pointer swap. A 412 is a retry after a lookup.
 *   raw-list  filer POST /.api/v1/list of the directory PATH, -limit entries a
 *             request, from each answer's lastName while it says more: the
 *             whole directory is one operation
 * The Lance modes name tables <prefix>$<ns>$TABLE (-endpoint: the Lance port;
 * -bearer: a token from /v1/oauth/tokens when the catalog has identities):
 *   lance-declare   POST DeclareTable of TABLE: 200 (with -n=<tables>
 *                   -duration=0 it makes each table once)
 *   lance-describe  POST DescribeTable of TABLE with {}: 200
 *   lance-vend      the same with {"vend_credentials":true}
 *   lance-list      GET ListTables of the namespace, -limit tables a page,
 *                   following page_token to the end: one operation
 * The listing modes print items (tables or entries) and pages too.
 *
 * A table (entry) is chosen round-robin per operation. An operation's latency
 * runs from its first request to its success (retries and reloads included),
 * on the monotonic clock; percentiles are nearest-rank over the successes.
 * retry_rate is retries per success. The client's CPU time is printed (cpu_s).
 */
#include "config.h"
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base64.h"
#include "buf.h"
#include "flags.h"
#include "jtree.h"
#include "load_stats.h"
#include "util.h"

#define MAX_STATUS   600
#define MAX_REPORTED 10

enum mode {
	M_LOAD,
	M_COMMIT,
	M_CONFLICT,
	M_LANCE_DECLARE,
	M_LANCE_DESCRIBE,
	M_LANCE_VEND,
	M_LANCE_LIST,
	M_RAW_GET, /* the filer's own modes from here */
	M_RAW_LOOKUP,
	M_RAW_CAS,
	M_RAW_LIST,
	NMODES
};
static const char *const mode_names[NMODES] = {
	"load",       "commit",  "conflict",   "lance-declare", "lance-describe", "lance-vend",
	"lance-list", "raw-get", "raw-lookup", "raw-cas",       "raw-list"};

struct opts {
	const char *endpoint, *filer, *prefix, *ns, *table, *path, *mode, *label, *bearer;
	int c, tables, limit;
	long long n;
	double duration, timeout;
};

/* What a writer knows of one table (entry): its uuid, current schema, etag. */
struct target {
	char *name; /* the table's name, or the entry's path */
	char *uuid;
	int64_t schema;
	char etag[17];
};

struct run {
	const struct opts *o;
	enum mode mode;
	struct target *t;
	long long next;    /* operations started */
	uint64_t deadline; /* no new operation from this time (monotonic ns), 0: -n */
	CURLM *multi;
	uint64_t ops, retries, refreshes, errors, connects;
	uint64_t items, pages; /* the listing modes' */
	uint64_t err_status[MAX_STATUS];
	uint32_t *lat_us;
	size_t nlat, caplat;
	int reported;
};

struct slot {
	struct run *r;
	CURL *h;
	struct curl_slist *hdrs;
	int target;
	bool refresh; /* the request in flight reloads the target */
	char *cursor; /* a listing's next page starts after it; NULL: the first page */
	long long seq;
	uint64_t t0;
	buf body; /* the request's */
	buf got;  /* the answer's */
};

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
	buf_append(arg, p, size * nmemb);
	return size * nmemb;
}

static jt *parse(const buf *b)
{
	char err[128];
	return b->len ? jt_parse(b->data, b->len, err, sizeof(err)) : NULL;
}

/* Sets up h for a request to url (a POST of body when body is not NULL). */
static void prepare(CURL *h, struct curl_slist **hdrs, const char *url, const buf *body,
		    buf *got, const struct opts *o)
{
	curl_easy_reset(h);
	curl_slist_free_all(*hdrs);
	*hdrs = curl_slist_append(NULL, "Expect:");
	if (body)
		*hdrs = curl_slist_append(*hdrs, "Content-Type: application/json");
	if (*o->bearer) {
		char *auth = xasprintf("Authorization: Bearer %s", o->bearer);
		*hdrs = curl_slist_append(*hdrs, auth);
		free(auth);
	}
	buf_reset(got);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, got);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(o->timeout * 1000));
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->data);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	}
}

static char *table_url(const struct opts *o, const char *table)
{
	return xasprintf("http://%s/v1/%s/namespaces/%s/tables/%s", o->endpoint, o->prefix, o->ns,
			 table);
}

/* A Lance route of TABLE: POST /v1/table/<prefix>$<ns>$<table>/<verb>. */
static char *lance_table_url(const struct opts *o, const char *table, const char *verb)
{
	return xasprintf("http://%s/v1/table/%s%%24%s%%24%s/%s", o->endpoint, o->prefix, o->ns,
			 table, verb);
}

/* ListTables' page after cursor (NULL: the first). */
static char *lance_list_url(const struct opts *o, const char *cursor)
{
	char *tok = cursor ? curl_easy_escape(NULL, cursor, 0) : NULL;
	char *url = xasprintf("http://%s/v1/namespace/%s%%24%s/table/list?limit=%d%s%s",
			      o->endpoint, o->prefix, o->ns, o->limit, tok ? "&page_token=" : "",
			      tok ? tok : "");
	curl_free(tok);
	return url;
}

/* The filer's listing of dir after cursor (NULL: from the start). */
static char *list_request(const struct opts *o, const char *dir, const char *cursor, buf *body)
{
	buf_printf(body, "{\"dir\":\"%s\",\"startName\":\"%s\",\"limit\":%d}", dir,
		   cursor ? cursor : "", o->limit);
	return xasprintf("http://%s/.api/v1/list", o->filer);
}

static char *lookup_request(const struct opts *o, const char *path, buf *body)
{
	buf_printf(body, "{\"path\":\"%s\"}", path);
	return xasprintf("http://%s/.api/v1/lookup", o->filer);
}

/* The request that reloads target t: loadTable, or the filer's lookup. */
static char *refresh_request(const struct run *r, const struct target *t, buf *body)
{
	return r->mode == M_RAW_CAS ? lookup_request(r->o, t->name, body)
				    : table_url(r->o, t->name);
}

/* Takes in what a reload of t answered (got); false when it is not understood. */
static bool refreshed(const struct run *r, struct target *t, const buf *got)
{
	jt *root = parse(got), *md = jt_get(root, "metadata");
	const char *s = r->mode == M_RAW_CAS ? jt_get_str(root, "etag") : jt_get_str(md, "table-uuid");
	bool ok = s && (r->mode != M_RAW_CAS || strlen(s) == 16);
	if (ok && r->mode == M_RAW_CAS) {
		memcpy(t->etag, s, 17);
	} else if (ok) {
		free(t->uuid);
		t->uuid = xstrdup(s);
		ok = jt_get_i64(md, "current-schema-id", &t->schema);
	}
	jt_free(root);
	return ok;
}

/* The operation's request proper into body; returns its URL. */
static char *op_request(const struct slot *s, buf *body)
{
	const struct run *r = s->r;
	const struct opts *o = r->o;
	const struct target *t = &r->t[s->target];
	buf v = BUF_INIT;
	char val[32];

	switch (r->mode) {
	case M_LOAD:
		return table_url(o, t->name);
	case M_RAW_GET:
		return xasprintf("http://%s%s", o->filer, t->name);
	case M_RAW_LOOKUP:
		return lookup_request(o, t->name, body);
	case M_RAW_LIST:
		return list_request(o, t->name, s->cursor, body);
	case M_LANCE_DECLARE:
	case M_LANCE_DESCRIBE:
	case M_LANCE_VEND:
		buf_append_str(body, r->mode == M_LANCE_VEND ? "{\"vend_credentials\":true}" : "{}");
		return lance_table_url(o, t->name,
				       r->mode == M_LANCE_DECLARE ? "declare" : "describe");
	case M_LANCE_LIST:
		return lance_list_url(o, s->cursor);
	case M_RAW_CAS:
		snprintf(val, sizeof(val), "v%lld", s->seq);
		base64_encode(val, strlen(val), &v);
		buf_printf(body,
			   "{\"ops\":[{\"path\":\"%s\",\"name\":\"bench.cas\",\"value\":\"%s\","
			   "\"flags\":\"\",\"ifEtag\":\"%s\"}]}",
			   t->name, v.data, t->etag);
		buf_free(&v);
		return xasprintf("http://%s/.api/v1/setXattrs", o->filer);
	default:
		break;
	}
	buf_printf(body, "{\"identifier\":{\"namespace\":[\"%s\"],\"name\":\"%s\"},", o->ns, t->name);
	if (r->mode == M_COMMIT)
		buf_printf(body,
			   "\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":\"%s\"}],"
			   "\"updates\":[{\"action\":\"set-properties\","
			   "\"updates\":{\"bench\":\"v%lld\"}}]}",
			   t->uuid, s->seq);
	else
		buf_printf(body,
			   "\"requirements\":[{\"type\":\"assert-current-schema-id\","
			   "\"current-schema-id\":%" PRId64 "}],"
			   "\"updates\":[{\"action\":\"set-current-schema\",\"schema-id\":%d}]}",
			   t->schema, t->schema ? 0 : 1);
	return table_url(o, t->name);
}

/* Sends s's next request: the operation's, or the target's reload when s->refresh. */
static void send_request(struct slot *s)
{
	buf_reset(&s->body);
	char *url = s->refresh ? refresh_request(s->r, &s->r->t[s->target], &s->body)
			       : op_request(s, &s->body);
	prepare(s->h, &s->hdrs, url, s->body.len ? &s->body : NULL, &s->got, s->r->o);
	curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
	free(url);
	curl_multi_add_handle(s->r->multi, s->h);
}

/* Starts the next operation on s: false when the run has none left. */
static bool start_op(struct slot *s)
{
	struct run *r = s->r;
	if (r->deadline ? time_mono_ns() >= r->deadline : r->next >= r->o->n)
		return false;
	s->seq = r->next++;
	s->target = (int)(s->seq % r->o->tables);
	s->refresh = false;
	free(s->cursor);
	s->cursor = NULL;
	s->t0 = time_mono_ns();
	send_request(s);
	return true;
}

static void failed(struct slot *s, CURLcode res, long status)
{
	struct run *r = s->r;
	r->errors++;
	r->err_status[status > 0 && status < MAX_STATUS ? status : 0]++;
	if (r->reported++ < MAX_REPORTED)
		fprintf(stderr, "catalog_load: %s of %s: %s, HTTP %ld: %.200s\n",
			s->refresh ? "reload" : r->o->mode, r->t[s->target].name,
			res != CURLE_OK ? curl_easy_strerror(res) : "answered", status,
			s->got.len ? s->got.data : "");
}

/*
 * Takes in a page of a listing (s->got): counts its items and sets s->cursor
 * to where the next page starts, NULL after the last. false when the answer
 * is not understood.
 */
static bool next_page(struct slot *s)
{
	struct run *r = s->r;
	bool lance = r->mode == M_LANCE_LIST, more = false;
	jt *root = parse(&s->got), *items = jt_get(root, lance ? "tables" : "entries");
	const char *next = lance ? jt_get_str(root, "page_token") : jt_get_str(root, "lastName");
	/* the filer's lastName goes into the next request's JSON as it is */
	bool ok = jt_is(items, JT_ARR) &&
		  (lance || (jt_as_bool(jt_get(root, "more"), &more) &&
			     (!more || (next && !strpbrk(next, "\"\\")))));

	free(s->cursor);
	s->cursor = ok && (lance ? next != NULL : more) ? xstrdup(next) : NULL;
	if (ok) {
		r->items += jt_len(items);
		r->pages++;
	}
	jt_free(root);
	return ok;
}

/* Accounts for s's finished request; true when s goes on with the same operation. */
static bool finish(struct slot *s, CURLcode res)
{
	struct run *r = s->r;
	struct target *t = &r->t[s->target];
	long status = 0, nconn = 0;
	bool conflict_mode = r->mode == M_CONFLICT || r->mode == M_RAW_CAS;
	bool listing = r->mode == M_LANCE_LIST || r->mode == M_RAW_LIST;

	buf_append_byte(&s->got, 0);
	s->got.len--;
	if (res == CURLE_OK)
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(s->h, CURLINFO_NUM_CONNECTS, &nconn);
	r->connects += (uint64_t)nconn;
	if (s->refresh) {
		s->refresh = false;
		r->refreshes++;
		if (status == 200 && refreshed(r, t, &s->got))
			return true;
		failed(s, res, status);
		return false;
	}
	if (status == (r->mode == M_RAW_CAS ? 412 : 409) &&
	    (r->mode == M_COMMIT || conflict_mode)) {
		r->retries++;
		s->refresh = conflict_mode;
		return true;
	}
	if (status != 200 || (listing && !next_page(s))) {
		failed(s, res, status);
		return false;
	}
	if (listing && s->cursor)
		return true; /* the next page */
	if (r->mode == M_CONFLICT) {
		t->schema = t->schema ? 0 : 1;
	} else if (r->mode == M_RAW_CAS) {
		jt *root = parse(&s->got);
		const char *e = jt_as_str(jt_at(jt_get(root, "etags"), 0));
		if (e && strlen(e) == 16)
			memcpy(t->etag, e, 17);
		jt_free(root);
	}
	uint64_t lat = (time_mono_ns() - s->t0) / 1000;
	if (r->nlat == r->caplat) {
		r->caplat = r->caplat ? r->caplat * 2 : 4096;
		r->lat_us = xrealloc(r->lat_us, r->caplat * sizeof(*r->lat_us));
	}
	r->lat_us[r->nlat++] = lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
	r->ops++;
	return false;
}

/* Runs the operations with o->c in flight until start_op has none; returns the seconds. */
static double drive(struct run *r, struct slot *slots)
{
	int active = 0, running;
	uint64_t t0 = time_mono_ns();

	for (int i = 0; i < r->o->c && start_op(&slots[i]); i++)
		active++;
	while (active > 0) {
		CURLMsg *m;
		int queued;
		curl_multi_perform(r->multi, &running);
		while ((m = curl_multi_info_read(r->multi, &queued))) {
			struct slot *s;
			CURLcode res = m->data.result;
			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			curl_multi_remove_handle(r->multi, s->h);
			if (finish(s, res))
				send_request(s);
			else if (!start_op(s))
				active--;
		}
		if (active > 0)
			curl_multi_poll(r->multi, NULL, 0, 100, NULL);
	}
	return (time_mono_ns() - t0) / 1e9;
}

/* Loads what the writers start from (uuids, schemas, etags) with one request at a time. */
static bool setup(struct run *r)
{
	struct slot s = {.r = r, .h = curl_easy_init()};
	bool ok = s.h != NULL;
	for (int i = 0; ok && i < r->o->tables; i++) {
		long status = 0;
		buf_reset(&s.body);
		char *url = refresh_request(r, &r->t[i], &s.body);
		prepare(s.h, &s.hdrs, url, s.body.len ? &s.body : NULL, &s.got, r->o);
		free(url);
		if (curl_easy_perform(s.h) == CURLE_OK)
			curl_easy_getinfo(s.h, CURLINFO_RESPONSE_CODE, &status);
		ok = status == 200 && refreshed(r, &r->t[i], &s.got);
		if (!ok)
			fprintf(stderr, "catalog_load: cannot load %s: HTTP %ld\n", r->t[i].name,
				status);
	}
	curl_easy_cleanup(s.h);
	curl_slist_free_all(s.hdrs);
	buf_free(&s.body);
	buf_free(&s.got);
	return ok;
}

static void report(struct run *r, double secs, double cpu)
{
	const struct opts *o = r->o;
	qsort(r->lat_us, r->nlat, sizeof(*r->lat_us), cmp_u32);
	printf("%s c=%d tables=%d ops=%" PRIu64 " secs=%.3f ops_s=%.1f p50_ms=%.2f p99_ms=%.2f "
	       "max_ms=%.2f retries=%" PRIu64 " retry_rate=%.3f reloads=%" PRIu64
	       " errors=%" PRIu64 " cpu_s=%.2f connects=%" PRIu64 "\n",
	       *o->label ? o->label : o->mode, o->c, o->tables, r->ops, secs, r->ops / secs,
	       pct_ms(r->lat_us, r->nlat, 50), pct_ms(r->lat_us, r->nlat, 99),
	       pct_ms(r->lat_us, r->nlat, 100), r->retries,
	       r->ops ? (double)r->retries / (double)r->ops : 0, r->refreshes, r->errors, cpu,
	       r->connects);
	if (r->mode == M_LANCE_LIST || r->mode == M_RAW_LIST)
		printf("%s items=%" PRIu64 " items_s=%.1f pages=%" PRIu64 " pages_s=%.1f limit=%d\n",
		       *o->label ? o->label : o->mode, r->items, r->items / secs, r->pages,
		       r->pages / secs, o->limit);
	if (r->errors) {
		printf("%s errors by status:", o->mode);
		if (r->err_status[0])
			printf(" no-answer=%" PRIu64, r->err_status[0]);
		for (int i = 1; i < MAX_STATUS; i++)
			if (r->err_status[i])
				printf(" %d=%" PRIu64, i, r->err_status[i]);
		printf("\n");
	}
}

static const char summary[] =
	"Drives the Iceberg REST catalog (load, commit, conflict), the Lance Namespace\n"
	"REST catalog (lance-declare, lance-describe, lance-vend, lance-list) or the filer\n"
	"operations they do per request (raw-get, raw-lookup, raw-cas, raw-list) with C\n"
	"requests in flight on one libcurl multi handle, for DURATION seconds (or N\n"
	"operations), and prints operations/s, latency and retries. Exit 1 if a request\n"
	"failed.";

int main(int argc, char **argv)
{
	struct opts o = {"127.0.0.1:8181", "127.0.0.1:8888", "lake", "bench", "t", "", "load",
			 "", "", 16, 1, 1000, 1000, 10, 60};
	const struct flag flags[] = {
		{"endpoint", FLAG_STRING, &o.endpoint, "the catalog, host:port"},
		{"filer", FLAG_STRING, &o.filer, "the filer, host:port (raw modes)"},
		{"prefix", FLAG_STRING, &o.prefix, "the catalog prefix (the table bucket)"},
		{"ns", FLAG_STRING, &o.ns, "the namespace (one level)"},
		{"table", FLAG_STRING, &o.table, "the table, or the tables' name prefix"},
		{"tables", FLAG_INT, &o.tables, "tables (entries) TABLE0.. used round-robin"},
		{"path", FLAG_STRING, &o.path, "raw modes: the filer entry (prefix)"},
		{"mode", FLAG_STRING, &o.mode,
		 "load, commit, conflict, lance-declare, lance-describe, lance-vend, lance-list, "
		 "raw-get, raw-lookup, raw-cas, raw-list"},
		{"label", FLAG_STRING, &o.label, "the name the figures are printed under"},
		{"bearer", FLAG_STRING, &o.bearer, "a bearer token sent with each request"},
		{"limit", FLAG_INT, &o.limit, "listing modes: items asked a page"},
		{"c", FLAG_INT, &o.c, "requests in flight"},
		{"n", FLAG_I64, &o.n, "operations (when -duration=0)"},
		{"duration", FLAG_DOUBLE, &o.duration, "seconds (0: -n operations)"},
		{"timeout", FLAG_DOUBLE, &o.timeout, "seconds before a request counts as failed"},
	};
	struct run r = {.o = &o};
	struct slot *slots;
	int npos, rc, i;
	double secs, cpu0;

	rc = flags_parse(flags, ARRAY_LEN(flags), argc - 1, argv + 1, "catalog_load", summary,
			 &npos);
	if (rc)
		return rc > 0 ? 0 : 2;
	for (i = 0; i < NMODES && strcmp(o.mode, mode_names[i]); i++)
		;
	r.mode = (enum mode)i;
	bool raw = r.mode >= M_RAW_GET;
	if (i == NMODES || npos < argc - 1 || o.c < 1 || o.c > 4096 || o.tables < 1 ||
	    o.tables > 100000 || o.n < 1 || o.duration < 0 || o.timeout <= 0 || o.limit < 1 ||
	    (raw && *o.path != '/') || strpbrk(raw ? o.path : o.table, "\"\\") ||
	    strpbrk(o.ns, "\"/") || strpbrk(o.prefix, "\"/") || strpbrk(o.bearer, "\r\n")) {
		fprintf(stderr, "catalog_load: bad flags (see catalog_load -h)\n");
		return 2;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "catalog_load: curl_global_init failed\n");
		return 2;
	}
	r.t = xcalloc((size_t)o.tables, sizeof(*r.t));
	for (i = 0; i < o.tables; i++)
		r.t[i].name = o.tables > 1 ? xasprintf("%s%d", raw ? o.path : o.table, i)
					   : xstrdup(raw ? o.path : o.table);
	if ((r.mode == M_COMMIT || r.mode == M_CONFLICT || r.mode == M_RAW_CAS) && !setup(&r))
		return 1;
	r.multi = curl_multi_init();
	slots = xcalloc((size_t)o.c, sizeof(*slots));
	for (i = 0; i < o.c; i++) {
		slots[i].r = &r;
		slots[i].h = curl_easy_init();
		if (!slots[i].h || !r.multi) {
			fprintf(stderr, "catalog_load: could not set up libcurl\n");
			return 2;
		}
	}
	curl_multi_setopt(r.multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o.c);
	if (o.duration > 0)
		r.deadline = time_mono_ns() + (uint64_t)(o.duration * 1e9);
	cpu0 = cpu_seconds();
	secs = drive(&r, slots);
	report(&r, secs, cpu_seconds() - cpu0);
	fflush(stdout);

	rc = r.errors > 0;
	for (i = 0; i < o.c; i++) {
		curl_easy_cleanup(slots[i].h);
		curl_slist_free_all(slots[i].hdrs);
		free(slots[i].cursor);
		buf_free(&slots[i].body);
		buf_free(&slots[i].got);
	}
	for (i = 0; i < o.tables; i++) {
		free(r.t[i].name);
		free(r.t[i].uuid);
	}
	curl_multi_cleanup(r.multi);
	curl_global_cleanup();
	free(slots);
	free(r.t);
	free(r.lat_us);
	return rc;
}
