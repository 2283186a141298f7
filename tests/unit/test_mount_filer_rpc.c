/*
 * mount/filer_rpc against a real filer (WEEDFS_TEST_FILER=host:port, set by
 * tests/integration/test_mount_data.py; the filer part is skipped without it),
 * and its retry rules against a scripted local server (503s, dropped
 * connections, a closed port), which always run.
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "http_client.h"
#include "log.h"
#include "client/filer_meta.h"
#include "client/filer_rpc.h"
#include "tap.h"
#include "util.h"

/* An error compared by name: a wfs_err only (an errno does not compile into it silently). */
#define is_err(got, want, name) is_str(wfs_err_name(got), wfs_err_name(want), name)

static wfs_err call(filer_rpc *r, const char *op, const char *json, buf *out)
{
	buf_reset(out);
	return filer_rpc_call(r, op, json, strlen(json), out);
}

static bool has(const buf *b, const char *s)
{
	return b->data && b->len && memmem(b->data, b->len, s, strlen(s)) != NULL;
}

static void test_real_filer(const char *addr)
{
	filer_rpc *r = filer_rpc_new(addr, 5000, 5, 0);
	buf out = BUF_INIT;
	char base[64], path[160], body[512];
	wfs_err e;

	snprintf(base, sizeof(base), "/rpc%u", (unsigned)(time_now_ns() % 1000000000u));
	is_str(filer_rpc_addr(r), addr, "addr kept");
	e = call(r, "lookup", "{\"path\":\"/\"}", &out);
	is_int(e, 0, "lookup / succeeds");
	ok(has(&out, "\"fullPath\""), "lookup answer is an entry");
	buf_reset(&out);
	is_int(filer_rpc_call_as(r, "lookup", "{\"path\":\"/\"}", 12, FILER_ENTRY_MEDIA_TYPE, -1,
				 &out),
	       0, "lookup / in the stored encoding");
	ok(out.len && (uint8_t)out.data[0] == FILER_ENTRY_VERSION, "answers the version first");
	snprintf(body, sizeof(body), "{\"path\":\"%s/none\"}", base);
	is_err(call(r, "lookup", body, &out), WFS_ENOENT, "lookup of a missing path is ENOENT");

	snprintf(body, sizeof(body), "{\"entry\":{\"path\":\"%s\",\"mode\":%u}}", base, 040755u);
	is_int(call(r, "create", body, &out), 0, "mkdir");
	snprintf(body, sizeof(body),
		 "{\"entry\":{\"path\":\"%s/f\",\"mode\":%u},\"exclusive\":true}", base, 0100644u);
	is_int(call(r, "create", body, &out), 0, "create a file");
	is_err(call(r, "create", body, &out), WFS_EEXIST, "exclusive create again is EEXIST");
	snprintf(body, sizeof(body), "{\"entry\":{\"path\":\"%s/f/x\",\"mode\":%u}}", base,
		 0100644u);
	is_err(call(r, "create", body, &out), WFS_ENOTDIR, "create under a file is ENOTDIR");
	snprintf(body, sizeof(body), "{\"path\":\"%s\"}", base);
	is_err(call(r, "delete", body, &out), WFS_ENOTEMPTY,
	       "delete of a non-empty dir is ENOTEMPTY");
	snprintf(body, sizeof(body),
		 "{\"path\":\"%s/f\",\"set\":{\"size\":5},"
		 "\"ifEtag\":\"0000000000000000\"}",
		 base);
	is_err(call(r, "update", body, &out), WFS_EPRECOND,
	       "update with a stale etag is WFS_EPRECOND, not a stale handle");
	snprintf(body, sizeof(body), "{\"path\":\"%s/f\",\"set\":{\"size\":5}}", base);
	is_int(call(r, "update", body, &out), 0, "update size");
	ok(has(&out, "\"size\":5"), "update answers the new entry");
	snprintf(body, sizeof(body), "{\"path\":\"%s/f\",\"name\":\"user.none\"}", base);
	is_err(call(r, "removeXattr", body, &out), WFS_ENODATA, "missing xattr is ENODATA");
	snprintf(body, sizeof(body), "{\"entry\":{\"path\":\"%s/d\",\"mode\":%u}}", base, 040755u);
	is_int(call(r, "create", body, &out), 0, "mkdir sub");
	snprintf(body, sizeof(body), "{\"from\":\"%s/f\",\"to\":\"%s/d\"}", base, base);
	is_err(call(r, "rename", body, &out), WFS_EISDIR, "file over a directory is EISDIR");
	snprintf(body, sizeof(body), "{\"from\":\"%s/d\",\"to\":\"%s/f\"}", base, base);
	is_err(call(r, "rename", body, &out), WFS_ENOTDIR, "directory over a file is ENOTDIR");
	snprintf(body, sizeof(body), "{\"target\":\"%s/d\",\"newPath\":\"%s/l\"}", base, base);
	is_err(call(r, "link", body, &out), WFS_EPERM, "link to a directory is EPERM");
	is_err(call(r, "noSuchOp", "{}", &out), WFS_ENOSYS, "unknown op is ENOSYS");
	is_err(call(r, "lookup", "{\"path\":\"a/b\"}", &out), WFS_EINVAL,
	       "relative path is EINVAL");
	is_err(call(r, "lookup", "{\"path\":", &out), WFS_EINVAL, "bad JSON is EINVAL");
	is_int(call(r, "assign", "{\"count\":1}", &out), 0, "assign");
	ok(has(&out, "\"fid\""), "assign gives a fid");
	snprintf(path, sizeof(path), "{\"path\":\"%s\",\"recursive\":true}", base);
	is_int(call(r, "delete", path, &out), 0, "recursive delete");
	snprintf(body, sizeof(body), "{\"path\":\"%s\"}", base);
	is_err(call(r, "lookup", body, &out), WFS_ENOENT, "gone after delete");
	buf_free(&out);
	filer_rpc_free(r);
}

