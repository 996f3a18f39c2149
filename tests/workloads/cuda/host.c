/* The host side of NVIDIA's CUDA libraries, where no GPU is needed, for bench/b_memory.sh and
 * bench/b_realprog.sh on a machine with the CUDA toolkit (not a Debian package): NVRTC
 * (libnvrtc, ~110 MB, stripped) compiles a templated kernel to a cubin, and cuBLASLt
 * (libcublasLt, ~540 MB) creates and sets matmul and layout descriptors, in turn, for
 * SECONDS of wall time. Prints the rounds of each.
 * Usage: host [SECONDS] */
#include <cublasLt.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *kernel =
	"template <typename T, int N> struct vec { T v[N]; };\n"
	"template <typename T, int N> __device__ vec<T, N> fma(vec<T, N> a, vec<T, N> b)\n"
	"{ vec<T, N> r; for (int i = 0; i < N; i++) r.v[i] = a.v[i] * b.v[i] + a.v[i]; return r; }\n"
	"extern \"C\" __global__ void k(float *out, const float *in, int n)\n"
	"{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;\n"
	"  vec<float, 16> a, b; for (int j = 0; j < 16; j++) { a.v[j] = in[i + j]; b.v[j] = in[2 * i + j]; }\n"
	"  for (int s = 0; s < 8; s++) a = fma(a, b);\n"
	"  float acc = 0; for (int j = 0; j < 16; j++) acc += a.v[j]; out[i] = acc; }\n";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One compile of the kernel to a cubin for sm_90. */
static int compile(void)
{
	const char *opts[] = { "--gpu-architecture=sm_90", "--std=c++17" };
	nvrtcProgram prog;
	size_t cubin = 0;
	nvrtcResult res;

	if (nvrtcCreateProgram(&prog, kernel, "k.cu", 0, NULL, NULL) != NVRTC_SUCCESS)
		return -1;
	res = nvrtcCompileProgram(prog, 2, opts);
	if (res == NVRTC_SUCCESS)
		res = nvrtcGetCUBINSize(prog, &cubin);
	nvrtcDestroyProgram(&prog);
	if (res != NVRTC_SUCCESS) {
		fprintf(stderr, "host: nvrtc: %s\n", nvrtcGetErrorString(res));
		return -1;
	}
	return cubin > 0 ? 0 : -1;
}

/* 1000 rounds of matmul, layout and preference descriptors: created, set, destroyed. */
static int descriptors(void)
{
	for (int i = 0; i < 1000; i++) {
		cublasLtMatmulDesc_t desc;
		cublasLtMatrixLayout_t layout;
		cublasLtMatmulPreference_t pref;
		cublasOperation_t trans = i & 1 ? CUBLAS_OP_T : CUBLAS_OP_N;
		uint64_t rows = 64 + (uint64_t)(i % 512), workspace = 1 << 20;

		if (cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
		    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)) ||
		    cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, rows, 256, (int64_t)rows) ||
		    cublasLtMatmulPreferenceCreate(&pref) ||
		    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
							 &workspace, sizeof(workspace)))
			return -1;
		cublasLtMatmulPreferenceDestroy(pref);
		cublasLtMatrixLayoutDestroy(layout);
		cublasLtMatmulDescDestroy(desc);
	}
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0, start = now();
	long compiles = 0, rounds = 0;

	do {
		if (compile() < 0 || descriptors() < 0) {
			fprintf(stderr, "host: a CUDA library call failed\n");
			return 1;
		}
		compiles++;
		rounds += 1000;
	} while (now() - start < seconds);
	printf("%ld compiles, %ld descriptor rounds\n", compiles, rounds);
	return 0;
}
