/* jtree: parse, edit, copy, compare and write; exact number text; bad input refused. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "jtree.h"
#include "tap.h"

static char *text(const jt *v)
{
	buf b = BUF_INIT;
	jt_to_buf(v, &b, false);
	return buf_steal(&b, NULL);
}

static jt *parse(const char *s)
{
	char err[128];
	return jt_parse(s, strlen(s), err, sizeof(err));
}

static void test_round_trip(void)
{
	const char *in = "{\"z\":1,\"a\":[true,false,null,\"x\\u0000y\",-0.5e+3],"
			 "\"big\":18446744073709551615,\"neg\":-9223372036854775808,\"o\":{}}";
	jt *v = parse(in);
	char *out;
	uint64_t u;
	int64_t i;

	ok(v != NULL, "parses");
	out = text(v);
	is_str(out, in, "writes back the same text, member order and number text kept");
	free(out);
	ok(jt_as_u64(jt_get(v, "big"), &u) && u == UINT64_MAX, "u64 max exact");
	ok(jt_get_i64(v, "neg", &i) && i == INT64_MIN, "i64 min exact");
	ok(!jt_get_i64(v, "big", &i), "u64 max is not an i64");
	is_int(jt_get(v, "a")->items[3]->slen, 3, "string with NUL keeps its length");
	jt_free(v);
}

static void test_edit(void)
{
	jt *v = parse("{\"a\":1,\"b\":2,\"c\":3}");
	jt *c;
	char *out;

	jt_set(v, "b", jt_str("two"));
	jt_set(v, "d", jt_u64(12345678901234567890ULL));
	ok(jt_remove(v, "a"), "remove a present member");
	ok(!jt_remove(v, "zz"), "remove an absent member");
	out = text(v);
	is_str(out, "{\"b\":\"two\",\"c\":3,\"d\":12345678901234567890}",
	       "set replaces in place, appends new members");
	free(out);

	c = jt_copy(v);
	ok(jt_equal(c, v), "a copy is equal");
	jt_set(c, "c", jt_i64(4));
	ok(!jt_equal(c, v), "editing the copy leaves the original");
	is_str(jt_get(v, "c")->s, "3", "original member unchanged");
	jt_free(c);

	c = parse("{\"d\":12345678901234567890,\"c\":3,\"b\":\"two\"}");
	ok(jt_equal(c, v), "equality ignores member order");
	jt_free(c);

	c = jt_arr();
	jt_append(c, jt_i64(1));
	jt_append(c, jt_null());
	jt_append(c, jt_bool(true));
	jt_remove_at(c, 0);
	jt_remove_at(c, 9);
	jt_set(c, "k", jt_i64(1)); /* not an object: dropped */
	jt_append(v, jt_i64(1));   /* not an array: dropped */
	out = text(c);
	is_str(out, "[null,true]", "array append and remove");
	free(out);
	jt_free(c);
	jt_free(v);

	c = jt_num_text("1.5e-3");
	ok(c && !strcmp(c->s, "1.5e-3"), "number text accepted");
	jt_free(c);
	ok(!jt_num_text("01") && !jt_num_text("1.") && !jt_num_text("-") && !jt_num_text("1e"),
	   "number text refused when not JSON");
}

static void test_bad(void)
{
	char err[128] = "";
	char deep[200];
	jt *v;
	const char *bad[] = {"", "{", "[1,]", "{\"a\"}", "nul", "{\"a\":1}x", "\"\xff\"",
			     "\"\xc1\x8f\"", "{\"\xe0\x80\xaf\":1}"}; /* overlong UTF-8 */

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err[0] = 0;
		v = jt_parse(bad[i], strlen(bad[i]), err, sizeof(err));
		ok(!v && err[0], "refused: '%s' (%s)", bad[i], err);
	}
	memset(deep, '[', sizeof(deep));
	v = jt_parse(deep, JT_MAX_DEPTH + 1, err, sizeof(err));
	ok(!v && strstr(err, "deep"), "too deep refused: %s", err);
	memset(deep, '[', JT_MAX_DEPTH);
	memset(deep + JT_MAX_DEPTH, ']', JT_MAX_DEPTH);
	v = jt_parse(deep, 2 * JT_MAX_DEPTH, err, sizeof(err));
	ok(v != NULL, "the deepest allowed nesting parses");
	jt_free(v);
	v = jt_parse("{\"a\":1,\"a\":2}", 13, err, sizeof(err));
	ok(v && jt_len(v) == 1 && !strcmp(jt_get(v, "a")->s, "2"), "a repeated name keeps the last");
	jt_free(v);
}

int main(void)
{
	test_round_trip();
	test_edit();
	test_bad();
	return done_testing();
}
