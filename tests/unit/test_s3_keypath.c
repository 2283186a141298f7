/*
 * The S3 gateway's key to path mapping (s3/s3_keypath.h): ordinary keys are
 * their own paths, each escaped component has its documented name, every key
 * round-trips component by component, and the image holds no empty, "." or
 * ".." component and never the directory object's name.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "s3/s3_keypath.h"
#include "tap.h"
#include "util.h"

static void check_encode(const char *key, const char *want)
{
	char *got = s3_keypath_encode(key);
	is_str(got, want, key);
	free(got);
}

/* Decodes path component by component back into a key (caller frees); NULL if one fails. */
static char *decode_path(const char *path)
{
	buf b = BUF_INIT;
	for (const char *p = path;;) {
		const char *slash = strchr(p, '/');
		char *name = slash ? xstrndup(p, (size_t)(slash - p)) : xstrdup(p);
		char *c = s3_keypath_decode(name);
		free(name);
		if (!c) {
			buf_free(&b);
			return NULL;
		}
		buf_append_str(&b, c);
		free(c);
		if (!slash)
			break;
		buf_append(&b, "/", 1);
		p = slash + 1;
	}
	return buf_steal(&b, NULL);
}

/* Whether every component of path is a name the filer takes and none is the self name. */
static bool storable(const char *path)
{
	for (const char *p = path;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && !strncmp(p, "..", 2)) ||
		    (n == strlen(S3_KEYPATH_SELF) && !strncmp(p, S3_KEYPATH_SELF, n)))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

static void check_round_trip(const char *key)
{
	char *path = s3_keypath_encode(key), *back = decode_path(path);
	ok(storable(path), "%s: stored as %s, every component a plain name", key, path);
	is_str(back, key, "round trip");
	free(path);
	free(back);
}

static void test_ordinary(void)
{
	check_encode("x/y/z.txt", "x/y/z.txt");
	check_encode("a", "a");
	check_encode(".hidden/.s3/s3~x/.s3x~", ".hidden/.s3/s3~x/.s3x~");
	check_encode("...", "...");
	check_encode("a b/\xc3\xa9t\xc3\xa9", "a b/\xc3\xa9t\xc3\xa9");
}

static void test_escapes(void)
{
	check_encode("a/", "a/.s3~empty");
	check_encode("a//b", "a/.s3~empty/b");
	check_encode("/a", ".s3~empty/a");
	check_encode("/", ".s3~empty/.s3~empty");
	check_encode("a/./b/..", "a/.s3~dot/b/.s3~dotdot");
	check_encode(".s3~object", ".s3~.s3~object");
	check_encode("d/.s3~empty/", "d/.s3~.s3~empty/.s3~empty");
	check_encode(".s3~", ".s3~.s3~");
}

static void test_decode(void)
{
	char *c;
	ok(!s3_keypath_decode(S3_KEYPATH_SELF), "the directory's object is no component");
	ok(!s3_keypath_decode(".s3~unknown"), "a reserved name never made decodes to nothing");
	ok(!s3_keypath_decode(".s3~"), "the bare prefix decodes to nothing");
	c = s3_keypath_decode(".s3~empty");
	is_str(c, "", "the empty component");
	free(c);
	c = s3_keypath_decode("plain");
	is_str(c, "plain", "a plain name is itself");
	free(c);
	ok(s3_keypath_reserved(".s3~x") && !s3_keypath_reserved(".s3x") &&
		   !s3_keypath_reserved("a.s3~"),
	   "the reserved namespace is the prefix");
}

static void test_round_trips(void)
{
	static const char *keys[] = {"a",      "a/",      "a//b",  "a/b",   "/",       "//",
				     "/a/",    "a/./b",   "../x",  ".",     "..",      ".s3~",
				     ".s3~.",  ".s3~dot", "x/.s3~object/y", "a///", "~/.s3",
				     "x/y/z.txt"};
	/* and every key of up to four bytes over an alphabet of the interesting bytes */
	static const char alpha[] = "/.s~a";
	char key[5];
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		check_round_trip(keys[i]);
	for (size_t len = 1; len <= 4; len++) {
		size_t total = 1, bad = 0;
		for (size_t i = 0; i < len; i++)
			total *= sizeof(alpha) - 1;
		for (size_t n = 0; n < total; n++) {
			size_t v = n;
			char *path, *back;
			for (size_t i = 0; i < len; i++) {
				key[i] = alpha[v % (sizeof(alpha) - 1)];
				v /= sizeof(alpha) - 1;
			}
			key[len] = '\0';
			path = s3_keypath_encode(key);
			back = decode_path(path);
			if (!storable(path) || !back || strcmp(back, key))
				bad++;
			free(path);
			free(back);
		}
		ok(bad == 0, "all %zu keys of %zu bytes round-trip", total, len);
	}
}

int main(void)
{
	test_ordinary();
	test_escapes();
	test_decode();
	test_round_trips();
	return done_testing();
}
