/*
 * S3 gateway load generator: C concurrent SigV4-signed requests on one
 * libcurl multi handle. Prints a line of figures per run (and per request
 * kind in mixed mode); exits 1 if a request failed unexpectedly, 2 on bad
 * flags. A benchmark, not a pass/fail test.
 *
 *   tests/bench/s3_load -endpoint=127.0.0.1:8333 -bucket=b -ak=AK -sk=SK \
 *           -mode=put -c=16 -n=20000 -size=4096
 *
 * Modes, on the keys PREFIX0 .. PREFIX<n-1>:
 *   put     each key once, SIZE bytes (one random buffer, made at start)
 *   get     each key once: 200 and exactly SIZE body bytes
 *   head    each key once: 200 and Content-Length SIZE
 *   delete  each key once: 204 (or 200)
 *   mixed   for DURATION seconds, random keys: 45% GET, 30% HEAD, 15% PUT,
 *           10% DELETE. A GET or HEAD answered 404 counts as not_found, not
 *           as an error: a DELETE may have removed the key meanwhile.
 *
 * Threads: one. The gateway shares the machine's cores with this client,
 * and a request costs the client little (one signature: a handful of HMACs
 * over a few hundred bytes; bodies are copied from one buffer or counted
 * and dropped), so one event loop keeps C requests in flight and leaves the
 * other cores to the servers. The client's CPU time is printed (cpu_s) so a
 * reader can see whether the client was the bottleneck.
 *
 * Requests are signed as clients over TLS sign them: Authorization header,
 * x-amz-content-sha256: UNSIGNED-PAYLOAD, signed headers host,
 * x-amz-content-sha256 and x-amz-date. "Expect: 100-continue" is turned off
 * (libcurl sends it for large bodies): a PUT sends its body at once.
 * Latency is per request, from handing it to libcurl to its last byte, on
 * the monotonic clock; percentiles are nearest-rank over the answered
 * requests (expected answers and not_found; failures are left out).
 */
#include "config.h"
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "buf.h"
#include "flags.h"
#include "load_stats.h"
#include "s3/sigv4.h"
#include "util.h"

#define SIGNED_HEADERS "host;x-amz-content-sha256;x-amz-date"
#define PAYLOAD        "UNSIGNED-PAYLOAD"
#define BIG_BODY       (1 << 20) /* bodies from this size get larger libcurl buffers */
#define MAX_STATUS     600
#define MAX_REPORTED   10 /* failures described on stderr */

enum op { OP_PUT, OP_GET, OP_HEAD, OP_DELETE, NOPS };
static const char *const op_names[NOPS] = {"put", "get", "head", "delete"};
static const char *const op_methods[NOPS] = {"PUT", "GET", "HEAD", "DELETE"};

struct opts {
	const char *endpoint, *bucket, *ak, *sk, *region, *prefix, *mode;
	const char *cacert; /* set: https, the gateway's certificate checked against this CA */
	int c;
	long long n, size, seed;
	double duration, timeout;
};

/* The figures of one kind of request. */
struct stats {
	uint64_t ops;       /* answered as expected */
	uint64_t not_found; /* mixed: GET/HEAD answered 404 */
	uint64_t bytes;     /* body bytes sent or received by the expected answers */
	uint64_t errors;    /* anything else */
	uint32_t *lat_us;   /* ops and not_found answers */
	size_t nlat, caplat;
};

struct run {
	const struct opts *o;
	bool mixed;
	enum op op;        /* the single mode's request */
	const char *data;  /* every PUT's body: o->size bytes */
	long long next;    /* the single mode's next key */
	uint64_t deadline; /* mixed: no new request from this time (monotonic ns) */
	uint64_t rng;
	CURLM *multi;
	struct stats st[NOPS];
	uint64_t err_status[MAX_STATUS]; /* unexpected answers by status; [0]: no answer */
	uint64_t err_length;             /* 200 with a body or Content-Length not SIZE */
	uint64_t connects;               /* connections opened (each keep-alive one once) */
	int reported;                    /* failures described on stderr */
	int64_t date_sec;
	char amz_date[17];
};

/* One request in flight. */
struct slot {
	struct run *r;
	CURL *h;
	struct curl_slist *hdrs;
	enum op op;
	uint64_t t0;
	size_t sent; /* PUT: body bytes handed to libcurl */
	uint64_t got;
	char path[512];
	char body[256]; /* the start of the answer's body, for the failure message */
	size_t body_len;
};

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static size_t on_read(char *dst, size_t size, size_t nmemb, void *arg)
{
	struct slot *s = arg;
	size_t left = (size_t)s->r->o->size - s->sent, n = MIN(size * nmemb, left);
	memcpy(dst, s->r->data + s->sent, n);
	s->sent += n;
	return n;
}

