/*
 * sysdef.h - basic system types (UPMEM-compatible).
 */
#ifndef _DPUSYSCORE_SYSDEF_H_
#define _DPUSYSCORE_SYSDEF_H_

/* A tasklet (hardware thread) id, 0..NR_TASKLETS-1. */
typedef unsigned int sysname_t;

/* Same as sysname_t (older SDK name). */
typedef unsigned int thread_id_t;

#endif /* _DPUSYSCORE_SYSDEF_H_ */
