/*
 * dpuconst.h - DPU constants (older SDK header name); see dpu_characteristics.h.
 */
#ifndef _DPUSYSCORE_DPUCONST_H_
#define _DPUSYSCORE_DPUCONST_H_

#include <dpu_characteristics.h>

#endif /* _DPUSYSCORE_DPUCONST_H_ */
