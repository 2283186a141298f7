/*
 * Fuzzes the identities file reader: any document either fails with a
 * message or gives identities whose every key looks up to itself.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/s3_iam.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[256] = "";
	struct s3_iam *iam = s3_iam_parse((const char *)data, size, msg, sizeof(msg));
	const char *secret;
	if (!iam) {
		if (!msg[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	if (s3_iam_lookup(iam, "", &secret))
		abort(); /* empty keys are refused */
	(void)s3_iam_is_open(iam);
	s3_iam_free(iam);
	return 0;
}
