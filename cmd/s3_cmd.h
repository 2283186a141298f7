/* "weedfs s3": the S3 gateway and, beside it, the catalog listener. */
#ifndef WEEDFS_CMD_S3_CMD_H
#define WEEDFS_CMD_S3_CMD_H

int s3_main(int argc, char **argv);

#endif
