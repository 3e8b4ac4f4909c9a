#include "frontends/grpc/grpc_shm_handlers.h"

#include "core/server/inference_server.h"
#include "core/shm/shared_memory_manager.h"
#include "frontends/grpc/grpc_call.h"

namespace nereid::grpc_frontend {

namespace pb = inference;

grpc::Status SystemShmStatus(InferenceServer& server,
                             const pb::SystemSharedMemoryStatusRequest& req,
                             pb::SystemSharedMemoryStatusResponse* resp) {
  auto rows = server.shared_memory().SystemStatus(req.name());
  if (!rows.ok()) return ToGrpcStatus(rows.status());
  for (const ShmRegionStatus& r : *rows) {
    auto& out = (*resp->mutable_regions())[r.name];
    out.set_name(r.name);
    out.set_key(r.key);
    out.set_offset(r.offset);
    out.set_byte_size(r.byte_size);
  }
  return grpc::Status::OK;
}

grpc::Status SystemShmRegister(InferenceServer& server,
                               const pb::SystemSharedMemoryRegisterRequest& req,
                               pb::SystemSharedMemoryRegisterResponse*) {
  return ToGrpcStatus(
      server.shared_memory().RegisterSystem(req.name(), req.key(), req.offset(), req.byte_size()));
}

grpc::Status SystemShmUnregister(InferenceServer& server,
                                 const pb::SystemSharedMemoryUnregisterRequest& req,
                                 pb::SystemSharedMemoryUnregisterResponse*) {
  return ToGrpcStatus(server.shared_memory().UnregisterSystem(req.name()));
}

grpc::Status CudaShmStatus(InferenceServer& server, const pb::CudaSharedMemoryStatusRequest& req,
                           pb::CudaSharedMemoryStatusResponse*) {
  auto rows = server.shared_memory().CudaStatus(req.name());
  return ToGrpcStatus(rows.status());  // a CPU build holds no CUDA region: OK means none
}

grpc::Status CudaShmRegister(InferenceServer& server,
                             const pb::CudaSharedMemoryRegisterRequest& req,
                             pb::CudaSharedMemoryRegisterResponse*) {
  return ToGrpcStatus(server.shared_memory().RegisterCuda(req.name()));
}

grpc::Status CudaShmUnregister(InferenceServer& server,
                               const pb::CudaSharedMemoryUnregisterRequest& req,
                               pb::CudaSharedMemoryUnregisterResponse*) {
  return ToGrpcStatus(server.shared_memory().UnregisterCuda(req.name()));
}

}  // namespace nereid::grpc_frontend
