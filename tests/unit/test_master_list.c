/* The client's list of masters: parsing of -mserver/-master/-peers and the current choice. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "client/master_list.h"
#include "tap.h"

static void bad(const char *spec, const char *want_in_msg)
{
	char msg[512] = "";
	master_list *ml = master_list_new(spec, msg, sizeof(msg));
	ok(!ml, "\"%s\" is refused", spec ? spec : "(null)");
	ok(strstr(msg, want_in_msg) != NULL, "the message names %s: %s", want_in_msg, msg);
	master_list_free(ml);
}

int main(void)
{
	char msg[512], cur[MASTER_ADDR_MAX];
	master_list *ml = master_list_new("127.0.0.1:9333", msg, sizeof(msg));

	ok(ml != NULL, "one master");
	is_int(master_list_count(ml), 1, "one entry");
	master_list_current(ml, cur, sizeof(cur));
	is_str(cur, "127.0.0.1:9333", "it is current");
	master_list_free(ml);

	ml = master_list_new("a:1,b.example:9333,[::1]:65535", msg, sizeof(msg));
	ok(ml != NULL, "three masters");
	is_int(master_list_count(ml), 3, "three entries");
	is_str(master_list_at(ml, 1), "b.example:9333", "in order");
	is_str(master_list_at(ml, 2), "[::1]:65535", "an IPv6 literal");
	is_str(master_list_spec(ml), "a:1,b.example:9333,[::1]:65535", "the spec kept");
	master_list_prefer(ml, "[::1]:65535");
	master_list_current(ml, cur, sizeof(cur));
	is_str(cur, "[::1]:65535", "a named leader becomes current");
	master_list_prefer(ml, "elsewhere:1");
	master_list_current(ml, cur, sizeof(cur));
	is_str(cur, "[::1]:65535", "an address not in the list is ignored");
	master_list_free(ml);
	master_list_free(NULL);

	bad("", "no master");
	bad(NULL, "no master");
	bad("a:1,", "\"\"");
	bad("a:1,,b:2", "\"\"");
	bad("nonsense", "\"nonsense\"");
	bad(":9333", "\":9333\"");
	bad("a:0", "\"a:0\"");
	bad("a:65536", "\"a:65536\"");
	bad("a:12x", "\"a:12x\"");
	bad("http://a:1", "\"http://a:1\"");
	return done_testing();
}
