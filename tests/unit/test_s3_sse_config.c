/* Unit tests of the bucket encryption configuration parser (s3/sse_config.c). */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "s3/s3_sse.h"
#include "tap.h"
#include "util.h"

#define RULE(inner)                                                                    \
	"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>" inner \
	"</ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>"

/* The stored form of doc, or "!" + why for a refusal ("!!" when malformed). */
static char *parsed(const char *doc)
{
	buf out = BUF_INIT;
	bool malformed = false;
	const char *why = s3_sse_config_parse(doc, strlen(doc), &out, &malformed);
	char *v;
	if (why) {
		buf_free(&out);
		return xstrdup(malformed ? "!!" : "!");
	}
	buf_append(&out, "", 1);
	v = xstrdup(out.data);
	buf_free(&out);
	return v;
}

static void check(const char *doc, const char *want, const char *name)
{
	char *got = parsed(doc);
	is_str(got, want, name);
	free(got);
}

int main(void)
{
	check(RULE("<SSEAlgorithm>AES256</SSEAlgorithm>"), "AES256", "SSE-S3");
	check(RULE("<SSEAlgorithm>aws:kms</SSEAlgorithm>"), "aws:kms", "KMS, the default key");
	check(RULE("<SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>k-1</KMSMasterKeyID>"),
	      "aws:kms k-1", "KMS with a key id");
	check(RULE("<SSEAlgorithm>ROT13</SSEAlgorithm>"), "!", "an unknown algorithm");
	check(RULE("<SSEAlgorithm>AES256</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID>"), "!",
	      "a key id without aws:kms");
	check(RULE("<SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>a b</KMSMasterKeyID>"),
	      "!", "a key id with a space");
	check(RULE(""), "!!", "no SSEAlgorithm");
	check("<ServerSideEncryptionConfiguration/>", "!!", "no Rule");
	check("<Other><Rule/></Other>", "!!", "another root");
	check("<ServerSideEncryptionConfiguration><Rule>", "!!", "not XML");
	return done_testing();
}
