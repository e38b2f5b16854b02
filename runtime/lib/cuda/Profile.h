//===- Profile.h - Each entry point's GPU time, from CUDA events -*- C++
//-*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// INFIR2_PROFILE=gpu: the dispatcher marks each call's start on its stream
// (the backend's `mark`), an event recorded without waiting; when the host
// next waits for the stream, the time from each mark to the next (the last
// one's: to the wait) is the GPU time of that call, with whatever the
// trainer queued after it (uploads, zeroing, the read-back's copies),
// summed per entry point and printed at exit. Work queued before a step's
// first call is not counted. Unlike INFIR2_PROFILE=1 nothing is
// synchronized, so a step runs as it does unprofiled; GPU idle gaps (where
// the host falls behind) count to the call before them.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_PROFILE_H
#define INFIR2_RUNTIME_CUDA_PROFILE_H

#include <cuda_runtime.h>

#include <cstdint>

namespace infir2::rt::cuda {

/// The backend's `mark`: entry `entry` starts now on `stream`.
void markEntry(void *stream, int32_t entry);

/// Before the host waits for `stream`: closes its last call's interval.
void closeMarks(cudaStream_t stream);

/// After the wait: adds the stream's intervals to their entries.
void accountMarks(cudaStream_t stream);

/// Drops the marks of a stream being destroyed.
void forgetMarks(cudaStream_t stream);

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_PROFILE_H