/* libcurl rewinds when it resends a request on a fresh connection (the server closed the
 * kept-alive one it had picked). */
static int on_seek(void *arg, curl_off_t offset, int origin)
{
	struct slot *s = arg;
	if (origin != SEEK_SET || offset < 0 || offset > s->r->o->size)
		return CURL_SEEKFUNC_FAIL;
	s->sent = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct slot *s = arg;
	size_t n = size * nmemb, keep = MIN(n, sizeof(s->body) - 1 - s->body_len);
	memcpy(s->body + s->body_len, p, keep);
	s->body_len += keep;
	s->got += n;
	return n;
}

/* Appends a header line to s->hdrs ("Name:" alone drops a header libcurl would send). */
static void add_line(struct slot *s, const char *line)
{
	s->hdrs = curl_slist_append(s->hdrs, line);
	if (!s->hdrs) {
		fprintf(stderr, "s3_load: out of memory\n");
		abort();
	}
}

static void add_header(struct slot *s, const char *name, const char *value)
{
	char line[SIGV4_MAX_AUTH_LEN];
	snprintf(line, sizeof(line), "%s: %s", name, value);
	add_line(s, line);
}

/* Builds the signed headers of s's request (method, s->path) into s->hdrs. */
static void sign(struct slot *s)
{
	struct run *r = s->r;
	const struct opts *o = r->o;
	int64_t now = (int64_t)time(NULL);
	buf auth = BUF_INIT;

	if (now != r->date_sec) {
		r->date_sec = now;
		sigv4_format_time(now, r->amz_date);
	}
	struct sigv4_header h[] = {
		{"host", o->endpoint},
		{"x-amz-content-sha256", PAYLOAD},
		{"x-amz-date", r->amz_date},
	};
	struct sigv4_input in = {op_methods[s->op], s->path, NULL, h, ARRAY_LEN(h), now, o->region, NULL};
	struct sigv4_signer sg = {o->ak, o->sk, o->region, NULL, r->amz_date};
	if (!sigv4_sign_header(&in, SIGNED_HEADERS, PAYLOAD, &sg, &auth)) {
		fprintf(stderr, "s3_load: cannot sign the path \"%s\"\n", s->path);
		exit(2);
	}
	curl_slist_free_all(s->hdrs);
	s->hdrs = NULL;
	add_header(s, "Host", o->endpoint);
	add_header(s, "x-amz-content-sha256", PAYLOAD);
	add_header(s, "x-amz-date", r->amz_date);
	add_header(s, "Authorization", auth.data);
	add_line(s, "Expect:");
	buf_free(&auth);
}

/* Starts request op on key with slot s (idle). */
static void start(struct slot *s, enum op op, long long key)
{
	const struct opts *o = s->r->o;
	char url[640];
	CURL *h = s->h;

	s->op = op;
	s->sent = 0;
	s->got = 0;
	s->body_len = 0;
	s->body[0] = 0;
	snprintf(s->path, sizeof(s->path), "/%s/%s%lld", o->bucket, o->prefix, key);
	snprintf(url, sizeof(url), "%s://%s%s", o->cacert ? "https" : "http", o->endpoint, s->path);
	sign(s);
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	if (o->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, o->cacert);
	curl_easy_setopt(h, CURLOPT_PRIVATE, s);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, s->hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(o->timeout * 1000));
	if (o->size >= BIG_BODY)
		curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L << 10);
	switch (op) {
	case OP_PUT:
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, s);
		curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(h, CURLOPT_SEEKDATA, s);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)o->size);
		if (o->size >= BIG_BODY)
			curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
		break;
	case OP_HEAD:
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
		break;
	case OP_DELETE:
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
		break;
	default:
		break;
	}
	s->t0 = time_mono_ns();
	curl_multi_add_handle(s->r->multi, h);
}

/* The next request to start: false when the run has none left. */
static bool next_request(struct run *r, enum op *op, long long *key)
{
	if (!r->mixed) {
		if (r->next >= r->o->n)
			return false;
		*op = r->op;
		*key = r->next++;
		return true;
	}
	if (time_mono_ns() >= r->deadline)
		return false;
	uint64_t x = rng_next(&r->rng) % 100;
	*op = x < 45 ? OP_GET : x < 75 ? OP_HEAD : x < 90 ? OP_PUT : OP_DELETE;
	*key = (long long)(rng_next(&r->rng) % (uint64_t)r->o->n);
	return true;
}

