/* Unit tests of lib/: buffers, flags, JSON, CRC32C, errors, the worker pool, parsers. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "buf.h"
#include "crc32c.h"
#include "err.h"
#include "flags.h"
#include "json.h"
#include "pool.h"
#include "utf8.h"
#include "util.h"
#include "tap.h"

static void test_buf(void)
{
	buf b = BUF_INIT;
	char *p;
	size_t n;

	for (int i = 0; i < 1000; i++)
		buf_printf(&b, "%d,", i);
	ok(b.len == strlen(b.data), "buf stays NUL-terminated");
	ok(!strncmp(b.data, "0,1,2,", 6), "buf_printf appends");
	buf_reset(&b);
	is_int(b.len, 0, "reset empties");
	buf_append(&b, "ab\0c", 4);
	is_int(b.len, 4, "binary append keeps NULs");
	p = buf_steal(&b, &n);
	ok(n == 4 && !memcmp(p, "ab\0c", 4) && b.data == NULL, "steal hands over storage");
	free(p);
	buf_free(&b);
}

static void test_crc32c(void)
{
	is_int(crc32c_update(0, "123456789", 9), 0xe3069283u, "CRC32C check value");
	uint32_t c = crc32c_update(0, "1234", 4);
	is_int(crc32c_update(c, "56789", 5), 0xe3069283u, "CRC32C extends incrementally");
	is_int(crc32c_update(0, "", 0), 0, "CRC32C of nothing is 0");
}

static void test_flags(void)
{
	const char *s = "def";
	int port = 1;
	long long big = 0;
	bool b = false, b2 = true;
	double d = 0;
	struct flag_list l = {0};
	const struct flag fl[] = {
		{"s", FLAG_STRING, &s, "a string"},     {"port", FLAG_INT, &port, "a port"},
		{"big", FLAG_I64, &big, "an int64"},    {"b", FLAG_BOOL, &b, "a bool"},
		{"b2", FLAG_BOOL, &b2, "another bool"}, {"d", FLAG_DOUBLE, &d, "a double"},
		{"dir", FLAG_LIST, &l, "dirs"},
	};
	char *argv[] = {"-s=x", "-port",     "8080",    "--big=9007199254740993",
			"-b",   "-b2=false", "-d=0.25", "-dir=/a,/b",
			"-dir", "/c",        "pos"};
	int npos = -1;

	is_int(flags_parse(fl, ARRAY_LEN(fl), ARRAY_LEN(argv), argv, "t", "test", &npos), 0,
	       "flags parse");
	is_str(s, "x", "string flag");
	is_int(port, 8080, "int flag with separate value");
	ok(big == 9007199254740993LL, "int64 flag exact");
	ok(b && !b2, "bool flags");
	ok(d == 0.25, "double flag");
	is_int(l.n, 3, "list flag splits commas and repeats");
	ok(l.n == 3 && !strcmp(l.v[1], "/b") && !strcmp(l.v[2], "/c"), "list values");
	is_int(npos, 10, "first positional index");
	flag_list_free(&l);

	char *bad1[] = {"-nosuch=1"};
	char *bad2[] = {"-port=eighty"};
	char *bad3[] = {"-port"};
	fclose(stderr); /* the parser explains failures on stderr; keep TAP output clean */
	is_int(flags_parse(fl, ARRAY_LEN(fl), 1, bad1, "t", "test", &npos), -1, "unknown flag");
	is_int(flags_parse(fl, ARRAY_LEN(fl), 1, bad2, "t", "test", &npos), -1, "bad int");
	is_int(flags_parse(fl, ARRAY_LEN(fl), 1, bad3, "t", "test", &npos), -1, "missing value");
}

