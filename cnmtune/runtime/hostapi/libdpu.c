/*
 * cnmtune's UPMEM host library: the SDK's host API (include/dpu.h) on cnmtune's DPU simulator.
 *
 * Each allocated DPU set starts one resident simulator process (`python -m
 * cnmtune.runtime.hostapi.server`, the Python of CNMTUNE_PYTHON or the one this library was
 * built for) on a socket pair, and every call on the set becomes one request frame to it
 * (protocol.py documents the frames). The server answers with the simulated seconds of the call
 * and, on a failure, the SDK's status code and what went wrong; dpu_error_to_string returns both.
 *
 * The host clock: with CNMTUNE_HOST_CLOCK=simulated, gettimeofday and clock_gettime (defined here,
 * so they replace libc's in a program linked with this library) read the real clock minus the
 * wall time spent in calls to the simulator plus the simulated time of those calls: a host that
 * times its DPU steps with its own clock prints simulated times, its own work stays real.
 */
#define _GNU_SOURCE /* syscall, pipe2-era flags, SOCK_CLOEXEC */
#define gettimeofday cnm_libc_gettimeofday /* keep libc's prototype out of the way of ours below */
#include <sys/time.h>
#undef gettimeofday

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dpu.h>
#include <dpu_probe.h>

#include "../upmem/wire.h"

#ifndef CNMTUNE_DEFAULT_PYTHON
#define CNMTUNE_DEFAULT_PYTHON "python3"
#endif

extern char **environ;

enum { OP_ALLOC = 1, OP_LOAD, OP_COPY_TO, OP_COPY_FROM, OP_PUSH_TO, OP_PUSH_FROM, OP_BROADCAST, OP_LAUNCH, OP_LOG,
       OP_QUIT };

struct cnm_set;

struct dpu_t {
    struct cnm_set *set;
    uint32_t index;
    void *xfer; /* the buffer of dpu_prepare_xfer, until the next dpu_push_xfer */
};

struct dpu_rank_t {
    struct cnm_set *set;
    uint32_t index, first, count;
};

/* One allocated set: its server, its DPUs and ranks. Kept after dpu_free (marked closed) so a
 * stale handle gets DPU_ERR_INVALID_DPU_SET rather than a crash. */
struct cnm_set {
    int fd;
    pid_t server;
    bool open, loaded;
    uint32_t nr_dpus, nr_ranks;
    struct dpu_t *dpus;
    struct dpu_rank_t *ranks;
    struct dpu_rank_t **rank_list;
    uint64_t pending_ns;      /* an asynchronous launch's simulated time, not yet waited for */
    int64_t launched_at_ns;   /* host clock (virtual, monotonic) when that launch returned */
};

/* ------------------------------------------------------------------ errors */

static const char *const status_names[] = {
    "DPU_OK", "DPU_ERR_INTERNAL", "DPU_ERR_SYSTEM", "DPU_ERR_DRIVER", "DPU_ERR_ALLOCATION", "DPU_ERR_INVALID_DPU_SET",
    "DPU_ERR_INVALID_THREAD_ID", "DPU_ERR_INVALID_NOTIFY_ID", "DPU_ERR_INVALID_WRAM_ACCESS",
    "DPU_ERR_INVALID_IRAM_ACCESS", "DPU_ERR_INVALID_MRAM_ACCESS", "DPU_ERR_INVALID_SYMBOL_ACCESS", "DPU_ERR_MRAM_BUSY",
    "DPU_ERR_TRANSFER_ALREADY_SET", "DPU_ERR_DIFFERENT_DPU_PROGRAMS", "DPU_ERR_CORRUPTED_MEMORY",
    "DPU_ERR_DPU_DISABLED", "DPU_ERR_DPU_ALREADY_RUNNING", "DPU_ERR_INVALID_MEMORY_TRANSFER",
    "DPU_ERR_INVALID_LAUNCH_POLICY", "DPU_ERR_DPU_FAULT", "DPU_ERR_ELF_INVALID_FILE", "DPU_ERR_ELF_NO_SUCH_FILE",
    "DPU_ERR_ELF_NO_SUCH_SECTION", "DPU_ERR_TIMEOUT", "DPU_ERR_INVALID_PROFILE", "DPU_ERR_UNKNOWN_SYMBOL",
    "DPU_ERR_LOG_FORMAT", "DPU_ERR_LOG_CONTEXT_MISSING", "DPU_ERR_LOG_BUFFER_TOO_SMALL",
};
#define NR_STATUSES (sizeof status_names / sizeof status_names[0])

