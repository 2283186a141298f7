#include "config.h"
#include <errno.h>
#include <string.h>
#include "err.h"

/* The wire names stay as the filer's JSON API has always sent them (EAGAIN: unavailable). */
static const struct {
	const char *name;
	const char *text;
	int http;
	int errnum;
} err_table[WFS_ERR_COUNT] = {
	[WFS_OK] = {"OK", "ok", 200, 0},
	[WFS_EINVAL] = {"EINVAL", "invalid argument", 400, EINVAL},
	[WFS_ENOENT] = {"ENOENT", "not found", 404, ENOENT},
	[WFS_EEXIST] = {"EEXIST", "already exists", 409, EEXIST},
	[WFS_ETOOBIG] = {"EFBIG", "too large", 413, EFBIG},
	[WFS_ENOSPC] = {"ENOSPC", "no space left", 507, ENOSPC},
	[WFS_EREADONLY] = {"EROFS", "read-only", 403, EROFS},
	[WFS_EPRECOND] = {"EPRECOND", "precondition failed", 412, EAGAIN},
	[WFS_EUNAVAIL] = {"EAGAIN", "service unavailable", 503, EIO},
	[WFS_ETIMEDOUT] = {"ETIMEDOUT", "timed out", 504, ETIMEDOUT},
	[WFS_ECORRUPT] = {"ECORRUPT", "data corrupted", 500, EIO},
	[WFS_EIO] = {"EIO", "input/output error", 500, EIO},
	[WFS_EPERM] = {"EPERM", "permission denied", 403, EPERM},
	[WFS_ERANGE] = {"ERANGE", "range not satisfiable", 416, EINVAL},
	[WFS_EINTERNAL] = {"EINTERNAL", "internal error", 500, EIO},
	[WFS_ENOTEMPTY] = {"ENOTEMPTY", "directory not empty", 409, ENOTEMPTY},
	[WFS_ENOTDIR] = {"ENOTDIR", "not a directory", 409, ENOTDIR},
	[WFS_EISDIR] = {"EISDIR", "is a directory", 409, EISDIR},
	[WFS_ENODATA] = {"ENODATA", "no such attribute", 404, ENODATA},
	[WFS_ENOSYS] = {"ENOSYS", "no such operation", 404, ENOSYS},
	[WFS_ENAMETOOLONG] = {"ENAMETOOLONG", "name too long", 400, ENAMETOOLONG},
	[WFS_EQUOTA] = {"EDQUOT", "quota exceeded", 507, EDQUOT},
	[WFS_EACCES] = {"EACCES", "access denied", 403, EACCES},
	[WFS_EBUSY] = {"EBUSY", "held by another owner", 409, EAGAIN},
	[WFS_ENOLCK] = {"ENOLCK", "no locks available", 503, ENOLCK},
};

const char *wfs_strerror(wfs_err e)
{
	return (unsigned)e < WFS_ERR_COUNT ? err_table[e].text : "unknown error";
}

const char *wfs_err_name(wfs_err e)
{
	return (unsigned)e < WFS_ERR_COUNT ? err_table[e].name : "EIO";
}

wfs_err wfs_err_from_name(const char *name)
{
	for (unsigned i = 0; name && i < WFS_ERR_COUNT; i++)
		if (!strcmp(name, err_table[i].name))
			return (wfs_err)i;
	return WFS_EIO;
}

int wfs_err_http_status(wfs_err e) { return (unsigned)e < WFS_ERR_COUNT ? err_table[e].http : 500; }

wfs_err wfs_err_from_http_status(int status)
{
	if (status >= 200 && status < 300)
		return WFS_OK;
	switch (status) {
	case 401:
	case 403:
		return WFS_EPERM;
	case 404:
		return WFS_ENOENT;
	case 409:
		return WFS_EEXIST;
	case 412:
		return WFS_EPRECOND;
	case 413:
		return WFS_ETOOBIG;
	case 416:
		return WFS_ERANGE;
	case 504:
		return WFS_ETIMEDOUT;
	case 507:
		return WFS_ENOSPC;
	}
	return status >= 400 && status < 500 ? WFS_EINVAL : WFS_EUNAVAIL;
}

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
		return WFS_ENOSPC;
	case EDQUOT:
		return WFS_EQUOTA;
	case EROFS:
		return WFS_EREADONLY;
	case EPERM:
		return WFS_EPERM;
	case EACCES:
		return WFS_EACCES;
	case EFBIG:
		return WFS_ETOOBIG;
	case ETIMEDOUT:
		return WFS_ETIMEDOUT;
	case ENOTEMPTY:
		return WFS_ENOTEMPTY;
	case ENOTDIR:
		return WFS_ENOTDIR;
	case EISDIR:
		return WFS_EISDIR;
	case ENODATA:
		return WFS_ENODATA;
	case ENOSYS:
		return WFS_ENOSYS;
	case ENAMETOOLONG:
		return WFS_ENAMETOOLONG;
	case ENOLCK:
		return WFS_ENOLCK;
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return WFS_EUNAVAIL;
	default:
		return WFS_EIO;
	}
}