static void test_json(void)
{
	buf b = BUF_INIT;
	json_w *w = jw_new(&b, false);
	char err[128];
	yajl_val v;
	uint64_t u;
	int64_t i;
	const char *s;
	bool flag;

	jw_obj_begin(w);
	jw_kv_u64(w, "big", UINT64_MAX);
	jw_kv_i64(w, "neg", INT64_MIN);
	jw_kv_str(w, "s", "a\"b\n\xc3\xa9");
	jw_kv_bool(w, "t", true);
	jw_key(w, "arr");
	jw_arr_begin(w);
	jw_u64(w, 9007199254740993ull);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
	is_str(b.data,
	       "{\"big\":18446744073709551615,\"neg\":-9223372036854775808,\"s\":"
	       "\"a\\\"b\\n\xc3\xa9\","
	       "\"t\":true,\"arr\":[9007199254740993]}",
	       "writer output");

	v = json_parse(b.data, b.len, err, sizeof(err));
	ok(v != NULL, "reader parses writer output");
	ok(json_get_u64(v, "big", &u) && u == UINT64_MAX, "u64 max round-trips exactly");
	ok(json_get_i64(v, "neg", &i) && i == INT64_MIN, "i64 min round-trips exactly");
	ok(json_get_str(v, "s", &s) && !strcmp(s, "a\"b\n\xc3\xa9"), "string round-trips");
	ok(json_get_bool(v, "t", &flag) && flag, "bool");
	ok(!json_get_u64(v, "s", &u), "type mismatch refused");
	ok(!json_get_u64(v, "neg", &u), "negative refused as u64");
	yajl_val arr = json_get(v, "arr");
	ok(arr && YAJL_IS_ARRAY(arr) && json_as_u64(arr->u.array.values[0], &u) &&
		   u == 9007199254740993ull,
	   "2^53+1 exact in arrays");
	yajl_tree_free(v);
	buf_free(&b);

	ok(json_parse("{\"a\":", 5, err, sizeof(err)) == NULL && err[0], "truncated JSON refused");
	ok(json_parse("{\"a\":1}\0x", 9, err, sizeof(err)) == NULL, "embedded NUL refused");
}

static void test_errors(void)
{
	is_int(wfs_err_http_status(WFS_ENOENT), 404, "not found is 404");
	is_int(wfs_err_http_status(WFS_EINVAL), 400, "invalid is 400");
	is_int(wfs_err_http_status(WFS_ERANGE), 416, "range is 416");
	is_int(wfs_err_from_errno(ENOSPC), WFS_ENOSPC, "ENOSPC maps");
	ok(strcmp(wfs_strerror((wfs_err)999), "unknown error") == 0, "out of range is safe");
	/* every code has a wire name of its own that maps back to it */
	bool names_ok = true;
	for (int e = 0; e < WFS_ERR_COUNT; e++) {
		const char *n = wfs_err_name((wfs_err)e);
		names_ok &= n && n[0] == (e ? 'E' : 'O') && wfs_err_from_name(n) == (wfs_err)e;
	}
	ok(names_ok, "every wire name maps back to its code");
	is_str(wfs_err_name(WFS_EPRECOND), "EPRECOND", "precondition's wire name");
	is_str(wfs_err_name(WFS_EUNAVAIL), "EAGAIN", "unavailable keeps the wire name EAGAIN");
	is_int(wfs_err_from_name("ENOPE"), WFS_EIO, "an unknown name is EIO");
	is_int(wfs_err_from_name(NULL), WFS_EIO, "no name is EIO");
	is_int(wfs_err_errno(WFS_ENOTEMPTY), ENOTEMPTY, "not empty -> ENOTEMPTY");
	is_int(wfs_err_errno(WFS_ENOSPC), ENOSPC, "no space -> ENOSPC");
	is_int(wfs_err_from_errno(EDQUOT), WFS_EQUOTA, "EDQUOT -> quota");
	is_int(wfs_err_from_errno(EISDIR), WFS_EISDIR, "EISDIR maps");
	is_int(wfs_err_from_http_status(204), WFS_OK, "2xx is ok");
	is_int(wfs_err_from_http_status(412), WFS_EPRECOND, "412 is a precondition");
	is_int(wfs_err_from_http_status(507), WFS_ENOSPC, "507 is no space");
	is_int(wfs_err_from_http_status(418), WFS_EINVAL, "another 4xx is invalid");
	is_int(wfs_err_from_http_status(502), WFS_EUNAVAIL, "5xx is unavailable");
	is_int(wfs_err_http_status(WFS_ENOTDIR), 409, "not a directory is 409");
}

static void test_parsers(void)
{
	uint64_t u;
	uint32_t u32;
	int64_t i;
	bool b;
	ok(parse_u64("18446744073709551615", &u) && u == UINT64_MAX, "u64 max");
	ok(!parse_u64("18446744073709551616", &u), "u64 overflow refused");
	ok(!parse_u64("-1", &u) && !parse_u64("", &u) && !parse_u64("1x", &u), "u64 junk refused");
	ok(!parse_u32("4294967296", &u32), "u32 overflow refused");
	ok(parse_i64("-42", &i) && i == -42, "i64 negative");
	ok(parse_bool("Yes", &b) && b && parse_bool("off", &b) && !b && !parse_bool("maybe", &b),
	   "bools");
}

