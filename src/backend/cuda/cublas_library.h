// cuBLAS, loaded when the first GPU GEMM is set up, not linked: linking it
// maps libcublasLt (over 500 MB) and applies its ~380,000 relocations in
// every process, about 0.2 s of CPU for each `cohort` start even where no
// GPU is used (`cohort info`, `--help`, the CPU path). The types come from
// the toolkit's cublas_v2.h; the functions from the library the loader
// finds (libcublas.so.<major> of the toolkit the build used).
#pragma once

#include <cublas_v2.h>

namespace cohort::cuda {

// The library's cublasGemmEx (C++ sees a second, inline overload taking the
// compute type as a cudaDataType).
using CublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                        const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                        int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                        cublasGemmAlgo_t);

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  CublasGemmEx gemm_ex;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

// The loaded library's functions. Throws cohort::Error naming the library if
// it cannot be loaded. Thread safety: any thread.
const CublasApi& cublas();

}  // namespace cohort::cuda
