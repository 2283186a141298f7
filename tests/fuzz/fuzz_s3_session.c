/*
 * Fuzzes what reads session credentials from the network: the session token
 * (s3_session_verify on text, s3_session_parse on a body as if signed) and the
 * AssumeRole session policy. The first byte picks the reader; whatever is
 * accepted must hold only what the readers promise.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/s3_session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A session's scopes as the readers promise them: bounded, acting, never a pattern. */
static void check_scopes(const struct s3_session *s)
{
	if (s->n > S3_SESSION_SCOPES_MAX)
		abort();
	for (size_t i = 0; i < s->n; i++)
		if (!s->scope[i].actions || (s->scope[i].actions & ~(unsigned)S3_SESSION_ALL) ||
		    strpbrk(s->scope[i].prefix, "*?") || !s->scope[i].bucket[0])
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[S3_SESSION_KEY_LEN] = {1, 2, 3};
	struct s3_session s;
	char msg[256] = "", secret[S3_SESSION_SECRET_LEN + 1], *text;

	if (!size)
		return 0;
	memset(&s, 0, sizeof(s));
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 3) {
	case 0:
		if (s3_session_verify(key, text, 1700000000, &s, secret, msg, sizeof(msg)) ==
		    S3_SESSION_OK) {
			if (s.expiry <= 1700000000)
				abort(); /* an expired session is never OK */
			check_scopes(&s);
		} else if (!msg[0]) {
			abort(); /* a refusal says why */
		}
		break;
	case 1:
		if (s3_session_parse(data + 1, size - 1, &s, msg, sizeof(msg)))
			check_scopes(&s);
		else if (!msg[0])
			abort();
		break;
	default:
		if (s3_session_policy(text, strlen(text), &s, msg, sizeof(msg)))
			check_scopes(&s);
		else if (!msg[0])
			abort();
	}
	free(text);
	return 0;
}
