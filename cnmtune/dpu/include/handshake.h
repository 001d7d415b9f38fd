/*
 * handshake.h - one-to-one tasklet rendezvous (UPMEM-compatible).
 *
 * handshake_notify() blocks the caller until another tasklet calls
 * handshake_wait_for(caller's id); handshake_wait_for(n) blocks until n
 * notifies.  Whichever side arrives first waits for the other.
 */
#ifndef _DPUSYSCORE_HANDSHAKE_H_
#define _DPUSYSCORE_HANDSHAKE_H_

#include <errno.h>
#include <sysdef.h>
#include <cnm_ecall.h>

_Static_assert(EALREADY == CNM_ERR_EALREADY, "errno.h and cnm_ecall.h disagree on EALREADY");

/* Blocks until a tasklet waits for the caller with handshake_wait_for(me()). */
void handshake_notify(void);

/* Waits for tasklet `notifier` to notify; returns 0, or EALREADY if another tasklet already waits for it. */
int handshake_wait_for(sysname_t notifier);

#endif /* _DPUSYSCORE_HANDSHAKE_H_ */
