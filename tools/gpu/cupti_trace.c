// A CUDA injection library (CUDA_INJECTION64_PATH=cupti_trace.so) that records every kernel's
// start and end through CUPTI's activity API, graph nodes included, and writes them as CSV
// (start_ns,end_ns,name,graph_node) to $DS4_CUPTI_OUT (default /tmp/cupti_kern.csv) at exit.
// It stands in for Nsight Systems where nsys is not installed: the decode graph's in-graph
// kernel durations and the gaps between dependent kernels (tools/gpu/nsys_gaps.py reads the
// CSV). Built by tools/gpu/cupti_build.sh against the PyPI CUPTI headers.
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

#define BUF_SIZE (8u << 20)
static FILE* out;

static void CUPTIAPI buf_requested(uint8_t** buf, size_t* size, size_t* max_records) {
    *buf = (uint8_t*)aligned_alloc(8, BUF_SIZE);
    *size = BUF_SIZE;
    *max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t* buf, size_t size, size_t valid) {
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity* rec = NULL;
    while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10* k = (const CUpti_ActivityKernel10*)rec;
            if (out) fprintf(out, "%llu,%llu,%s,%llu\n", (unsigned long long)k->start, (unsigned long long)k->end, k->name ? k->name : "?",
                             (unsigned long long)k->graphNodeId);
        }
    }
    free(buf);
}

static void finish(void) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (out) fclose(out);
    out = NULL;
}

int InitializeInjection(void) {
    const char* path = getenv("DS4_CUPTI_OUT");
    out = fopen(path ? path : "/tmp/cupti_kern.csv", "w");
    if (!out) return 0;
    fprintf(out, "start_ns,end_ns,name,graph_node\n");
    if (cuptiActivityRegisterCallbacks(buf_requested, buf_completed) != CUPTI_SUCCESS) return 0;
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    atexit(finish);
    return 1;
}
