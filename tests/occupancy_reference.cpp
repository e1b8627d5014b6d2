// CUDA's own occupancy answers, for checking gl.occupancy against them.
//
// Host-only C++: it needs nothing but cuda_occupancy.h, the occupancy calculator the CUDA
// Toolkit ships as a header (cudaOccMaxActiveBlocksPerMultiprocessor: the per-warp register
// allocation, the per-quarter-SM register files, the shared-memory allocation unit and the
// shared memory the runtime reserves per block). tests/test_kernels_occupancy_reference.py compiles it
// with nvcc (or g++ -I<toolkit>/include) and feeds it one configuration per line on stdin:
//
//   major minor max_threads_per_block max_threads_per_sm registers_per_sm warp_size
//   max_shared_per_block max_shared_per_sm reserved_shared_per_block
//   threads_per_block registers_per_thread shared_per_block
//
// the device fields taken from gpulab/data/sm_architecture.csv. For each it prints one line:
//
//   blocks limit_warps limit_blocks limit_registers limit_shared limiting_factors
//   shared_allocation_unit register_allocation_unit register_partitions max_blocks_per_sm
//
// (a limit of 2147483647, INT_MAX, means the resource does not limit; limiting_factors is the
// header's bit field: 1 warps, 2 registers, 4 shared memory, 8 blocks). The last four are the
// header's own per-architecture constants, so the test can check the table's columns too.
#include <cuda_occupancy.h>

#include <cstdio>

int main()
{
    int major, minor, maxThreadsPerBlock, maxThreadsPerSm, regsPerSm, warpSize;
    long long sharedPerBlock, sharedPerSm, reserved, shared;
    int threads, regs;
    while (std::scanf("%d %d %d %d %d %d %lld %lld %lld %d %d %lld", &major, &minor,
                      &maxThreadsPerBlock, &maxThreadsPerSm, &regsPerSm, &warpSize,
                      &sharedPerBlock, &sharedPerSm, &reserved, &threads, &regs,
                      &shared) == 12) {
        cudaOccDeviceProp prop;
        prop.computeMajor = major;
        prop.computeMinor = minor;
        prop.maxThreadsPerBlock = maxThreadsPerBlock;
        prop.maxThreadsPerMultiprocessor = maxThreadsPerSm;
        // The Programming Guide gives 64 K registers per block, as many as per SM, for every
        // compute capability in the table.
        prop.regsPerBlock = regsPerSm;
        prop.regsPerMultiprocessor = regsPerSm;
        prop.warpSize = warpSize;
        // The kernel is taken to have opted in to the largest block (cudaFuncSetAttribute),
        // which is what the table's max_shared_per_block_bytes gives.
        prop.sharedMemPerBlock = (size_t)sharedPerBlock;
        prop.sharedMemPerBlockOptin = (size_t)sharedPerBlock;
        prop.sharedMemPerMultiprocessor = (size_t)sharedPerSm;
        prop.reservedSharedMemPerBlock = (size_t)reserved;
        prop.numSms = 1;  // occupancy is per SM; the count only has to be positive

        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = maxThreadsPerBlock;
        attr.numRegs = regs;
        attr.sharedSizeBytes = (size_t)shared;  // static shared memory; no dynamic
        attr.partitionedGCConfig = PARTITIONED_GC_OFF;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_DEFAULT;
        attr.maxDynamicSharedSizeBytes = 0;
        attr.numBlockBarriers = 1;  // what a kernel compiled by nvcc reports

        cudaOccDeviceState state;  // default carveout: the SM's largest shared memory
        cudaOccResult result;
        cudaOccError status =
            cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, threads, 0);
        if (status != CUDA_OCC_SUCCESS) {
            std::printf("error %d\n", (int)status);
            continue;
        }
        int smemUnit = 0, regUnit = 0, partitions = 0, maxBlocks = 0;
        cudaOccSMemAllocationGranularity(&smemUnit, &prop);
        cudaOccRegAllocationGranularity(&regUnit, &prop);
        cudaOccSubPartitionsPerMultiprocessor(&partitions, &prop);
        cudaOccMaxBlocksPerMultiprocessor(&maxBlocks, &prop);
        std::printf("%d %d %d %d %d %u %d %d %d %d\n", result.activeBlocksPerMultiprocessor,
                    result.blockLimitWarps, result.blockLimitBlocks, result.blockLimitRegs,
                    result.blockLimitSharedMem, result.limitingFactors, smemUnit, regUnit,
                    partitions, maxBlocks);
        std::fflush(stdout);
    }
    return 0;
}