/* client/filer_meta's create options (xattrs, parents, ifEtag, consume) against the filer. */
/* A lookup answered in JSON (asked without Accept) decodes to e, the stored encoding's
   (filer_meta's lookups ask for that). */
static void lookup_forms_agree(const char *addr, const char *path, const struct filer_entry *e,
			       const char *etag)
{
	const char *const hdr[] = {"Content-Type: application/json", NULL};
	char *url = xasprintf("http://%s/.api/v1/lookup", addr);
	struct filer_entry *j = NULL;
	struct http_result res;
	buf req = BUF_INIT, a = BUF_INIT, b = BUF_INIT;
	char etag_json[17] = "";

	http_result_init(&res);
	filer_meta_lookup_body(&req, path);
	is_int(http_request("POST", url, hdr, req.data, req.len, 5000, &res), WFS_OK,
	       "meta: lookup without Accept");
	ok(res.status == 200 && res.body.len && res.body.data[0] == '{', "meta: answers JSON");
	is_int(filer_meta_entry_answer(res.body.data, res.body.len, path, &j, etag_json), 0,
	       "meta: the JSON answer decodes");
	is_str(etag_json, etag, "meta: with the etag of the stored encoding's");
	ok(e && j && !filer_entry_encode(e, &a) && !filer_entry_encode(j, &b) && a.len == b.len &&
		   !memcmp(a.data, b.data, a.len),
	   "meta: to the same entry");
	ok(j && !strcmp(j->dir, e->dir) && !strcmp(j->name, e->name), "meta: at the same path");
	filer_entry_free(j);
	http_result_free(&res);
	buf_free(&req);
	buf_free(&a);
	buf_free(&b);
	free(url);
}

