#include "config.h"
#include <errno.h>
#include "err.h"

static const struct {
	const char *text;
	int http;
	int errnum;
} err_table[WFS_ERR_COUNT] = {
	[WFS_OK] = {"ok", 200, 0},
	[WFS_EINVAL] = {"invalid argument", 400, EINVAL},
	[WFS_ENOENT] = {"not found", 404, ENOENT},
	[WFS_EEXIST] = {"already exists", 409, EEXIST},
	[WFS_ETOOBIG] = {"too large", 413, EFBIG},
	[WFS_ENOSPC] = {"no space left", 507, ENOSPC},
	[WFS_EREADONLY] = {"read-only", 403, EROFS},
	[WFS_EPRECOND] = {"precondition failed", 412, EAGAIN},
	[WFS_EUNAVAIL] = {"service unavailable", 503, EIO},
	[WFS_ETIMEDOUT] = {"timed out", 504, ETIMEDOUT},
	[WFS_ECORRUPT] = {"data corrupted", 500, EIO},
	[WFS_EIO] = {"input/output error", 500, EIO},
	[WFS_EPERM] = {"permission denied", 403, EPERM},
	[WFS_ERANGE] = {"range not satisfiable", 416, EINVAL},
	[WFS_EINTERNAL] = {"internal error", 500, EIO},
};

const char *wfs_strerror(wfs_err e)
{
	return (unsigned)e < WFS_ERR_COUNT ? err_table[e].text : "unknown error";
}

int wfs_err_http_status(wfs_err e) { return (unsigned)e < WFS_ERR_COUNT ? err_table[e].http : 500; }

int wfs_err_errno(wfs_err e) { return (unsigned)e < WFS_ERR_COUNT ? err_table[e].errnum : EIO; }

wfs_err wfs_err_from_errno(int e)
{
	switch (e) {
	case 0:
		return WFS_OK;
	case ENOENT:
		return WFS_ENOENT;
	case EEXIST:
		return WFS_EEXIST;
	case EINVAL:
		return WFS_EINVAL;
	case ENOSPC:
	case EDQUOT:
		return WFS_ENOSPC;
	case EROFS:
		return WFS_EREADONLY;
	case EACCES:
	case EPERM:
		return WFS_EPERM;
	case EFBIG:
		return WFS_ETOOBIG;
	case ETIMEDOUT:
		return WFS_ETIMEDOUT;
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return WFS_EUNAVAIL;
	default:
		return WFS_EIO;
	}
}