/* Accounts for s's finished request (libcurl's result res). */
static void finish(struct slot *s, CURLcode res)
{
	struct run *r = s->r;
	struct stats *st = &r->st[s->op];
	uint64_t size = (uint64_t)r->o->size, lat = (time_mono_ns() - s->t0) / 1000;
	long status = 0;
	curl_off_t cl = -1;
	long nconn = 0;
	bool ok = false, len_ok = true, not_found = false;

	if (res == CURLE_OK)
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(s->h, CURLINFO_NUM_CONNECTS, &nconn);
	r->connects += (uint64_t)nconn;
	switch (s->op) {
	case OP_PUT:
		ok = status == 200;
		break;
	case OP_GET:
		len_ok = s->got == size;
		ok = status == 200 && len_ok;
		break;
	case OP_HEAD:
		curl_easy_getinfo(s->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		len_ok = cl == (curl_off_t)size;
		ok = status == 200 && len_ok;
		break;
	default:
		ok = status == 204 || status == 200;
		break;
	}
	not_found = r->mixed && (s->op == OP_GET || s->op == OP_HEAD) && status == 404;
	if (ok || not_found) {
		if (ok)
			st->ops++;
		else
			st->not_found++;
		if (ok && s->op == OP_PUT)
			st->bytes += size;
		else if (ok && s->op == OP_GET)
			st->bytes += s->got;
		if (st->nlat == st->caplat) {
			st->caplat = st->caplat ? st->caplat * 2 : 4096;
			st->lat_us = xrealloc(st->lat_us, st->caplat * sizeof(*st->lat_us));
		}
		st->lat_us[st->nlat++] = lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
		return;
	}
	st->errors++;
	if (status == 200 && !len_ok)
		r->err_length++;
	else
		r->err_status[status > 0 && status < MAX_STATUS ? status : 0]++;
	if (r->reported++ < MAX_REPORTED) {
		if (res != CURLE_OK)
			fprintf(stderr, "s3_load: %s %s after %.1f ms: %s\n", op_methods[s->op],
				s->path, lat / 1000.0, curl_easy_strerror(res));
		else
			fprintf(stderr,
				"s3_load: %s %s after %.1f ms: HTTP %ld, %" PRIu64
				" body bytes: %s\n",
				op_methods[s->op], s->path, lat / 1000.0, status, s->got, s->body);
	}
}

/* Prints one line of figures for st (sorted here) over secs seconds. */
static void print_stats(const char *name, const struct opts *o, struct stats *st, double secs,
			double cpu, long long connects)
{
	qsort(st->lat_us, st->nlat, sizeof(*st->lat_us), cmp_u32);
	printf("%s c=%d size=%lld ops=%" PRIu64 " secs=%.3f ops_s=%.1f mib_s=%.2f p50_ms=%.2f "
	       "p99_ms=%.2f max_ms=%.2f not_found=%" PRIu64 " errors=%" PRIu64,
	       name, o->c, o->size, st->ops, secs, st->ops / secs, st->bytes / secs / (1 << 20),
	       pct_ms(st->lat_us, st->nlat, 50), pct_ms(st->lat_us, st->nlat, 99),
	       pct_ms(st->lat_us, st->nlat, 100), st->not_found, st->errors);
	if (cpu >= 0)
		printf(" cpu_s=%.2f connects=%lld", cpu, connects);
	printf("\n");
}

/* The figures: a line for the run, in mixed mode one per request kind, and the
 * unexpected answers by status. */
static void report(struct run *r, double secs, double cpu)
{
	struct stats all = {0};
	for (int i = 0; i < NOPS; i++) {
		struct stats *st = &r->st[i];
		all.ops += st->ops;
		all.not_found += st->not_found;
		all.bytes += st->bytes;
		all.errors += st->errors;
		all.lat_us = xrealloc(all.lat_us, (all.nlat + st->nlat + 1) * sizeof(*all.lat_us));
		memcpy(all.lat_us + all.nlat, st->lat_us, st->nlat * sizeof(*st->lat_us));
		all.nlat += st->nlat;
	}
	print_stats(r->o->mode, r->o, &all, secs, cpu, (long long)r->connects);
	for (int i = 0; r->mixed && i < NOPS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "mixed.%s", op_names[i]);
		print_stats(name, r->o, &r->st[i], secs, -1, 0);
	}
	if (all.errors) {
		printf("%s errors by status:", r->o->mode);
		if (r->err_status[0])
			printf(" no-answer=%" PRIu64, r->err_status[0]);
		for (int i = 1; i < MAX_STATUS; i++)
			if (r->err_status[i])
				printf(" %d=%" PRIu64, i, r->err_status[i]);
		if (r->err_length)
			printf(" wrong-length=%" PRIu64, r->err_length);
		printf("\n");
	}
	free(all.lat_us);
}

/* Runs the requests with o->c in flight until next_request has none; returns the seconds. */
static double drive(struct run *r, struct slot *slots)
{
	int active = 0, running;
	uint64_t t0 = time_mono_ns();
	enum op op;
	long long key;

	for (int i = 0; i < r->o->c && next_request(r, &op, &key); i++, active++)
		start(&slots[i], op, key);
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
			finish(s, res);
			active--;
			if (next_request(r, &op, &key)) {
				start(s, op, key);
				active++;
			}
		}
		if (active > 0)
			curl_multi_poll(r->multi, NULL, 0, 100, NULL);
	}
	return (time_mono_ns() - t0) / 1e9;
}