static void test_real_filer_meta(const char *addr)
{
	filer_rpc *r = filer_rpc_new(addr, 5000, 5, 0);
	struct filer_entry *e = NULL;
	char base[64], path[160], p1[160], p2[160], dir[160], etag[17] = "", etag2[17] = "";
	static const uint8_t bin[] = {0, 1, 0xff};
	const struct filer_xattr xs[] = {
		{.name = "user.a", .value = (uint8_t *)bin, .value_len = sizeof(bin)},
		{.name = "user.b", .value = NULL, .value_len = 0}};
	const struct filer_xattr *x;
	const char *consume[2];

	snprintf(base, sizeof(base), "/rpcm%u", (unsigned)(time_now_ns() % 1000000000u));
	snprintf(path, sizeof(path), "%s/a/b/f", base);
	{
		struct filer_meta_new n = {.mode = 0100644,
					   .mime = "text/x-test",
					   .content = (const uint8_t *)"hello",
					   .content_len = 5,
					   .has_content = true,
					   .xattrs = xs,
					   .n_xattrs = 2};
		is_err(filer_meta_create(r, path, &n, NULL), WFS_ENOENT,
		       "meta: create without parents is ENOENT");
		n.parents = true;
		is_int(filer_meta_create_etag(r, path, &n, &e, etag), 0,
		       "meta: create with parents, xattrs, mime and content");
	}
	ok(e && e->attr.mime && !strcmp(e->attr.mime, "text/x-test"), "meta: mime kept");
	ok(e && e->has_content && e->content_len == 5 && !memcmp(e->content, "hello", 5),
	   "meta: inline content kept");
	x = e ? filer_entry_xattr_get(e, "user.a") : NULL;
	ok(x && x->value_len == sizeof(bin) && !memcmp(x->value, bin, sizeof(bin)),
	   "meta: binary xattr value round-trips");
	ok(e && e->n_xattrs == 2 && filer_entry_xattr_get(e, "user.b"), "meta: empty xattr kept");
	is_int((int)strlen(etag), 16, "meta: create returns the etag");
	filer_entry_free(e);
	e = NULL;
	is_int(filer_meta_lookup_etag(r, path, &e, etag2), 0, "meta: lookup_etag");
	is_str(etag2, etag, "meta: lookup's etag is create's");
	lookup_forms_agree(addr, path, e, etag2);
	filer_entry_free(e);
	e = NULL;
	snprintf(dir, sizeof(dir), "%s/a", base);
	is_int(filer_meta_lookup(r, dir, &e), 0, "meta: parents were made");
	ok(e && S_ISDIR(e->attr.mode), "meta: as directories");
	filer_entry_free(e);
	e = NULL;
	{
		struct filer_meta_new n = {.mode = 0100644, .if_etag = "0000000000000000"};
		is_err(filer_meta_create(r, path, &n, NULL), WFS_EPRECOND,
		       "meta: stale if_etag is WFS_EPRECOND");
		n.if_etag = etag;
		is_int(filer_meta_create_etag(r, path, &n, &e, etag2), 0, "meta: matching if_etag");
		ok(e && e->n_xattrs == 0 && !e->has_content, "meta: the replaced entry is new");
		ok(strcmp(etag, etag2) != 0, "meta: and has another etag");
		filer_entry_free(e);
		e = NULL;
	}
	/* parts with names that are not UTF-8 travel as consumeB64 */
	snprintf(p1, sizeof(p1),
		 "%s/a/p\xff"
		 "1",
		 base);
	snprintf(p2, sizeof(p2), "%s/a/p2", base);
	{
		struct filer_meta_new part = {.mode = 0100644};
		is_int(filer_meta_create(r, p1, &part, NULL), 0, "meta: part 1 (bytes name)");
		is_int(filer_meta_create(r, p2, &part, NULL), 0, "meta: part 2");
	}
	consume[0] = p1;
	consume[1] = p2;
	{
		char obj[160];
		const char *missing[2];
		struct filer_meta_new n = {.mode = 0100644, .consume = missing, .n_consume = 2};
		snprintf(obj, sizeof(obj), "%s/obj", base);
		snprintf(dir, sizeof(dir), "%s/a/none", base);
		missing[0] = p1;
		missing[1] = dir;
		is_err(filer_meta_create(r, obj, &n, NULL), WFS_ENOENT,
		       "meta: missing part is ENOENT");
		is_int(filer_meta_lookup(r, p1, NULL), 0, "meta: and the parts stay");
		n.consume = consume;
		is_int(filer_meta_create(r, obj, &n, NULL), 0, "meta: create consuming the parts");
		is_err(filer_meta_lookup(r, p1, NULL), WFS_ENOENT, "meta: part 1 consumed");
		is_err(filer_meta_lookup(r, p2, NULL), WFS_ENOENT, "meta: part 2 consumed");
	}
	snprintf(path, sizeof(path), "{\"path\":\"%s\",\"recursive\":true}", base);
	{
		buf out = BUF_INIT;
		is_int(call(r, "delete", path, &out), 0, "meta: clean up");
		buf_free(&out);
	}
	filer_rpc_free(r);
}

