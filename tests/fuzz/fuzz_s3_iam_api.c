/*
 * Fuzzes what the IAM API reads from the network and from the filer: the
 * first byte picks the query form parser (a call's body) or the stored user
 * document reader; a refusal always says why, and what is accepted holds
 * to its bounds (and a user document written back reads back the same).
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/query_form.h"
#include "s3/s3_iam_user.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void user_doc(const char *text, size_t len)
{
	struct s3_iam_user u, again;
	char msg[256] = "";
	buf b = BUF_INIT;
	if (!s3_iam_user_parse(text, len, &u, msg, sizeof(msg))) {
		if (!msg[0])
			abort();
		s3_iam_user_clear(&u);
		return;
	}
	if (u.n_keys > S3_IAM_KEYS_MAX || u.n_pols > S3_IAM_POLICIES_MAX ||
	    !s3_iam_name_ok(u.name))
		abort();
	s3_iam_user_write(&u, &b);
	if (!s3_iam_user_parse(b.data, b.len, &again, msg, sizeof(msg)) ||
	    strcmp(again.name, u.name) || again.n_keys != u.n_keys || again.n_pols != u.n_pols)
		abort(); /* what was accepted is written so that it reads back */
	s3_iam_user_clear(&again);
	s3_iam_user_clear(&u);
	buf_free(&b);
}

static void form(const char *text, size_t len)
{
	struct query_form f;
	char msg[256] = "";
	if (!query_form_parse(text, len, &f, msg, sizeof(msg))) {
		if (!msg[0] || f.n)
			abort();
		return;
	}
	if (f.n > QUERY_FORM_MAX)
		abort();
	for (size_t i = 0; i < f.n; i++)
		if (query_form_get(&f, f.name[i]) != f.value[i])
			abort(); /* names are unique */
	query_form_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 1)
		user_doc((const char *)data + 1, size - 1);
	else
		form((const char *)data + 1, size - 1);
	return 0;
}
