/*
 * mram_unaligned.h - MRAM transfers with any MRAM address and size
 * (UPMEM-compatible, newer SDKs).  Implemented in the runtime on top of
 * aligned DMA.
 */
#ifndef _DPUSYSCORE_MRAM_UNALIGNED_H_
#define _DPUSYSCORE_MRAM_UNALIGNED_H_

#include <attributes.h>
#include <mram.h>

/* Reads nb_of_bytes (<= 2048) from any MRAM address into the 8-aligned WRAM buffer
 * (which needs nb_of_bytes + 16 bytes); returns the WRAM address of the first byte read. */
void *mram_read_unaligned(const __mram_ptr void *from, void *buffer, unsigned int nb_of_bytes);

/* Writes nb_of_bytes (<= 2048) from WRAM to any MRAM address; from and to must be equal modulo 8
 * (else CNM_FAULT_DMA).  Bytes around the range are preserved (read-modify-write, not atomic). */
void mram_write_unaligned(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes);

#endif /* _DPUSYSCORE_MRAM_UNALIGNED_H_ */