static dpu_error_t last_status = DPU_OK;
static char last_detail[1024];

/* Record what went wrong (for dpu_error_to_string) and return `status`. */
static dpu_error_t fail(dpu_error_t status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_detail, sizeof last_detail, fmt, args);
    va_end(args);
    last_status = status;
    return status;
}

char *dpu_error_to_string(dpu_error_t status)
{
    const char *name = (unsigned)status < NR_STATUSES ? status_names[status] : "unknown DPU status";
    size_t n = strlen(name) + strlen(last_detail) + 3;
    char *text = malloc(n);
    if (!text)
        return NULL;
    if (status == last_status && status != DPU_OK && last_detail[0])
        snprintf(text, n, "%s: %s", name, last_detail);
    else
        snprintf(text, n, "%s", name);
    return text;
}

/* ------------------------------------------------------------------ the host clock */

static bool clock_simulated = false;
static int64_t wall_in_calls_ns = 0; /* real time spent waiting for the simulator */
static int64_t simulated_ns = 0;     /* simulated time of those calls */

static int raw_clock_gettime(clockid_t clock, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, clock, ts);
}

static int64_t raw_ns(clockid_t clock)
{
    struct timespec ts;
    raw_clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t clock_shift_ns(void)
{
    return clock_simulated ? simulated_ns - wall_in_calls_ns : 0;
}

static bool shifted(clockid_t clock)
{
    return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC || clock == CLOCK_MONOTONIC_RAW
        || clock == CLOCK_BOOTTIME || clock == CLOCK_REALTIME_COARSE || clock == CLOCK_MONOTONIC_COARSE;
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    int rc = raw_clock_gettime(clock, ts);
    if (rc != 0 || !shifted(clock) || !clock_simulated)
        return rc;
    int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + clock_shift_ns();
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
    return 0;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    (void)tz;
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0 && tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

static int64_t virtual_now_ns(void)
{
    return raw_ns(CLOCK_MONOTONIC) + clock_shift_ns();
}

/* ------------------------------------------------------------------ the simulator process */

/* Send (`sending`) or receive exactly n bytes; -1 when the simulator process went away. */
static int move_all(int fd, uint8_t *p, size_t n, bool sending)
{
    while (n) {
        ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* A reply: the simulated nanoseconds of the call and the rest of its fields. */
struct reply {
    uint8_t *payload;
    struct cursor fields;
    uint64_t sim_ns;
};

/* Data moved between the host's own buffers and the socket without a copy: `count` buffers of
 * `length` bytes, sent after a request's fields or received after an ok reply's nanoseconds. */
struct bulk {
    void *const *buffers;
    uint32_t count;
    size_t length;
};

static const struct bulk NO_BULK = { NULL, 0, 0 };

static uint32_t le32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static int send_request(int fd, const struct out *request, struct bulk sent)
{
    uint32_t n = (uint32_t)(request->len + (size_t)sent.count * sent.length);
    uint8_t head[4] = { (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24) };
    int ok = move_all(fd, head, 4, true) == 0 && move_all(fd, request->buf, request->len, true) == 0;
    for (uint32_t i = 0; ok && i < sent.count; i++)
        ok = move_all(fd, sent.buffers[i], sent.length, true) == 0;
    return ok;
}

/* The reply to a request: an ok reply with `received` bulk goes straight into its buffers. */
static int read_reply(int fd, struct bulk received, struct reply *reply, uint8_t *status)
{
    uint8_t head[8];
    if (move_all(fd, head, 4, false) != 0)
        return 0;
    uint32_t n = le32(head);
    if (n < 1 || move_all(fd, status, 1, false) != 0)
        return 0;
    if (*status == 0 && received.count) {
        if (n != 1 + 8 + (size_t)received.count * received.length || move_all(fd, head, 8, false) != 0)
            return 0;
        reply->sim_ns = (uint64_t)le32(head) | (uint64_t)le32(head + 4) << 32;
        for (uint32_t i = 0; i < received.count; i++)
            if (move_all(fd, received.buffers[i], received.length, false) != 0)
                return 0;
        return 1;
    }
    reply->payload = malloc(n);
    if (!reply->payload || move_all(fd, reply->payload, n - 1, false) != 0)
        return 0;
    reply->fields = (struct cursor){ reply->payload, n - 1, 0 };
    if (*status == 0)
        reply->sim_ns = get_u64(&reply->fields);
    return 1;
}

/* Send one request (and `sent`) and wait for its reply (filling `received`); the wait counts as
 * simulated time on the host clock. */
static dpu_error_t call(struct cnm_set *set, struct out *request, struct bulk sent, struct bulk received,
                        struct reply *reply)
{
    uint8_t status = 1;
    memset(reply, 0, sizeof *reply);
    int64_t start = raw_ns(CLOCK_MONOTONIC);
    int ok = send_request(set->fd, request, sent) && read_reply(set->fd, received, reply, &status);
    wall_in_calls_ns += raw_ns(CLOCK_MONOTONIC) - start;
    free(request->buf);
    request->buf = NULL;
    if (!ok) {
        free(reply->payload);
        reply->payload = NULL;
        return fail(DPU_ERR_SYSTEM, "cnmtune's simulator process (pid %d) went away or broke the protocol; its "
                    "last words are above", (int)set->server);
    }
    if (status == 0)
        return DPU_OK;
    uint32_t code = get_u32(&reply->fields);
    int len = (int)reply->fields.left;
    dpu_error_t err = fail(code < NR_STATUSES && code ? (dpu_error_t)code : DPU_ERR_INTERNAL, "%.*s", len,
                           (const char *)reply->fields.p);
    free(reply->payload);
    reply->payload = NULL;
    return err;
}

/* A call whose only result is its simulated time, which the host clock then shows. */
static dpu_error_t call_timed(struct cnm_set *set, struct out *request, struct bulk sent)
{
    struct reply reply;
    dpu_error_t err = call(set, request, sent, NO_BULK, &reply);
    if (err == DPU_OK)
        simulated_ns += (int64_t)reply.sim_ns;
    free(reply.payload);
    return err;
}

static const char *python(void)
{
    const char *chosen = getenv("CNMTUNE_PYTHON");
    return chosen && *chosen ? chosen : CNMTUNE_DEFAULT_PYTHON;
}

static dpu_error_t start_server(struct cnm_set *set)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        return fail(DPU_ERR_SYSTEM, "socketpair: %s", strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", 0, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 3); /* dup2 clears close-on-exec on fd 3 */
    char *argv[] = { (char *)python(), "-m", "cnmtune.runtime.hostapi.server", "--fd", "3", NULL };
    int rc = posix_spawnp(&set->server, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return fail(DPU_ERR_SYSTEM, "cannot start cnmtune's simulator with %s: %s (set CNMTUNE_PYTHON to the Python "
                    "that has cnmtune installed)", argv[0], strerror(rc));
    }
    set->fd = fds[0];
    return DPU_OK;
}

static void clock_option(void)
{
    const char *mode = getenv("CNMTUNE_HOST_CLOCK");
    clock_simulated = mode && strcmp(mode, "simulated") == 0;
}

/* ------------------------------------------------------------------ sets */

static dpu_error_t allocate(uint32_t count, uint32_t by_ranks, const char *profile, struct dpu_set_t *dpu_set)
{
    if (!dpu_set)
        return fail(DPU_ERR_INVALID_DPU_SET, "no place to store the DPU set (NULL)");
    clock_option();
    struct cnm_set *set = calloc(1, sizeof *set);
    if (!set)
        return fail(DPU_ERR_SYSTEM, "out of memory");
    dpu_error_t err = start_server(set);
    if (err != DPU_OK) {
        free(set);
        return err;
    }
    struct out request = { 0 };
    put(&request, (uint8_t[]){ OP_ALLOC }, 1);
    put_u32(&request, count);
    put_u32(&request, by_ranks);
    put_text(&request, profile ? profile : "");
    put_u32(&request, (uint32_t)getpid());
    struct reply reply;
    set->open = true;
    err = call(set, &request, NO_BULK, NO_BULK, &reply);
    uint32_t per_rank = 0;
    if (err == DPU_OK) {
        set->nr_dpus = get_u32(&reply.fields);
        per_rank = get_u32(&reply.fields);
        free(reply.payload);
    }
    if (err == DPU_OK && (!set->nr_dpus || !per_rank))
        err = fail(DPU_ERR_INTERNAL, "the simulator allocated no DPU");
    if (err == DPU_OK) {
        set->nr_ranks = (set->nr_dpus + per_rank - 1) / per_rank;
        set->dpus = calloc(set->nr_dpus, sizeof *set->dpus);
        set->ranks = calloc(set->nr_ranks, sizeof *set->ranks);
        set->rank_list = calloc(set->nr_ranks, sizeof *set->rank_list);
        if (!set->dpus || !set->ranks || !set->rank_list)
            err = fail(DPU_ERR_SYSTEM, "out of memory");
    }
    if (err != DPU_OK) {
        close(set->fd);
        waitpid(set->server, NULL, 0);
        free(set->dpus), free(set->ranks), free(set->rank_list), free(set);
        return err;
    }
    for (uint32_t d = 0; d < set->nr_dpus; d++)
        set->dpus[d] = (struct dpu_t){ set, d, NULL };
    for (uint32_t r = 0; r < set->nr_ranks; r++) {
        uint32_t first = r * per_rank;
        set->ranks[r] = (struct dpu_rank_t){ set, r, first, set->nr_dpus - first < per_rank ? set->nr_dpus - first
                                                                                             : per_rank };
        set->rank_list[r] = &set->ranks[r];
    }
    dpu_set->kind = DPU_SET_RANKS;
    dpu_set->list.nr_ranks = set->nr_ranks;
    dpu_set->list.ranks = set->rank_list;
    return DPU_OK;
}

dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set)
{
    return allocate(nr_dpus, 0, profile, dpu_set);
}

dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char *profile, struct dpu_set_t *dpu_set)
{
    return allocate(nr_ranks, 1, profile, dpu_set);
}

/* The DPUs a handle stands for: its set and the range [first, first + count). */
static dpu_error_t resolve(struct dpu_set_t handle, struct cnm_set **set, uint32_t *first, uint32_t *count)
{
    if (handle.kind == DPU_SET_DPU && handle.dpu) {
        *set = handle.dpu->set, *first = handle.dpu->index, *count = 1;
    } else if (handle.kind == DPU_SET_RANKS && handle.list.nr_ranks && handle.list.ranks && handle.list.ranks[0]) {
        struct dpu_rank_t *low = handle.list.ranks[0], *high = handle.list.ranks[handle.list.nr_ranks - 1];
        *set = low->set, *first = low->first, *count = high->first + high->count - low->first;
    } else {
        return fail(DPU_ERR_INVALID_DPU_SET, "not a DPU set from dpu_alloc, DPU_FOREACH or DPU_RANK_FOREACH");
    }
    if (!(*set)->open)
        return fail(DPU_ERR_INVALID_DPU_SET, "the DPU set was freed");
    return DPU_OK;
}

static dpu_error_t wait_launch(struct cnm_set *set);

/* resolve() for a call that needs a loaded program and finished DPUs (as the SDK queues it after a launch). */
static dpu_error_t ready(struct dpu_set_t handle, const char *call_name, struct cnm_set **set, uint32_t *first,
                         uint32_t *count)
{
    dpu_error_t err = resolve(handle, set, first, count);
    if (err != DPU_OK)
        return err;
    if (!(*set)->loaded)
        return fail(DPU_ERR_INVALID_DPU_SET, "%s before dpu_load: no program loaded", call_name);
    return wait_launch(*set);
}

dpu_error_t dpu_free(struct dpu_set_t dpu_set)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = resolve(dpu_set, &set, &first, &count);
    if (err != DPU_OK)
        return err;
    if (dpu_set.kind != DPU_SET_RANKS || first != 0 || count != set->nr_dpus)
        return fail(DPU_ERR_INVALID_DPU_SET, "dpu_free takes the set dpu_alloc returned, not a DPU or rank of it");
    wait_launch(set);
    struct out request = { 0 };
    put(&request, (uint8_t[]){ OP_QUIT }, 1);
    err = call_timed(set, &request, NO_BULK);
    close(set->fd);
    waitpid(set->server, NULL, 0);
    set->open = false;
    return err;
}

dpu_error_t dpu_get_nr_ranks(struct dpu_set_t dpu_set, uint32_t *nr_ranks)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = resolve(dpu_set, &set, &first, &count);
    if (err == DPU_OK)
        *nr_ranks = dpu_set.kind == DPU_SET_DPU ? 1 : dpu_set.list.nr_ranks;
    return err;
}

dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus)
{
    struct cnm_set *set;
    uint32_t first;
    return resolve(dpu_set, &set, &first, nr_dpus);
}

struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t *handle)
{
    struct dpu_set_rank_iterator_t it = { handle, 0, 0, false, { 0 } };
    dpu_set_rank_iterator_next(&it);
    it.count = 0;
    return it;
}

void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t *it)
{
    struct dpu_set_t *handle = it->set;
    it->count += it->has_next;
    it->has_next = false;
    if (handle->kind == DPU_SET_RANKS && it->next_idx < handle->list.nr_ranks) {
        it->next.kind = DPU_SET_RANKS;
        it->next.list.nr_ranks = 1;
        it->next.list.ranks = &handle->list.ranks[it->next_idx++];
        it->has_next = true;
    } else if (handle->kind == DPU_SET_DPU && it->next_idx == 0) {
        it->next = *handle;
        it->next_idx = 1;
        it->has_next = true;
    }
}

struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t *handle)
{
    struct dpu_set_dpu_iterator_t it = { { handle, 0, 0, false, { 0 } }, 0, 0, false, { 0 } };
    struct cnm_set *set;
    uint32_t first, count;
    if (resolve(*handle, &set, &first, &count) == DPU_OK) {
        it.rank_iterator.next_idx = first; /* the iterator walks DPU indexes [first, first + count) */
        it.rank_iterator.count = first + count;
        it.next.kind = DPU_SET_DPU;
        it.next.dpu = &set->dpus[first];
        it.has_next = true;
    }
    return it;
}

