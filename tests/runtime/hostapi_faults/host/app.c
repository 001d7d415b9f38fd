/* Host side of the misuse tests. argv[1] picks what goes wrong:
 *   ok               a correct run (prints the words after one launch)
 *   unknown-symbol   dpu_copy_to a symbol the DPU program does not define
 *   oversize         dpu_push_xfer 64 bytes into a 4-byte __host variable
 *   fault            a launch in which a tasklet faults
 *   deadlock         a launch in which a tasklet waits at a barrier forever
 *   ranks            DPU_ALLOCATE_ALL, DPU_RANK_FOREACH, dpu_alloc_ranks (prints what it sees)
 * Each prints the status as a number ("status N") before DPU_ASSERT handles it. */
#include <dpu.h>
#include <stdio.h>
#include <string.h>

#define DPU_BINARY "./bin/dpu_code"

/* Every rank of DPU_ALLOCATE_ALL and of dpu_alloc_ranks(1), with the DPUs DPU_FOREACH finds in each. */
static int walk_ranks(void)
{
    struct dpu_set_t set, rank, dpu;
    uint32_t r, d, nr_ranks, nr_dpus, seen;
    DPU_ASSERT(dpu_alloc(DPU_ALLOCATE_ALL, NULL, &set));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    printf("all: %u DPUs in %u ranks\n", nr_dpus, nr_ranks);
    DPU_RANK_FOREACH(set, rank, r) {
        DPU_ASSERT(dpu_get_nr_dpus(rank, &nr_dpus));
        seen = 0;
        DPU_FOREACH(rank, dpu, d) { seen = d + 1; }
        printf("rank %u: %u DPUs, %u iterated\n", r, nr_dpus, seen);
    }
    DPU_ASSERT(dpu_free(set));
    DPU_ASSERT(dpu_alloc_ranks(1, "backend=simulator", &set));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    printf("one rank: %u DPUs\n", nr_dpus);
    DPU_ASSERT(dpu_free(set));
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    struct dpu_set_t set, dpu;
    if (strcmp(mode, "ranks") == 0)
        return walk_ranks();
    uint32_t each, one = 1, words[NR_DPUS][8];
    uint8_t big[64] = { 0 };
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
    DPU_ASSERT(dpu_broadcast_to(set, "increment", 0, &one, sizeof one, DPU_XFER_DEFAULT));
    dpu_error_t status = DPU_OK;
    if (strcmp(mode, "unknown-symbol") == 0) {
        status = dpu_copy_to(set, "no_such_symbol", 0, &one, sizeof one);
    } else if (strcmp(mode, "oversize") == 0) {
        DPU_FOREACH(set, dpu) { DPU_ASSERT(dpu_prepare_xfer(dpu, big)); }
        status = dpu_push_xfer(set, DPU_XFER_TO_DPU, "fault", 0, sizeof big, DPU_XFER_DEFAULT);
    } else {
        uint32_t fault = strcmp(mode, "fault") == 0 ? 1 : strcmp(mode, "deadlock") == 0 ? 2 : 0;
        DPU_ASSERT(dpu_broadcast_to(set, "fault", 0, &fault, sizeof fault, DPU_XFER_DEFAULT));
        status = dpu_launch(set, DPU_SYNCHRONOUS);
    }
    printf("status %d\n", (int)status);
    fflush(stdout);
    DPU_ASSERT(status);
    DPU_FOREACH(set, dpu, each) { DPU_ASSERT(dpu_prepare_xfer(dpu, words[each])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "words", 0, sizeof words[0], DPU_XFER_DEFAULT));
    for (each = 0; each < NR_DPUS; each++)
        printf("DPU %u: %u %u\n", each, words[each][0], words[each][7]);
    DPU_ASSERT(dpu_free(set));
    return 0;
}
