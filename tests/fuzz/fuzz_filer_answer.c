/*
 * Fuzzes the decoder of the filer's entry answers that its clients (the
 * gateway, the mount) read from the network, in both forms: JSON, and the
 * stored encoding a lookup asks for. Never crashes; a decoded answer has an
 * entry and a 16-digit etag, one in the stored encoding re-encodes to exactly
 * its bytes, and one in JSON (read by the entry JSON codec) written back by
 * the codec reads back to the same entry.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "client/entry_json.h"
#include "client/filer_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * e written as an answer's entry and read back writes the same JSON again
 * (the first write may settle a default: a zero atime is shown as the mtime).
 */
static void json_again(const struct filer_entry *e)
{
	buf a = BUF_INIT, b = BUF_INIT;
	struct filer_entry *d = NULL;

	entry_json(e, ENTRY_JSON_CONTENT, &a);
	if (filer_meta_entry_answer(a.data, a.len, NULL, &d, NULL))
		abort();
	entry_json(d, ENTRY_JSON_CONTENT, &b);
	if (a.len != b.len || memcmp(a.data, b.data, a.len))
		abort();
	filer_entry_free(d);
	buf_free(&a);
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body = malloc(size + 1); /* answers come NUL-terminated */
	struct filer_entry *e = NULL;
	char etag[17] = "";
	buf b = BUF_INIT;

	if (!body)
		return 0;
	memcpy(body, data, size);
	body[size] = '\0';
	if (filer_meta_entry_answer(body, size, "/fuzz/x", &e, etag) == 0) {
		if (!e || strlen(etag) != 16)
			abort();
		if (size && body[0] != '{' &&
		    (filer_entry_encode(e, &b) || b.len != size || memcmp(b.data, data, size)))
			abort();
		if (size && body[0] == '{')
			json_again(e);
	} else if (e) {
		abort(); /* a failed decode hands nothing back */
	}
	filer_entry_free(e);
	buf_free(&b);
	free(body);
	return 0;
}
