/*
 * Fuzzes what the catalog reads from a client before it knows who the client
 * is: a bearer token (catalog/catalog_token.h) and the OAuth2 token request
 * (catalog/oauth_tokens.h: the form body and the Basic authorization). The
 * input is the token; after a NUL, the form body; after another, the
 * authorization header. A token only verifies when it is one ct_issue made,
 * and an answer is always JSON of a known status.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/catalog_token.h"
#include "catalog/oauth_tokens.h"
#include "lib/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t key[CT_KEY_LEN] = "fuzz-key-fuzz-key-fuzz-key-fuzz";
static const char iam_doc[] =
	"{\"identities\":[{\"name\":\"a\",\"credentials\":[{\"accessKey\":\"AK\","
	"\"secretKey\":\"SK\"}],\"actions\":[\"Admin\"]}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct s3_iam *iam;
	char *in = malloc(size + 2), *form, *auth, who[CT_NAME_MAX + 1], again[CT_TOKEN_MAX];
	const char *end;
	int status = 0;
	buf out = BUF_INIT;

	if (!iam) {
		char msg[128];
		iam = s3_iam_parse(iam_doc, sizeof(iam_doc) - 1, msg, sizeof(msg));
		if (!iam)
			abort();
	}
	memcpy(in, data, size);
	in[size] = in[size + 1] = '\0';
	form = in + strlen(in) + (strlen(in) < size);
	end = in + size;
	auth = form < end ? form + strlen(form) + 1 : NULL;
	if (auth && auth > end)
		auth = NULL;

	if (ct_verify(key, in, 0, who) == CT_VALID) {
		/* only the issuer's text verifies: issuing for the name gives it back */
		int64_t expiry = strtoll(in + 6, NULL, 10);
		if (!ct_issue(key, who, expiry, again) || strcmp(again, in))
			abort();
	}
	oauth_tokens(iam, key, form, strlen(form), auth, 0, &status, &out);
	if (status != 200 && status != 400 && status != 401)
		abort();
	{
		char msg[64];
		yajl_val v = json_parse(out.data, out.len, msg, sizeof(msg));
		if (!v)
			abort();
		yajl_tree_free(v);
	}
	buf_free(&out);
	free(in);
	return 0;
}