static void test_utf8(void)
{
	uint32_t c = 0;
	is_int(utf8_decode((const unsigned char *)"a", 1, &c), 1, "ASCII is one byte");
	is_int(c, 'a', "ASCII code point");
	is_int(utf8_decode((const unsigned char *)"\xc3\xa9", 2, &c), 2, "two-byte sequence");
	is_int(c, 0xe9, "U+00E9");
	is_int(utf8_decode((const unsigned char *)"\xf4\x8f\xbf\xbf", 4, &c), 4, "U+10FFFF");
	is_int(c, 0x10ffff, "largest code point");
	is_int(utf8_decode((const unsigned char *)"\xc0\xaf", 2, NULL), 0, "overlong refused");
	is_int(utf8_decode((const unsigned char *)"\xed\xa0\x80", 3, NULL), 0, "surrogate refused");
	is_int(utf8_decode((const unsigned char *)"\xf4\x90\x80\x80", 4, NULL), 0,
	       "past U+10FFFF refused");
	is_int(utf8_decode((const unsigned char *)"\xe2\x82", 2, NULL), 0, "truncated refused");
	is_int(utf8_decode((const unsigned char *)"\x80", 1, NULL), 0, "lone continuation refused");
	ok(utf8_valid("caf\xc3\xa9", 5) && utf8_valid("", 0), "valid strings");
	ok(!utf8_valid("caf\xe9", 4) && !utf8_valid("a\xe2\x82", 3), "invalid strings");
	{
		/* the JSON writer never emits invalid UTF-8: a bad byte becomes U+FFFD */
		buf b = BUF_INIT;
		json_w *w = jw_new(&b, false);
		jw_strn(w,
			"a\xff"
			"b\xc3\xa9\xe2\x82",
			7);
		jw_free(w);
		is_str(b.data,
		       "\"a\xef\xbf\xbd"
		       "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\"",
		       "bad bytes written as U+FFFD");
		buf_free(&b);
	}
}

static int pool_counter;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static void pool_job(void *arg)
{
	pthread_mutex_lock(&pool_lock);
	pool_counter += *(int *)arg;
	pthread_mutex_unlock(&pool_lock);
}

static char pool_thread_name[16];

static void pool_name_job(void *arg)
{
	(void)arg;
	pthread_getname_np(pthread_self(), pool_thread_name, sizeof(pool_thread_name));
}

static void test_pool_names(void)
{
	pool *p = pool_new(1, "wfs-test-pool");
	pool_submit(p, pool_name_job, NULL);
	pool_stop(p);
	is_str(pool_thread_name, "wfs-test-pool", "a pool's workers carry its name");
	pool_free(p);

	/* the kernel keeps 15 characters: a longer name is cut, not refused */
	p = pool_new(1, "wfs-a-very-long-pool-name");
	pool_submit(p, pool_name_job, NULL);
	pool_stop(p);
	is_str(pool_thread_name, "wfs-a-very-long", "a long pool name is cut to 15 characters");
	pool_free(p);
}

static void test_pool(void)
{
	pool *p = pool_new(4, NULL);
	int one = 1;
	for (int i = 0; i < 10000; i++)
		pool_submit(p, pool_job, &one);
	pool_free(p);
	is_int(pool_counter, 10000, "pool runs every queued job before freeing");
	pool_free(NULL);
	pool_stop(NULL);

	/* stopped: queued jobs done, later ones run at once on the submitting thread */
	p = pool_new(2, NULL);
	pool_counter = 0;
	for (int i = 0; i < 1000; i++)
		pool_submit(p, pool_job, &one);
	pool_stop(p);
	is_int(pool_counter, 1000, "pool_stop runs every queued job");
	pool_submit(p, pool_job, &one);
	is_int(pool_counter, 1001, "a job submitted after pool_stop has run when submit returns");
	pool_stop(p);
	pool_free(p);
}

static void test_atomic_write(void)
{
	char dir[] = "/tmp/weedfs-test-XXXXXX", path[256], data[16] = {0};
	FILE *f;
	ok(mkdtemp(dir) != NULL, "temp dir");
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	ok(mkdir_p(path), "mkdir_p makes parents");
	snprintf(path, sizeof(path), "%s/a/file", dir);
	is_int(write_file_atomic(path, "hello", 5), 0, "atomic write");
	f = fopen(path, "r");
	ok(f && fread(data, 1, sizeof(data), f) == 5 && !strcmp(data, "hello"), "content");
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	ok(system(path) == 0, "cleanup");
}

int main(void)
{
	test_buf();
	test_crc32c();
	test_json();
	test_errors();
	test_parsers();
	test_utf8();
	test_pool();
	test_pool_names();
	test_atomic_write();
	test_flags(); /* last: closes stderr */
	return done_testing();
}
