/*
 * Fuzzes the bucket policy evaluator: the input is the policy JSON followed,
 * after a NUL, by a request as lines "principal=...", "action=...",
 * "resource=...", "service=...", "canonical=..." and any other "key=value" as
 * a condition key (repeated for a key with several values). Any input is
 * either parsed or refused with a message, and a parsed policy evaluates the
 * request (and the same request anonymously) to one of the three effects.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/bucket_policy.h"

#define CTX_MAX 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(enum policy_effect e)
{
	if (e != POLICY_NO_MATCH && e != POLICY_ALLOW && e != POLICY_DENY)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t plen = nul ? (size_t)(nul - data) : size;
	struct policy_kv kv[CTX_MAX];
	struct policy_request r = {
		.action = "s3:GetObject", .resource = "arn:aws:s3:::bucket/key", .ctx = kv};
	struct bucket_policy *p;
	char *lines, *save = NULL, msg[256];

	memset(msg, 'x', sizeof(msg)); /* a refusal must write its own message */
	p = bucket_policy_parse((const char *)data, plen, "bucket", msg, sizeof(msg));
	if (!p) {
		if (!memchr(msg, 0, sizeof(msg)) || !msg[0])
			abort(); /* a refusal always says why, NUL-terminated */
		return 0;
	}
	lines = nul ? strndup((const char *)nul + 1, size - plen - 1) : strdup("");
	for (char *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(l, '=');
		if (!eq)
			continue;
		*eq = '\0';
		if (!strcmp(l, "principal"))
			r.principal = eq + 1;
		else if (!strcmp(l, "action"))
			r.action = eq + 1;
		else if (!strcmp(l, "resource"))
			r.resource = eq + 1;
		else if (!strcmp(l, "service"))
			r.service = eq + 1;
		else if (!strcmp(l, "canonical"))
			r.canonical_id = eq + 1;
		else if (r.nctx < CTX_MAX)
			kv[r.nctx++] = (struct policy_kv){l, eq + 1};
	}
	check(bucket_policy_eval(p, &r));
	if (bucket_policy_needs(p) & ~(unsigned)(POLICY_NEEDS_CANONICAL | POLICY_NEEDS_OBJECT_TAGS))
		abort();
	r.principal = NULL;
	check(bucket_policy_eval(p, &r));
	r.service = NULL;
	check(bucket_policy_eval(p, &r));
	bucket_policy_free(p);
	free(lines);
	return 0;
}
