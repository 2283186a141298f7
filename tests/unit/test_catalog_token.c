/*
 * The catalog's bearer tokens (catalog/catalog_token.h): issue and verify,
 * expiry, and every way a token can be forged or broken. The endpoint and
 * the catalog's use of them run in tests/integration/test_iceberg_auth.py.
 */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "catalog/catalog_token.h"
#include "tap.h"

static const uint8_t key[CT_KEY_LEN] = "0123456789abcdef0123456789abcdef";
static const uint8_t other[CT_KEY_LEN] = "fedcba9876543210fedcba9876543210";

static void round_trip(void)
{
	char tok[CT_TOKEN_MAX], who[CT_NAME_MAX + 1], name[CT_NAME_MAX + 2];

	ok(ct_issue(key, "AKALICE", 2000, tok), "a token is issued");
	ok(!strncmp(tok, "wfsc1.2000.", 11), "it names its format and expiry: %s", tok);
	is_int(ct_verify(key, tok, 1999, who), CT_VALID, "valid before its expiry");
	is_str(who, "AKALICE", "it names its identity");
	is_int(ct_verify(key, tok, 2000, who), CT_EXPIRED, "expired at its expiry");
	is_int(ct_verify(other, tok, 1999, who), CT_BAD_MAC, "another cluster's key refuses it");
	memset(name, 'n', CT_NAME_MAX);
	name[CT_NAME_MAX] = '\0';
	ok(ct_issue(key, name, 1, tok) && ct_verify(key, tok, 0, who) == CT_VALID &&
		   !strcmp(who, name),
	   "the longest name round-trips");
	name[CT_NAME_MAX] = 'n';
	name[CT_NAME_MAX + 1] = '\0';
	ok(!ct_issue(key, name, 1, tok), "a longer name is refused");
	ok(!ct_issue(key, "", 1, tok), "an empty name is refused");
}

/* Each forgery of a valid token is refused. */
static void forgeries(void)
{
	char tok[CT_TOKEN_MAX], bad[CT_TOKEN_MAX + 8], who[CT_NAME_MAX + 1];
	static const char *const malformed[] = {
		"", "wfsc1.", "wfsc1..414b.", "wfsc2.2000.414b.", "wfsc1.2000.414.",
		"wfsc1.-1.414b.", "wfsc1.2000.zz41.", "wfsc1.2000.41004b.", "wfsc1.2000..",
		"Bearer", NULL};

	ct_issue(key, "AK", 2000, tok);
	/* a later expiry, the same MAC */
	snprintf(bad, sizeof(bad), "wfsc1.9999%s", tok + 10);
	is_int(ct_verify(key, bad, 0, who), CT_BAD_MAC, "a changed expiry breaks the MAC");
	/* another identity, the same MAC */
	snprintf(bad, sizeof(bad), "%.11s4143%s", tok, tok + 15);
	is_int(ct_verify(key, bad, 0, who), CT_BAD_MAC, "a changed identity breaks the MAC");
	/* a flipped MAC digit */
	snprintf(bad, sizeof(bad), "%s", tok);
	bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
	is_int(ct_verify(key, bad, 0, who), CT_BAD_MAC, "a changed MAC is refused");
	/* a truncated or extended MAC */
	snprintf(bad, sizeof(bad), "%.*s", (int)strlen(tok) - 1, tok);
	is_int(ct_verify(key, bad, 0, who), CT_MALFORMED, "a short MAC is malformed");
	snprintf(bad, sizeof(bad), "%s0", tok);
	is_int(ct_verify(key, bad, 0, who), CT_MALFORMED, "a long MAC is malformed");
	for (size_t i = 0; malformed[i]; i++) {
		char t[CT_TOKEN_MAX + 8], name[CT_TOKEN_MAX + 32];
		snprintf(t, sizeof(t), "%s%064d", malformed[i], 0);
		snprintf(name, sizeof(name), "malformed: %s", malformed[i]);
		is_int(ct_verify(key, t, 0, who), CT_MALFORMED, name);
	}
}

int main(void)
{
	round_trip();
	forgeries();
	return done_testing();
}
