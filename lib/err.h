/*
 * The project-wide error enum and its conversions at the boundaries.
 *
 * One wfs_err travels through every layer (the client library, the filer,
 * the mount, the gateway) and is converted once at each edge: to an errno at
 * fuse_reply_err, to an HTTP status and a JSON "code" in the servers (the
 * code is wfs_err_name: the filer's JSON API sends it and its client maps it
 * back with wfs_err_from_name), to S3's XML error in the gateway's mapper.
 */
#ifndef WEEDFS_ERR_H
#define WEEDFS_ERR_H

typedef enum wfs_err {
	WFS_OK = 0,
	WFS_EINVAL,    /* malformed input from a caller or a request */
	WFS_ENOENT,    /* no such needle, volume, file or key */
	WFS_EEXIST,    /* already exists */
	WFS_ETOOBIG,   /* a size limit was exceeded */
	WFS_ENOSPC,    /* no free slot, volume or disk full: the cluster is out of space */
	WFS_EREADONLY, /* the target is read-only */
	WFS_EPRECOND,  /* a precondition (etag, placement) does not hold */
	WFS_EUNAVAIL,  /* a peer is unreachable or not ready yet */
	WFS_ETIMEDOUT, /* a peer did not answer in time */
	WFS_ECORRUPT,  /* on-disk or on-wire data failed a check */
	WFS_EIO,       /* a system call on local storage failed */
	WFS_EPERM,     /* not permitted */
	WFS_ERANGE,    /* a Range header cannot be satisfied */
	WFS_EINTERNAL, /* a bug or an impossible state */
	WFS_ENOTEMPTY, /* a directory that must be empty is not */
	WFS_ENOTDIR,   /* a directory was needed (a parent, a rename target) */
	WFS_EISDIR,    /* a file was needed, a directory is there */
	WFS_ENODATA,   /* no such extended attribute */
	WFS_ENOSYS,    /* no such operation */
	WFS_ENAMETOOLONG, /* a name or path over its limit */
	WFS_EQUOTA,    /* a quota would be exceeded */
	WFS_EACCES,    /* the caller lacks the permission the mode bits require */
	WFS_EBUSY,     /* held by someone else (a lock): try again later */
	WFS_ENOLCK,    /* the lock table is full */
	WFS_ERR_COUNT
} wfs_err;

/* A short, static, lower-case description. Any thread. */
const char *wfs_strerror(wfs_err e);
/* The error's wire name, e.g. "ENOENT" (the JSON APIs' "code"); static. Any thread. */
const char *wfs_err_name(wfs_err e);
/* The error a wire name stands for; WFS_EIO for NULL or a name it does not know. */
wfs_err wfs_err_from_name(const char *name);
/* The HTTP status a server answers for e (200 for WFS_OK). Any thread. */
int wfs_err_http_status(wfs_err e);
/*
 * The nearest error for an HTTP answer's status without a code: 2xx WFS_OK,
 * 404 WFS_ENOENT, 409 WFS_EEXIST, 412 WFS_EPRECOND, 413 WFS_ETOOBIG, 416
 * WFS_ERANGE, 401/403 WFS_EPERM, 507 WFS_ENOSPC, 504 WFS_ETIMEDOUT, other 4xx
 * WFS_EINVAL, anything else (3xx, 5xx) WFS_EUNAVAIL.
 */
wfs_err wfs_err_from_http_status(int status);
/* A positive errno value for e (0 for WFS_OK). Any thread. */
int wfs_err_errno(wfs_err e);
/* Maps a positive errno from a failed system call to the nearest wfs_err. */
wfs_err wfs_err_from_errno(int e);

#endif
