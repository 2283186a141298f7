/*
 * S3 error codes: the code string and HTTP status each one is answered with
 * (the S3 API reference's error table). Modules of the gateway return an
 * enum s3_err for their own answers; the server turns it into the XML error
 * body. What the client library and the filer report arrives as a wfs_err
 * and becomes an S3 code in one place, s3_err_of.
 */
#ifndef WEEDFS_S3_ERR_H
#define WEEDFS_S3_ERR_H

#include <stddef.h>
#include "err.h"

/* X(name, "Code", status) */
#define S3_ERRORS(X)                                                           \
	X(S3_OK, "OK", 200)                                                    \
	X(S3_ACCESS_DENIED, "AccessDenied", 403)                               \
	X(S3_ACCESS_FORBIDDEN, "AccessForbidden", 403)                         \
	X(S3_ACL_NOT_SUPPORTED, "AccessControlListNotSupported", 400)          \
	X(S3_AUTH_HEADER_MALFORMED, "AuthorizationHeaderMalformed", 400)       \
	X(S3_AUTH_QUERY_ERROR, "AuthorizationQueryParametersError", 400)       \
	X(S3_BAD_DIGEST, "BadDigest", 400)                                     \
	X(S3_BUCKET_EXISTS, "BucketAlreadyExists", 409)                        \
	X(S3_BUCKET_OWNED, "BucketAlreadyOwnedByYou", 409)                     \
	X(S3_BUCKET_NOT_EMPTY, "BucketNotEmpty", 409)                          \
	X(S3_COND_CONFLICT, "ConditionalRequestConflict", 409)                 \
	X(S3_ENTITY_TOO_SMALL, "EntityTooSmall", 400)                          \
	X(S3_ENTITY_TOO_LARGE, "EntityTooLarge", 400)                          \
	X(S3_EXPIRED_REQUEST, "AccessDenied", 403) /* "Request has expired" */ \
	X(S3_EXPIRED_TOKEN, "ExpiredToken", 400)                               \
	X(S3_INCOMPLETE_BODY, "IncompleteBody", 400)                           \
	X(S3_INTERNAL, "InternalError", 500)                                   \
	X(S3_INVALID_ACCESS_KEY, "InvalidAccessKeyId", 403)                    \
	X(S3_INVALID_ARGUMENT, "InvalidArgument", 400)                         \
	X(S3_INVALID_ACL_OWNERSHIP, "InvalidBucketAclWithObjectOwnership", 400) \
	X(S3_INVALID_BUCKET_NAME, "InvalidBucketName", 400)                    \
	X(S3_INVALID_BUCKET_STATE, "InvalidBucketState", 409)                  \
	X(S3_INVALID_TARGET_BUCKET_FOR_LOGGING, "InvalidTargetBucketForLogging", 400) \
	X(S3_INVALID_CHUNK_SIZE, "InvalidChunkSizeError", 400)                 \
	X(S3_INVALID_DIGEST, "InvalidDigest", 400)                             \
	X(S3_INVALID_PART, "InvalidPart", 400)                                 \
	X(S3_INVALID_POLICY, "InvalidPolicyDocument", 400)                     \
	X(S3_INVALID_PART_ORDER, "InvalidPartOrder", 400)                      \
	X(S3_INVALID_PART_NUMBER, "InvalidPartNumber", 416)                    \
	X(S3_INVALID_RANGE, "InvalidRange", 416)                               \
	X(S3_INVALID_REQUEST, "InvalidRequest", 400)                           \
	X(S3_INVALID_RETENTION, "InvalidRetentionPeriod", 400)                 \
	X(S3_INVALID_TAG, "InvalidTag", 400)                                   \
	X(S3_INVALID_TOKEN, "InvalidToken", 400)                               \
	X(S3_INVALID_URI, "InvalidURI", 400)                                   \
	X(S3_KEY_TOO_LONG, "KeyTooLongError", 400)                             \
	X(S3_KMS_NOT_FOUND, "KMS.NotFoundException", 400)                      \
	X(S3_MALFORMED_XML, "MalformedXML", 400)                               \
	X(S3_MALFORMED_ACL, "MalformedACLError", 400)                          \
	X(S3_MALFORMED_POST, "MalformedPOSTRequest", 400)                      \
	X(S3_MALFORMED_TRAILER, "MalformedTrailerError", 400)                  \
	X(S3_MALFORMED_POLICY, "MalformedPolicy", 400)                         \
	X(S3_MAX_MESSAGE_LENGTH, "MaxMessageLengthExceeded", 400)              \
	X(S3_MAX_POST_PRE_DATA, "MaxPostPreDataLengthExceededError", 400)      \
	X(S3_METADATA_TOO_LARGE, "MetadataTooLarge", 400)                      \
	X(S3_METHOD_NOT_ALLOWED, "MethodNotAllowed", 405)                      \
	X(S3_MISSING_CONTENT_LENGTH, "MissingContentLength", 411)              \
	X(S3_MISSING_SECURITY_HEADER, "MissingSecurityHeader", 400)            \
	X(S3_NO_SUCH_BUCKET, "NoSuchBucket", 404)                              \
	X(S3_NO_SUCH_CORS, "NoSuchCORSConfiguration", 404)                     \
	X(S3_NO_SUCH_KEY, "NoSuchKey", 404)                                    \
	X(S3_NO_LOCK_CONFIG, "ObjectLockConfigurationNotFoundError", 404)      \
	X(S3_NO_LOCK_CONFIG_OBJECT, "NoSuchObjectLockConfiguration", 404)      \
	X(S3_NO_SUCH_LIFECYCLE, "NoSuchLifecycleConfiguration", 404)           \
	X(S3_NO_SUCH_POLICY, "NoSuchBucketPolicy", 404)                        \
	X(S3_NO_SUCH_PAB, "NoSuchPublicAccessBlockConfiguration", 404)         \
	X(S3_NO_OWNERSHIP, "OwnershipControlsNotFoundError", 404)              \
	X(S3_NO_SUCH_TAG_SET, "NoSuchTagSet", 404)                             \
	X(S3_NO_SUCH_UPLOAD, "NoSuchUpload", 404)                              \
	X(S3_NO_SUCH_VERSION, "NoSuchVersion", 404)                            \
	X(S3_NO_SSE_CONFIG, "ServerSideEncryptionConfigurationNotFoundError", 404) \
	X(S3_NOT_IMPLEMENTED, "NotImplemented", 501)                           \
	X(S3_PRECONDITION_FAILED, "PreconditionFailed", 412)                   \
	X(S3_REQUEST_TIME_SKEWED, "RequestTimeTooSkewed", 403)                 \
	X(S3_HEADER_TOO_LARGE, "RequestHeaderSectionTooLarge", 400)            \
	X(S3_SERVICE_UNAVAILABLE, "ServiceUnavailable", 503)                   \
	X(S3_SIGNATURE_MISMATCH, "SignatureDoesNotMatch", 403)                 \
	X(S3_UNEXPECTED_CONTENT, "UnexpectedContent", 400)                     \
	X(S3_UNRESOLVABLE_EMAIL, "UnresolvableGrantByEmailAddress", 400)       \
	X(S3_SHA256_MISMATCH, "XAmzContentSHA256Mismatch", 400)

enum s3_err {
#define S3_ERR_ENUM(name, code, status) name,
	S3_ERRORS(S3_ERR_ENUM)
#undef S3_ERR_ENUM
		S3_ERR_COUNT
};

/* The S3 error code string ("NoSuchKey"); "InternalError" for an unknown value. */
const char *s3_err_code(enum s3_err e);
/* The HTTP status S3 answers e with (500 for an unknown value). */
int s3_err_status(enum s3_err e);
/*
 * The S3 code a failure of the filer or the client library is answered with
 * when the operation has nothing more specific to say (a missing key is each
 * operation's own NoSuchKey, NoSuchBucket...): PreconditionFailed for
 * WFS_EPRECOND, ServiceUnavailable (retry) for a filer or volume server
 * unreachable, timing out or busy, KeyTooLongError for a name over the
 * filer's limit, InternalError for anything else (WFS_ENOSPC included: S3
 * has no code for a full store; the message names it). Pure; any thread.
 */
enum s3_err s3_err_of(wfs_err e);
/* Writes the message of e into msg (when msglen > 0, always terminated) and returns e. */
enum s3_err s3_err_msg(char *msg, size_t msglen, enum s3_err e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