/* A scripted HTTP server: answers request i with script[i] (last one repeats). */
struct fake {
	int lfd, port;
	/* "503", "200", "drop", or "<status> <code>": the filer's error answer with that code
	   ("-": a body without one) */
	const char *const *script;
	size_t nscript;
	int requests; /* protected by mu */
	pthread_mutex_t mu;
	pthread_t th;
	atomic_bool stop; /* set by fake_stop, read by the server thread */
};

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	for (;;) {
		char req[8192];
		size_t got = 0;
		int c = accept(f->lfd, NULL, NULL);
		if (c < 0 || atomic_load(&f->stop)) {
			if (c >= 0)
				close(c);
			return NULL;
		}
		/* one request per connection: read the head and the body */
		for (;;) {
			ssize_t k = read(c, req + got, sizeof(req) - 1 - got);
			char *he, *cl;
			if (k <= 0)
				break;
			got += (size_t)k;
			req[got] = '\0';
			he = strstr(req, "\r\n\r\n");
			cl = strcasestr(req, "content-length:");
			if (he &&
			    (!cl || got >= (size_t)(he + 4 - req) + strtoul(cl + 15, NULL, 10)))
				break;
		}
		if (!got) { /* a connect probe, not a request */
			close(c);
			continue;
		}
		pthread_mutex_lock(&f->mu);
		const char *what = f->script[MIN((size_t)f->requests, f->nscript - 1)];
		f->requests++;
		pthread_mutex_unlock(&f->mu);
		if (!strcmp(what, "503")) {
			const char *b = "{\"error\":\"store down\",\"code\":\"EAGAIN\"}";
			dprintf(c,
				"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %zu\r\n"
				"Connection: close\r\n\r\n%s",
				strlen(b), b);
		} else if (!strcmp(what, "200")) {
			dprintf(c,
				"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\n"
				"{\"ok\":1}");
		} else if (strchr(what, ' ')) {
			const char *code = strchr(what, ' ') + 1;
			char b[128];
			if (!strcmp(code, "-"))
				snprintf(b, sizeof(b), "{\"error\":\"scripted\"}");
			else
				snprintf(b, sizeof(b),
					 "{\"error\":\"scripted\",\"code\":\"%s\"}", code);
			dprintf(c,
				"HTTP/1.1 %.3s Scripted\r\nContent-Length: %zu\r\n"
				"Connection: close\r\n\r\n%s",
				what, strlen(b), b);
		} else {
			/* drop: reset without an answer */
			struct linger lg = {1, 0};
			setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		close(c);
	}
}

static void fake_start(struct fake *f, const char *const *script, size_t n)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	memset(f, 0, sizeof(*f));
	f->script = script;
	f->nscript = n;
	pthread_mutex_init(&f->mu, NULL);
	f->lfd = socket(AF_INET, SOCK_STREAM, 0);
	bind(f->lfd, (struct sockaddr *)&a, sizeof(a));
	listen(f->lfd, 16);
	getsockname(f->lfd, (struct sockaddr *)&a, &al);
	f->port = ntohs(a.sin_port);
	pthread_create(&f->th, NULL, fake_main, f);
}

static void fake_stop(struct fake *f)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				.sin_port = htons((uint16_t)f->port)};
	int c = socket(AF_INET, SOCK_STREAM, 0);
	atomic_store(&f->stop, true);
	connect(c, (struct sockaddr *)&a, sizeof(a)); /* wakes accept */
	close(c);
	pthread_join(f->th, NULL);
	close(f->lfd);
	pthread_mutex_destroy(&f->mu);
}

static int fake_requests(struct fake *f)
{
	int n;
	pthread_mutex_lock(&f->mu);
	n = f->requests;
	pthread_mutex_unlock(&f->mu);
	return n;
}

