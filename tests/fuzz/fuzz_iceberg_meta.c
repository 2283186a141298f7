/*
 * Fuzzes the Iceberg table metadata reader on arbitrary bytes: a document
 * either reads (and validates) or is refused with a message. One that reads
 * is written back; that text must read again to an equal tree (what reading
 * fills in for version 1 is filled once), write to the same bytes, and name
 * its metadata files so that the version number reads back.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/iceberg_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	buf b1 = BUF_INIT, b2 = BUF_INIT;
	char msg[256];
	char *name;
	jt *m, *back;

	memset(msg, 'x', sizeof(msg));
	m = ice_meta_parse((const char *)data, size, msg, sizeof(msg));
	if (!m) {
		if (!memchr(msg, 0, sizeof(msg)) || !msg[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	ice_meta_write(m, &b1);
	back = ice_meta_parse(b1.data, b1.len, msg, sizeof(msg));
	if (!back || !jt_equal(back, m))
		abort();
	ice_meta_write(back, &b2);
	if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len))
		abort();
	name = ice_meta_file_name(m, 42, "u");
	if (!name || ice_meta_file_version(name) != 42)
		abort();
	free(name);
	jt_free(back);
	jt_free(m);
	buf_free(&b1);
	buf_free(&b2);
	return 0;
}