void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t *it)
{
    struct dpu_t *dpu = it->next.dpu;
    it->count++;
    if (dpu && dpu->index + 1 < it->rank_iterator.count) {
        it->next.dpu = &dpu->set->dpus[dpu->index + 1];
    } else {
        it->has_next = false;
    }
}

/* ------------------------------------------------------------------ program and launch */

dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path, struct dpu_program_t **program)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = resolve(dpu_set, &set, &first, &count);
    if (err != DPU_OK)
        return err;
    if (first != 0 || count != set->nr_dpus)
        return fail(DPU_ERR_INVALID_DPU_SET, "cnmtune loads one program into a whole DPU set (dpu_load on a DPU or "
                    "rank of it)");
    if (!binary_path)
        return fail(DPU_ERR_ELF_NO_SUCH_FILE, "dpu_load: no path (NULL)");
    if ((err = wait_launch(set)) != DPU_OK)
        return err;
    char *absolute = realpath(binary_path, NULL);
    struct out request = { 0 };
    put(&request, (uint8_t[]){ OP_LOAD }, 1);
    put_text(&request, absolute ? absolute : binary_path);
    free(absolute);
    err = call_timed(set, &request, NO_BULK);
    set->loaded = set->loaded || err == DPU_OK;
    if (program)
        *program = NULL; /* no program handle: symbols are reached by name */
    return err;
}

