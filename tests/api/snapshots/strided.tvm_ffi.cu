extern "C" int __tvm_ffi_main(void* self, const tirc_ffi::Any* args, int32_t num_args, tirc_ffi::Any* result) {
    using namespace tirc_ffi;
    bool full = num_args == 4;
    if (!(full || num_args == 2)) return fail("TypeError", "main(A: Tensor[(n, 4), float32], B: Tensor[(n * 4,), float32], n: int32, s: int32) takes 2 arguments, or 4 with the shape arguments (n, s), got %d", num_args);
    const Any* a_arg = &args[0];
    DLTensor* a_tensor = tensor(a_arg);
    if (!(a_tensor)) return fail("TypeError", "main: argument #0 (A) must be a tensor, got %s", type_name(a_arg->type_index));
    if (!(a_tensor->device_type == 2 || a_tensor->device_type == 13)) return fail("ValueError", "main: A must be on a CUDA device, got a tensor on %s", device_name(a_tensor->device_type));
    if (!(a_tensor->ndim == 2)) return fail("ValueError", "main: A must have 2 dimensions, got %d", a_tensor->ndim);
    if (!(a_tensor->code == 2 && a_tensor->bits == 32 && a_tensor->lanes == 1)) {
        return fail("TypeError", a_tensor->lanes == 1 ? "main: A must have dtype float32, got %s%d" : "main: A must have dtype float32, got %s%dx%d", code_name(a_tensor->code), (int)a_tensor->bits, (int)a_tensor->lanes);
    }
    const Any* b_arg = &args[1];
    DLTensor* b_tensor = tensor(b_arg);
    if (!(b_tensor)) return fail("TypeError", "main: argument #1 (B) must be a tensor, got %s", type_name(b_arg->type_index));
    if (!(b_tensor->device_type == 2 || b_tensor->device_type == 13)) return fail("ValueError", "main: B must be on a CUDA device, got a tensor on %s", device_name(b_tensor->device_type));
    if (!(b_tensor->device_id == a_tensor->device_id)) return fail("ValueError", "main: B is on device %d, but A on device %d", b_tensor->device_id, a_tensor->device_id);
    if (!(b_tensor->ndim == 1)) return fail("ValueError", "main: B must have 1 dimension, got %d", b_tensor->ndim);
    if (!(b_tensor->code == 2 && b_tensor->bits == 32 && b_tensor->lanes == 1)) {
        return fail("TypeError", b_tensor->lanes == 1 ? "main: B must have dtype float32, got %s%d" : "main: B must have dtype float32, got %s%dx%d", code_name(b_tensor->code), (int)b_tensor->bits, (int)b_tensor->lanes);
    }
    if (!(!full || is_int(&args[2]))) return fail("TypeError", "main: argument #2 (n: int32) must be an int, got %s", type_name(args[2].type_index));
    if (!(!full || is_int(&args[3]))) return fail("TypeError", "main: argument #3 (s: int32) must be an int, got %s", type_name(args[3].type_index));
    int n = (int)((full ? args[2].v_int64 : a_tensor->shape[0]));
    int s = (int)((full ? args[3].v_int64 : stride(a_tensor, 0, (a_tensor->shape[1]))));
    if (!(a_tensor->shape[0] == (long long)(n))) return fail("ValueError", "main: A.shape[0] is %lld, but must equal n = %lld (%s)", (long long)a_tensor->shape[0], (long long)(n), (full ? "as passed" : "as A.shape[0] is"));
    if (!(a_tensor->shape[1] == 4)) return fail("ValueError", "main: A.shape[1] is %lld, but must be 4", (long long)a_tensor->shape[1]);
    if (!(stride(a_tensor, 0, (a_tensor->shape[1])) == (long long)(s))) return fail("ValueError", "main: A.strides[0] is %lld, but must equal s = %lld (%s)", (long long)stride(a_tensor, 0, (a_tensor->shape[1])), (long long)(s), (full ? "as passed" : "as A.strides[0] is"));
    if (!(stride(a_tensor, 1, (int64_t)1) == 1)) return fail("ValueError", "main: A.strides[1] is %lld, but must be 1", (long long)stride(a_tensor, 1, (int64_t)1));
    if (!((uintptr_t)data(a_tensor) % 64 == 0)) return fail("ValueError", "main: A must be aligned to 64 bytes, but its data is at %p (allocate it aligned, or copy it to aligned memory)", data(a_tensor));
    if (!(b_tensor->shape[0] == (long long)(n * 4))) return fail("ValueError", "main: B.shape[0] is %lld, but must be n * 4 = %lld", (long long)b_tensor->shape[0], (long long)(n * 4));
    if (!(stride(b_tensor, 0, (int64_t)1) == (int64_t)1 || b_tensor->shape[0] == 1)) return fail("ValueError", "main: B must be compact (row-major, contiguous), but B.strides[0] is %lld where %lld was expected", (long long)stride(b_tensor, 0, (int64_t)1), (long long)(int64_t)1);
    if (!((uintptr_t)data(b_tensor) % 64 == 0)) return fail("ValueError", "main: B must be aligned to 64 bytes, but its data is at %p (allocate it aligned, or copy it to aligned memory)", data(b_tensor));
    int previous_device = 0;
    cudaGetDevice(&previous_device);
    if (previous_device != a_tensor->device_id) cudaSetDevice(a_tensor->device_id);
    int status = main_launch((float*)data(a_tensor), (float*)data(b_tensor), n, s, (cudaStream_t)TVMFFIEnvGetStream(2, a_tensor->device_id));
    if (previous_device != a_tensor->device_id) cudaSetDevice(previous_device);
    if (!(status == 0)) return fail("RuntimeError", "main: the launch failed: %s", cudaGetErrorString((cudaError_t)status));
    return 0;
}

#endif  // !__CUDACC_RTC__
