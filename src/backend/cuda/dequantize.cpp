#include "backend/cuda/dequantize.h"

#include "backend/cuda/dequantize_kernels.h"
#include "common/error.h"

namespace cohort::cuda {

bool can_dequantize(gguf::TensorType type) { return kernels::dequantize_launcher(type) != nullptr; }

void dequantize(gguf::TensorType type, const void* src, float* dst, int64_t n, cudaStream_t stream) {
  const kernels::DequantizeLauncher run = kernels::dequantize_launcher(type);
  if (run == nullptr) fail("cuda: dequantize of tensor type {} is not supported", gguf::type_name(type));
  const int64_t block = gguf::traits(type).block_size;
  if (n < 0 || n % block != 0) {
    fail("cuda: {} elements of type {} is not a multiple of its block size {}", n,
         gguf::type_name(type), block);
  }
  if (n > 0) run(src, dst, n, stream);
}

}  // namespace cohort::cuda