static dpu_error_t wait_launch(struct cnm_set *set)
{
    if (set->pending_ns) {
        int64_t end = set->launched_at_ns + (int64_t)set->pending_ns, now = virtual_now_ns();
        if (end > now) /* the host waits for the DPUs: its clock moves to their end */
            simulated_ns += end - now;
        set->pending_ns = 0;
    }
    return DPU_OK;
}

dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = ready(dpu_set, "dpu_launch", &set, &first, &count);
    if (err != DPU_OK)
        return err;
    if (policy != DPU_SYNCHRONOUS && policy != DPU_ASYNCHRONOUS)
        return fail(DPU_ERR_INVALID_LAUNCH_POLICY, "launch policy %d", (int)policy);
    if (first != 0 || count != set->nr_dpus)
        return fail(DPU_ERR_INVALID_DPU_SET, "cnmtune's simulator launches whole DPU sets (this is DPUs %u..%u of %u)",
                    first, first + count - 1, set->nr_dpus);
    struct out request = { 0 };
    put(&request, (uint8_t[]){ OP_LAUNCH }, 1);
    struct reply reply;
    err = call(set, &request, NO_BULK, NO_BULK, &reply);
    free(reply.payload);
    if (err != DPU_OK)
        return err;
    if (policy == DPU_SYNCHRONOUS) {
        simulated_ns += (int64_t)reply.sim_ns;
    } else {
        set->pending_ns = reply.sim_ns;
        set->launched_at_ns = virtual_now_ns();
    }
    return DPU_OK;
}