static const char summary[] =
	"Drives an S3 gateway with C concurrent SigV4-signed requests (one libcurl multi\n"
	"handle) and prints ops/s, MiB/s and latency. Modes: put, get, head, delete (each\n"
	"key PREFIX0..PREFIX<n-1> once) and mixed (DURATION seconds of 45% GET, 30% HEAD,\n"
	"15% PUT, 10% DELETE of random keys among the n). Exit 1 if a request failed.";

int main(int argc, char **argv)
{
	struct opts o = {"127.0.0.1:8333",
			 "bench",
			 "",
			 "",
			 "us-east-1",
			 "bench/",
			 "put",
			 NULL,
			 16,
			 1000,
			 4096,
			 0,
			 60,
			 600};
	const struct flag flags[] = {
		{"endpoint", FLAG_STRING, &o.endpoint, "the gateway, host:port"},
		{"bucket", FLAG_STRING, &o.bucket, "the bucket (must exist)"},
		{"ak", FLAG_STRING, &o.ak, "access key"},
		{"sk", FLAG_STRING, &o.sk, "secret key"},
		{"region", FLAG_STRING, &o.region, "the region signatures name"},
		{"prefix", FLAG_STRING, &o.prefix, "key prefix (unreserved characters and '/')"},
		{"mode", FLAG_STRING, &o.mode, "put, get, head, delete or mixed"},
		{"c", FLAG_INT, &o.c, "requests in flight"},
		{"n", FLAG_I64, &o.n, "objects (mixed: the working set)"},
		{"size", FLAG_I64, &o.size, "bytes per object"},
		{"duration", FLAG_DOUBLE, &o.duration, "mixed: seconds"},
		{"timeout", FLAG_DOUBLE, &o.timeout, "seconds before a request counts as failed"},
		{"cacert", FLAG_STRING, &o.cacert, "speak https, trusting this CA file"},
		{"seed", FLAG_I64, &o.seed, "seed of the body and of the mixed choices (0: clock)"},
	};
	struct run r = {.o = &o};
	struct slot *slots = NULL;
	char *data = NULL;
	int npos, rc, i;
	double secs, cpu0;

	rc = flags_parse(flags, ARRAY_LEN(flags), argc - 1, argv + 1, "s3_load", summary, &npos);
	if (rc)
		return rc > 0 ? 0 : 2;
	r.mixed = !strcmp(o.mode, "mixed");
	for (i = 0; i < NOPS && strcmp(o.mode, op_names[i]); i++)
		;
	r.op = i < NOPS ? (enum op)i : OP_GET;
	if ((i == NOPS && !r.mixed) || npos < argc - 1 || o.c < 1 || o.c > 4096 || o.n < 1 ||
	    o.size < 0 || o.size > (1LL << 34) || o.duration <= 0 || o.timeout <= 0 ||
	    strlen(o.bucket) + strlen(o.prefix) > 400) {
		fprintf(stderr, "s3_load: bad flags (see s3_load -h)\n");
		return 2;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "s3_load: curl_global_init failed\n");
		return 2;
	}
	r.rng = o.seed ? (uint64_t)o.seed : time_now_ns() | 1;
	data = xmalloc((size_t)o.size + 1);
	for (long long k = 0; k < o.size; k += 8) {
		uint64_t x = rng_next(&r.rng);
		memcpy(data + k, &x, (size_t)MIN(8, o.size - k));
	}
	r.data = data;
	r.multi = curl_multi_init();
	slots = xcalloc((size_t)o.c, sizeof(*slots));
	for (i = 0; i < o.c; i++) {
		slots[i].r = &r;
		slots[i].h = curl_easy_init();
		if (!slots[i].h || !r.multi) {
			fprintf(stderr, "s3_load: could not set up libcurl\n");
			return 2;
		}
	}
	curl_multi_setopt(r.multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o.c);
	r.deadline = time_mono_ns() + (uint64_t)(o.duration * 1e9);
	cpu0 = cpu_seconds();
	secs = drive(&r, slots);
	report(&r, secs, cpu_seconds() - cpu0);
	fflush(stdout);

	rc = 0;
	for (i = 0; i < NOPS; i++) {
		rc |= r.st[i].errors > 0;
		free(r.st[i].lat_us);
	}
	for (i = 0; i < o.c; i++) {
		curl_easy_cleanup(slots[i].h);
		curl_slist_free_all(slots[i].hdrs);
	}
	curl_multi_cleanup(r.multi);
	curl_global_cleanup();
	free(slots);
	free(data);
	return rc;
}