static void test_retries(void)
{
	static const char *const s503[] = {"503", "503", "200"};
	static const char *const sdrop[] = {"drop", "drop", "200"};
	static const char *const sdown[] = {"503"};
	struct fake f;
	char addr[64];
	buf out = BUF_INIT;
	filer_rpc *r;
	uint64_t t0;

	fake_start(&f, s503, 3);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f.port);
	r = filer_rpc_new(addr, 2000, 5, 0);
	is_int(call(r, "create", "{}", &out), 0, "create retried through two 503s");
	is_int(fake_requests(&f), 3, "three requests for two 503s");
	ok(has(&out, "{\"ok\":1}"), "the answer after the retries is returned");
	filer_rpc_free(r);
	fake_stop(&f);

	fake_start(&f, sdrop, 3);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f.port);
	r = filer_rpc_new(addr, 2000, 5, 0);
	is_err(call(r, "create", "{}", &out), WFS_EIO,
	       "create on a dropped connection is WFS_EIO (it may have been applied)");
	is_int(fake_requests(&f), 1, "create is not repeated once it may have been sent");
	is_int(call(r, "lookup", "{}", &out), 0, "lookup retried after a dropped connection");
	is_int(fake_requests(&f), 3, "lookup retried once");
	is_int(call(r, "update", "{\"path\":\"/a\",\"ifEtag\":\"x\"}", &out), 0,
	       "conditional update is repeatable");
	filer_rpc_free(r);
	fake_stop(&f);

	/* raw content after the JSON: the JSON alone says whether a repeat is safe */
	fake_start(&f, sdrop, 3);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f.port);
	r = filer_rpc_new(addr, 2000, 5, 0);
	{
		static const char body[] = "{\"path\":\"/a\",\"ifEtag\":\"x\"}{raw";
		buf_reset(&out);
		is_int(filer_rpc_call_as(r, "update", body, sizeof(body) - 1, "application/json", 4,
					 &out),
		       0, "conditional update with raw content is repeated");
		is_int(fake_requests(&f), 3, "through two dropped connections");
	}
	filer_rpc_free(r);
	fake_stop(&f);

	fake_start(&f, sdown, 1);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f.port);
	r = filer_rpc_new(addr, 2000, 1, 0);
	t0 = time_mono_ns();
	is_err(call(r, "lookup", "{}", &out), WFS_EUNAVAIL, "503 past the budget is WFS_EUNAVAIL");
	ok(time_mono_ns() - t0 < 3000000000ull, "the budget bounds the retries");
	ok(fake_requests(&f) >= 3 && fake_requests(&f) <= 8, "back-off: %d requests in 1 s",
	   fake_requests(&f));
	filer_rpc_free(r);
	fake_stop(&f);

	/* nothing listens: connection refused is retried for every op, then WFS_EUNAVAIL */
	{
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t al = sizeof(a);
		bind(s, (struct sockaddr *)&a, sizeof(a));
		getsockname(s, (struct sockaddr *)&a, &al);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(a.sin_port));
		close(s); /* the port is now closed */
	}
	r = filer_rpc_new(addr, 2000, 1, 0);
	t0 = time_mono_ns();
	is_err(call(r, "rename", "{}", &out), WFS_EUNAVAIL,
	       "refused filer: WFS_EUNAVAIL after the budget");
	ok(time_mono_ns() - t0 >= 700000000ull, "refused create waited for the budget");
	ok(time_mono_ns() - t0 < 4000000000ull, "and no longer");
	filer_rpc_free(r);
	buf_free(&out);
}

