// Triton's shared memory extension over gRPC (REFERENCE-2.md §11.1): SystemSharedMemoryStatus /
// Register / Unregister, and the CUDA RPCs answered as Triton's CPU-only build answers them.
// Register and unregister are refused (UNIMPLEMENTED, Triton's UNSUPPORTED text) unless
// --allow-client-shm=true; status always answers. An empty name means "every region".
//
// Thread-safety: called on completion-queue threads; the manager is thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include "grpc_service.pb.h"

namespace nereid {
class InferenceServer;
}

namespace nereid::grpc_frontend {

grpc::Status SystemShmStatus(InferenceServer& server,
                             const inference::SystemSharedMemoryStatusRequest& request,
                             inference::SystemSharedMemoryStatusResponse* response);
grpc::Status SystemShmRegister(InferenceServer& server,
                               const inference::SystemSharedMemoryRegisterRequest& request,
                               inference::SystemSharedMemoryRegisterResponse* response);
grpc::Status SystemShmUnregister(InferenceServer& server,
                                 const inference::SystemSharedMemoryUnregisterRequest& request,
                                 inference::SystemSharedMemoryUnregisterResponse* response);
grpc::Status CudaShmStatus(InferenceServer& server,
                           const inference::CudaSharedMemoryStatusRequest& request,
                           inference::CudaSharedMemoryStatusResponse* response);
grpc::Status CudaShmRegister(InferenceServer& server,
                             const inference::CudaSharedMemoryRegisterRequest& request,
                             inference::CudaSharedMemoryRegisterResponse* response);
grpc::Status CudaShmUnregister(InferenceServer& server,
                               const inference::CudaSharedMemoryUnregisterRequest& request,
                               inference::CudaSharedMemoryUnregisterResponse* response);

}  // namespace nereid::grpc_frontend