dpu_error_t dpu_status(struct dpu_set_t dpu_set, bool *done, bool *fault)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = resolve(dpu_set, &set, &first, &count);
    if (err != DPU_OK)
        return err;
    if (fault)
        *fault = false; /* a fault is reported by dpu_launch itself */
    if (done)
        *done = !set->pending_ns || virtual_now_ns() >= set->launched_at_ns + (int64_t)set->pending_ns;
    if (done && *done)
        set->pending_ns = 0;
    return DPU_OK;
}

dpu_error_t dpu_sync(struct dpu_set_t dpu_set)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = resolve(dpu_set, &set, &first, &count);
    return err == DPU_OK ? wait_launch(set) : err;
}

/* ------------------------------------------------------------------ transfers */

static void put_request_head(struct out *request, int op, const char *symbol, uint32_t offset)
{
    put(request, (uint8_t[]){ (uint8_t)op }, 1);
    put_text(request, symbol);
    put_u32(request, offset);
}

/* One buffer written to DPUs [first, first + count): a copy to one DPU, else a broadcast. */
static dpu_error_t write_all(struct dpu_set_t dpu_set, const char *call_name, const char *symbol, uint32_t offset,
                             const void *src, size_t length)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = ready(dpu_set, call_name, &set, &first, &count);
    if (err != DPU_OK)
        return err;
    if (!symbol || (!src && length))
        return fail(DPU_ERR_INVALID_MEMORY_TRANSFER, "%s: NULL symbol name or buffer", call_name);
    struct out request = { 0 };
    put_request_head(&request, count == 1 ? OP_COPY_TO : OP_BROADCAST, symbol, offset);
    put_u32(&request, first);
    put_u32(&request, count);
    put_u32(&request, (uint32_t)length);
    void *data = (void *)src;
    return call_timed(set, &request, (struct bulk){ &data, 1, length });
}

dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src,
                        size_t length)
{
    return write_all(dpu_set, "dpu_copy_to", symbol_name, symbol_offset, src, length);
}

dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src,
                             size_t length, dpu_xfer_flags_t flags)
{
    (void)flags;
    return write_all(dpu_set, "dpu_broadcast_to", symbol_name, symbol_offset, src, length);
}

dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, void *dst,
                          size_t length)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = ready(dpu_set, "dpu_copy_from", &set, &first, &count);
    if (err != DPU_OK)
        return err;
    if (count != 1)
        return fail(DPU_ERR_INVALID_DPU_SET, "dpu_copy_from reads one DPU (a DPU of DPU_FOREACH), not %u", count);
    if (!symbol_name || (!dst && length))
        return fail(DPU_ERR_INVALID_MEMORY_TRANSFER, "dpu_copy_from: NULL symbol name or buffer");
    struct out request = { 0 };
    put_request_head(&request, OP_COPY_FROM, symbol_name, symbol_offset);
    put_u32(&request, 1);
    put_u32(&request, first);
    put_u32(&request, (uint32_t)length);
    struct reply reply;
    if ((err = call(set, &request, NO_BULK, (struct bulk){ &dst, 1, length }, &reply)) == DPU_OK)
        simulated_ns += (int64_t)reply.sim_ns;
    free(reply.payload);
    return err;
}

dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = resolve(dpu_set, &set, &first, &count);
    if (err != DPU_OK)
        return err;
    for (uint32_t d = first; d < first + count; d++)
        set->dpus[d].xfer = buffer;
    return DPU_OK;
}

dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name, uint32_t symbol_offset,
                          size_t length, dpu_xfer_flags_t flags)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = ready(dpu_set, "dpu_push_xfer", &set, &first, &count);
    if (err != DPU_OK)
        return err;
    if (xfer != DPU_XFER_TO_DPU && xfer != DPU_XFER_FROM_DPU)
        return fail(DPU_ERR_INVALID_MEMORY_TRANSFER, "dpu_push_xfer: direction %d", (int)xfer);
    if (!symbol_name)
        return fail(DPU_ERR_INVALID_MEMORY_TRANSFER, "dpu_push_xfer: NULL symbol name");
    void **buffers = malloc(sizeof *buffers * (count ? count : 1));
    if (!buffers)
        return fail(DPU_ERR_SYSTEM, "out of memory");
    uint32_t prepared = 0;
    struct out request = { 0 };
    put_request_head(&request, xfer == DPU_XFER_TO_DPU ? OP_PUSH_TO : OP_PUSH_FROM, symbol_name, symbol_offset);
    for (uint32_t d = first; d < first + count; d++)
        if (set->dpus[d].xfer)
            buffers[prepared++] = set->dpus[d].xfer;
    put_u32(&request, prepared);
    for (uint32_t d = first; d < first + count; d++)
        if (set->dpus[d].xfer)
            put_u32(&request, d);
    put_u32(&request, (uint32_t)length);
    if (xfer == DPU_XFER_TO_DPU) { /* the same host buffer for every DPU: the SDK reads it from host memory once */
        bool shared = prepared > 1;
        for (uint32_t k = 1; k < prepared; k++)
            shared = shared && buffers[k] == buffers[0];
        put_u32(&request, shared);
    }
    struct bulk data = { buffers, prepared, length };
    struct reply reply;
    err = xfer == DPU_XFER_TO_DPU ? call(set, &request, data, NO_BULK, &reply)
                                  : call(set, &request, NO_BULK, data, &reply);
    if (err == DPU_OK)
        simulated_ns += (int64_t)reply.sim_ns;
    free(reply.payload);
    free(buffers);
    if (!(flags & DPU_XFER_NO_RESET))
        for (uint32_t d = first; d < first + count; d++)
            set->dpus[d].xfer = NULL;
    return err;
}

/* ------------------------------------------------------------------ logs */

