// Shared by the CUDA unit tests: they run where a device is visible (the GPU
// test script) and skip elsewhere, saying why.
#pragma once

#include <gtest/gtest.h>

#include "backend/cuda/devices.h"

#define COHORT_REQUIRE_CUDA_DEVICE()                                            \
  do {                                                                          \
    const ::cohort::cuda::DeviceList cohort_devices_ = ::cohort::cuda::list_devices(); \
    if (cohort_devices_.devices.empty()) GTEST_SKIP() << cohort_devices_.none_reason; \
  } while (0)
