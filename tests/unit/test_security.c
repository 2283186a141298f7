/* The security file: the TOML subset, its sections, and the refusals that keep a typo from turning security off. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "security.h"
#include "tap.h"

static wfs_err parse(const char *text, struct security_conf *c, char *msg, size_t len)
{
	return security_conf_parse(text, strlen(text), c, msg, len);
}

static void test_full_file(void)
{
	const char *text = "# a cluster's security file\n"
			   "[jwt.signing]\n"
			   "key = \"s3cr\\u00e9t\\\"x\"  # trailing comment\n"
			   "expires_after_seconds = 1_0\n"
			   "[jwt.signing.read]\n"
			   "key = 'lit\\eral'\n"
			   "[ jwt . filer_signing ]\r\n"
			   "key = \"f\"\n"
			   "expires_after_seconds = 30\n"
			   "[grpc]\n"
			   "ca = \"ignored\"\n"
			   "[guard]\n"
			   "white_list = [\"10.0.0.1\", 'x', ]\n"
			   "[https.client]\n"
			   "enabled = true\n"
			   "ca = \"/ca.crt\"\n"
			   "[https.volume]\n"
			   "cert = \"/v.crt\"\n"
			   "key = \"/v.key\"\n"
			   "ca = \"/ca.crt\"\n"
			   "[https.filer]\n"
			   "cert = \"/f.crt\"\n"
			   "key = \"/f.key\"\n"
			   "ca = \"/ca.crt\"\n"
			   "disable_tls_verify_client_cert = true\n";
	struct security_conf c;
	char msg[256];

	is_int(parse(text, &c, msg, sizeof(msg)), WFS_OK, "a SeaweedFS-style file parses");
	is_str(c.volume_write.key, "s3cr\xc3\xa9t\"x", "basic strings unescape");
	is_int(c.volume_write.key_len, 9, "the key's length");
	is_int(c.volume_write.expires_after_sec, 10, "1_0 is ten");
	is_str(c.volume_read.key, "lit\\eral", "literal strings keep backslashes");
	is_int(c.volume_read.expires_after_sec, SECURITY_EXPIRES_DEFAULT, "expiry defaults");
	is_str(c.filer_write.key, "f", "a header with blanks around the dots");
	is_int(c.filer_write.expires_after_sec, 30, "filer expiry");
	ok(c.filer_read.key == NULL, "an absent key is off");
	ok(c.client.enabled, "https.client enabled");
	is_str(c.client.ca, "/ca.crt", "client ca");
	is_str(c.https[SECURITY_VOLUME].cert, "/v.crt", "volume cert");
	ok(c.https[SECURITY_VOLUME].verify_client, "a listener's ca asks for client certificates");
	ok(!c.https[SECURITY_FILER].verify_client, "unless disable_tls_verify_client_cert");
	ok(c.https[SECURITY_MASTER].cert == NULL, "no master section: plain HTTP");
	ok(security_tls_requested(&c), "listener sections ask for TLS");
	security_conf_free(&c);

	is_int(parse("", &c, msg, sizeof(msg)), WFS_OK, "an empty file is all off");
	ok(!c.volume_write.key && !c.client.enabled, "nothing on");
	ok(!security_tls_requested(&c), "no TLS asked for");
	security_conf_free(&c);
}

static void test_refusals(void)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{"[jwt.signing]\nkey = \"a\"\nexpire_after_seconds = 5\n", "a typo in a known section"},
		{"[jwt.signing]\nkey = 5\n", "a key that is not a string"},
		{"[jwt.signing]\nexpires_after_seconds = \"5\"\n", "an expiry that is a string"},
		{"[jwt.signing]\nexpires_after_seconds = 0\n", "a zero expiry"},
		{"[jwt.signing]\nkey = \"abc\n", "an unterminated string"},
		{"[jwt.signing]\nkey = \"a\\q\"\n", "an unknown escape"},
		{"[jwt.signing]\nkey = \"a\\u12\"\n", "a short \\u"},
		{"[jwt.signing]\nkey = \"a\\uD800\"\n", "a surrogate"},
		{"[jwt.signing]\nkey = \"a\\u0000\"\n", "a NUL in a key"},
		{"[jwt.signing\nkey = \"a\"\n", "an unclosed header"},
		{"[[jwt.signing]]\n", "arrays of tables"},
		{"[jwt.signing]\nkey \"a\"\n", "no '='"},
		{"[jwt.signing]\nkey = \"a\" b\n", "junk after the value"},
		{"[jwt.signing]\nkey = \"\"\"a\"\"\"\n", "multi-line strings"},
		{"[jwt.signing]\nkey = \n", "no value"},
		{"[https.master]\ncert = \"/a\"\n", "a cert without a key"},
		{"[https.master]\nca = \"/a\"\n", "a ca without a cert"},
		{"[https.client]\ncert = \"/a\"\n", "a client cert without a key"},
		{"[https.client]\nenabled = \"yes\"\n", "enabled that is not a bool"},
		{"[https.webdav]\ncert = \"/a\"\n", "an https role this file does not serve"},
		{"[guard]\nwhite_list = [\"a\"\n", "an unclosed array"},
		{"key = 99999999999999999999999\n", "an integer out of range"},
	};
	struct security_conf c;
	char msg[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg[0] = '\0';
		is_int(parse(bad[i].text, &c, msg, sizeof(msg)), WFS_EINVAL, bad[i].why);
		ok(!strncmp(msg, "line ", 5) || strstr(msg, "[https."), "the message names the line: %s",
		   msg);
	}
}

static int hook_runs;
static void count_hook(void *arg)
{
	hook_runs += *(int *)arg;
}

static void test_init_and_reload(void)
{
	char path[] = "/tmp/test_security_XXXXXX";
	char msg[300];
	int fd = mkstemp(path), two = 2;
	FILE *f;

	ok(security() != NULL && security()->volume_write.key == NULL, "off before init");
	is_int(security_init(NULL, msg, sizeof(msg)), WFS_OK, "no file: nothing to do");
	is_int(security_init("/nonexistent/security.toml", msg, sizeof(msg)), WFS_EIO,
	       "a missing file");
	ok(strstr(msg, "/nonexistent/security.toml") != NULL, "names the file: %s", msg);
	f = fdopen(fd, "w");
	fputs("[jwt.signing]\nkey = \"k\"\n[https.s3]\ncert = \"/nonexistent.crt\"\nkey = "
	      "\"/nonexistent.key\"\n",
	      f);
	fclose(f);
	is_int(security_init(path, msg, sizeof(msg)), WFS_EIO, "a certificate that cannot be read");
	ok(strstr(msg, "/nonexistent.crt") != NULL, "names the certificate: %s", msg);
	ok(security()->volume_write.key == NULL, "a refused file changes nothing");
	f = fopen(path, "w");
	fputs("[jwt.signing]\nkey = \"k\"\n", f);
	fclose(f);
	is_int(security_init(path, msg, sizeof(msg)), WFS_OK, "a good file");
	is_str(security()->volume_write.key, "k", "is the process's configuration");
	is_str(security_path(), path, "and its path is kept");
	unlink(path);

	security_on_reload(count_hook, &two);
	security_reload();
	is_int(hook_runs, 2, "a reload runs the hooks");
	security_off_reload(count_hook, &two);
	security_reload();
	is_int(hook_runs, 2, "a removed hook does not run");
}

int main(void)
{
	test_full_file();
	test_refusals();
	test_init_and_reload();
	return done_testing();
}
