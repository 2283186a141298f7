/* The project-wide error enum and its conversions at the boundaries. */
#ifndef WEEDFS_ERR_H
#define WEEDFS_ERR_H

typedef enum wfs_err {
	WFS_OK = 0,
	WFS_EINVAL,    /* malformed input from a caller or a request */
	WFS_ENOENT,    /* no such needle, volume, file or key */
	WFS_EEXIST,    /* already exists */
	WFS_ETOOBIG,   /* a size limit was exceeded */
	WFS_ENOSPC,    /* no free slot, volume full */
	WFS_EREADONLY, /* the target is read-only */
	WFS_EPRECOND,  /* a precondition (etag, placement) does not hold */
	WFS_EUNAVAIL,  /* a peer is unreachable or not ready yet */
	WFS_ETIMEDOUT, /* a peer did not answer in time */
	WFS_ECORRUPT,  /* on-disk or on-wire data failed a check */
	WFS_EIO,       /* a system call on local storage failed */
	WFS_EPERM,     /* not permitted */
	WFS_ERANGE,    /* a Range header cannot be satisfied */
	WFS_EINTERNAL, /* a bug or an impossible state */
	WFS_ERR_COUNT
} wfs_err;

/* A short, static, lower-case description. Any thread. */
const char *wfs_strerror(wfs_err e);
/* The HTTP status a server answers for e (200 for WFS_OK). Any thread. */
int wfs_err_http_status(wfs_err e);
/* A positive errno value for e (0 for WFS_OK). Any thread. */
int wfs_err_errno(wfs_err e);
/* Maps a positive errno from a failed system call to the nearest wfs_err. */
wfs_err wfs_err_from_errno(int e);

#endif