/* Every wire code the filer sends (wfs_err_name, at wfs_err_http_status) maps back to its error. */
static void test_answer_codes(void)
{
	static const struct {
		int status;
		const char *body;
		wfs_err want;
		const char *what;
	} special[] = {
		{409, "{\"error\":\"held\",\"code\":\"EAGAIN\",\"conflict\":{}}", WFS_EBUSY,
		 "a lock conflict (409 EAGAIN) is WFS_EBUSY"},
		{503, "{\"error\":\"down\",\"code\":\"EAGAIN\"}", WFS_EUNAVAIL,
		 "503 EAGAIN is WFS_EUNAVAIL"},
		{409, "{\"error\":\"held\",\"code\":\"EBUSY\"}", WFS_EBUSY,
		 "409 EBUSY is WFS_EBUSY"},
		{500, "{\"error\":\"x\",\"code\":\"ENOSUCHCODE\"}", WFS_EIO,
		 "an unknown code is WFS_EIO"},
		{500, "{\"error\":\"x\",\"code\":\"OK\"}", WFS_EIO,
		 "code OK in an error is WFS_EIO"},
		{404, "", WFS_ENOSYS, "404 without a code: a filer without the op"},
		{412, "", WFS_EPRECOND, "412 without a code is WFS_EPRECOND"},
		{507, "{\"error\":\"full\"}", WFS_ENOSPC, "507 without a code is WFS_ENOSPC"},
		{400, "not json", WFS_EINVAL, "400 with a body that is not JSON is WFS_EINVAL"},
		{502, "", WFS_EUNAVAIL, "502 without a code is WFS_EUNAVAIL"},
	};
	char body[128];

	for (int e = WFS_OK + 1; e < WFS_ERR_COUNT; e++) {
		char what[96];
		int n = snprintf(body, sizeof(body), "{\"error\":\"m\",\"code\":\"%s\"}",
				 wfs_err_name((wfs_err)e));
		snprintf(what, sizeof(what), "code %s at %d maps back", wfs_err_name((wfs_err)e),
			 wfs_err_http_status((wfs_err)e));
		is_err(filer_rpc_answer_err(wfs_err_http_status((wfs_err)e), body, (size_t)n),
		       (wfs_err)e, what);
	}
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		is_err(filer_rpc_answer_err(special[i].status, special[i].body,
					    strlen(special[i].body)),
		       special[i].want, special[i].what);
}

/*
 * The filer's refusals reach the callers as the filer's codes: a failed precondition is
 * WFS_EPRECOND (never a stale-handle errno), a full cluster WFS_ENOSPC, a quota WFS_EQUOTA,
 * and none of them is retried.
 */
static void test_scripted_codes(void)
{
	static const struct {
		const char *script;
		wfs_err want;
		const char *what;
	} cases[] = {
		{"412 EPRECOND", WFS_EPRECOND, "a filer 412 is WFS_EPRECOND"},
		{"507 ENOSPC", WFS_ENOSPC, "a filer 507 ENOSPC is WFS_ENOSPC"},
		{"507 EDQUOT", WFS_EQUOTA, "a filer 507 EDQUOT is WFS_EQUOTA"},
		{"409 EAGAIN", WFS_EBUSY, "a lock conflict is WFS_EBUSY"},
		{"503 ENOLCK", WFS_ENOLCK, "a 503 ENOLCK past the budget is WFS_ENOLCK"},
		{"507 -", WFS_ENOSPC, "a 507 without a code is WFS_ENOSPC"},
	};
	struct filer_meta_new nw = {.mode = 0100644, .if_etag = "0000000000000000"};
	struct fake f;
	char addr[64];
	buf out = BUF_INIT;
	filer_rpc *r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool busy = !strncmp(cases[i].script, "503", 3);
		fake_start(&f, &cases[i].script, 1);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", f.port);
		r = filer_rpc_new(addr, 2000, 1, 0);
		is_err(call(r, "create", "{}", &out), cases[i].want, cases[i].what);
		ok(busy ? fake_requests(&f) > 1 : fake_requests(&f) == 1,
		   "%s: %s", cases[i].script, busy ? "retried (503)" : "not retried");
		if (!strcmp(cases[i].script, "412 EPRECOND"))
			is_err(filer_meta_create(r, "/a", &nw, NULL), WFS_EPRECOND,
			       "filer_meta_create with a stale if_etag: WFS_EPRECOND");
		filer_rpc_free(r);
		fake_stop(&f);
	}
	buf_free(&out);
}

int main(void)
{
	const char *filer = getenv("WEEDFS_TEST_FILER");
	log_set_level(LOG_LEVEL_ERROR);
	http_client_global_init();
	test_answer_codes();
	test_retries();
	test_scripted_codes();
	if (filer && *filer) {
		test_real_filer(filer);
		test_real_filer_meta(filer);
	} else
		printf("# WEEDFS_TEST_FILER unset: real-filer part skipped\n");
	return done_testing();
}
