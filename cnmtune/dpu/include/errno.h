/*
 * errno.h - error numbers (Linux values).  errno is one int shared by all
 * tasklets (defined in the runtime).
 */
#ifndef _DPUSYSCORE_ERRNO_H_
#define _DPUSYSCORE_ERRNO_H_

/* Last error set by a library function (shared by all tasklets). */
extern int errno;

#define EPERM 1
#define ENOENT 2
#define EINTR 4
#define EIO 5
#define EBADF 9
#define EAGAIN 11
#define ENOMEM 12
#define EFAULT 14
#define EBUSY 16
#define EEXIST 17
#define EINVAL 22
#define ENOSPC 28
#define EDOM 33
#define ERANGE 34
#define ENOSYS 38
#define EOVERFLOW 75
#define ETIMEDOUT 110
#define EALREADY 114 /* handshake_wait_for: the notifier already has a waiter */

#endif /* _DPUSYSCORE_ERRNO_H_ */