dpu_error_t dpu_log_read(struct dpu_set_t dpu_set, FILE *stream)
{
    struct cnm_set *set;
    uint32_t first, count;
    dpu_error_t err = ready(dpu_set, "dpu_log_read", &set, &first, &count);
    for (uint32_t d = first; err == DPU_OK && d < first + count; d++) {
        struct out request = { 0 };
        put(&request, (uint8_t[]){ OP_LOG }, 1);
        put_u32(&request, d);
        struct reply reply;
        if ((err = call(set, &request, NO_BULK, NO_BULK, &reply)) != DPU_OK)
            break;
        uint32_t len;
        const uint8_t *text = get_blob(&reply.fields, &len);
        if (text && len)
            fwrite(text, 1, len, stream ? stream : stdout);
        free(reply.payload);
    }
    return err;
}

/* ------------------------------------------------------------------ probes (dpu_probe.h documents the values) */

/* The probes' clock: the host's monotonic clock with every DPU call at its simulated duration
 * (the host clock of CNMTUNE_HOST_CLOCK=simulated, in either clock mode). */
static int64_t probe_now_ns(void)
{
    return raw_ns(CLOCK_MONOTONIC) + simulated_ns - wall_in_calls_ns;
}

static const char *probe_name(const struct dpu_probe_t *probe)
{
    return probe->name ? probe->name : "(unnamed)";
}

dpu_error_t dpu_probe_init(const char *name, struct dpu_probe_t *probe)
{
    if (!probe)
        return fail(DPU_ERR_INTERNAL, "dpu_probe_init: no probe (NULL)");
    *probe = (struct dpu_probe_t){ .name = name };
    return DPU_OK;
}

dpu_error_t dpu_probe_deinit(struct dpu_probe_t *probe)
{
    if (!probe)
        return fail(DPU_ERR_INTERNAL, "dpu_probe_deinit: no probe (NULL)");
    *probe = (struct dpu_probe_t){ 0 };
    return DPU_OK;
}

dpu_error_t dpu_probe_start(struct dpu_probe_t *probe)
{
    if (!probe)
        return fail(DPU_ERR_INTERNAL, "dpu_probe_start: no probe (NULL)");
    if (probe->running)
        return fail(DPU_ERR_INTERNAL, "dpu_probe_start: probe '%s' is already started", probe_name(probe));
    probe->running = true;
    probe->started_ns = probe_now_ns();
    return DPU_OK;
}

dpu_error_t dpu_probe_stop(struct dpu_probe_t *probe)
{
    if (!probe)
        return fail(DPU_ERR_INTERNAL, "dpu_probe_stop: no probe (NULL)");
    if (!probe->running)
        return fail(DPU_ERR_INTERNAL, "dpu_probe_stop: probe '%s' was not started", probe_name(probe));
    probe->running = false;
    probe->measured_ns += probe_now_ns() - probe->started_ns;
    probe->intervals++;
    return DPU_OK;
}

dpu_error_t dpu_probe_get(struct dpu_probe_t *probe, dpu_probe_option_t option, dpu_probe_statistics_t statistics,
                          double *value)
{
    static bool energy_noted = false;
    if (!probe || !value)
        return fail(DPU_ERR_INTERNAL, "dpu_probe_get: no probe or no place for the value (NULL)");
    if (statistics != DPU_AVERAGE && statistics != DPU_ACCUMULATE)
        return fail(DPU_ERR_INTERNAL, "dpu_probe_get: statistics %d (DPU_AVERAGE or DPU_ACCUMULATE)", (int)statistics);
    if (option == DPU_ENERGY) {
        if (!energy_noted) /* once: a program may read energy after every launch */
            fprintf(stderr, "cnmtune: dpu_probe_get(DPU_ENERGY) reads 0 J: cnmtune's simulator measures no energy\n");
        energy_noted = true;
        *value = 0.0;
        return DPU_OK;
    }
    if (option != DPU_TIME)
        return fail(DPU_ERR_INTERNAL, "dpu_probe_get: option %d (DPU_ENERGY or DPU_TIME)", (int)option);
    double total_s = (double)probe->measured_ns / 1e9;
    *value = statistics == DPU_ACCUMULATE ? total_s : probe->intervals ? total_s / (double)probe->intervals : 0.0;
    return DPU_OK;
}
