/*
 * assert.h - run-time assertions.
 *
 * A failed assert prints "file:line: assertion failed: expr" (CNM_ECALL_PUTS)
 * and stops the DPU with CNM_FAULT_ASSERT.  Disabled by NDEBUG.
 * Not guarded, so it may be re-included with another NDEBUG setting.
 */
#include <macro_utils.h>

#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
/* Prints msg and stops the DPU with CNM_FAULT_ASSERT. */
void __cnm_assert_fail(const char *msg) __attribute__((noreturn));
#define assert(e)                                                                                          \
    ((e) ? (void)0 : __cnm_assert_fail(__FILE__ ":" __STR(__LINE__) ": assertion failed: " #e))
#endif

#if !defined(__cplusplus) && !defined(static_assert)
#define static_assert _Static_assert
#endif
