/* S3 error codes (s3_err.h). */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include "s3/s3_err.h"

static const struct {
	const char *code;
	int status;
} table[S3_ERR_COUNT] = {
#define S3_ERR_ROW(name, code, status) [name] = {code, status},
	S3_ERRORS(S3_ERR_ROW)
#undef S3_ERR_ROW
};

const char *s3_err_code(enum s3_err e)
{
	return (unsigned)e < S3_ERR_COUNT ? table[e].code : "InternalError";
}

int s3_err_status(enum s3_err e) { return (unsigned)e < S3_ERR_COUNT ? table[e].status : 500; }

enum s3_err s3_err_of(wfs_err e)
{
	switch (e) {
	case WFS_OK:
		return S3_OK;
	case WFS_EPRECOND:
		return S3_PRECONDITION_FAILED;
	case WFS_EUNAVAIL:
	case WFS_ETIMEDOUT:
	case WFS_EBUSY:
		return S3_SERVICE_UNAVAILABLE;
	case WFS_ENAMETOOLONG:
		return S3_KEY_TOO_LONG;
	default:
		return S3_INTERNAL;
	}
}

enum s3_err s3_err_msg(char *msg, size_t msglen, enum s3_err e, const char *fmt, ...)
{
	if (msg && msglen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, msglen, fmt, ap);
		va_end(ap);
	}
	return e;
}
