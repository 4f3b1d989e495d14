/* An emulated CUDA device: the compute half of the driver API and of
 * cuBLAS, computing on the host, for the device tests of models/cuda.
 * It is linked into one shared library with fakecuda.c (discovery and
 * NVRTC) and a generated translation unit holding kern.Source() behind
 * models/cuda/kern/kerntest's prelude and its dispatcher
 * (spn_emu_count, spn_emu_name, spn_emu_signature, spn_emu_run).
 *
 * It keeps the driver's rules the Go side must follow:
 *   - the primary context is current per thread: a call that needs a
 *     context fails with CUDA_ERROR_INVALID_CONTEXT (201) on a thread
 *     where none is current;
 *   - device memory is host memory (malloc) whose addresses are the
 *     device pointers; a copy or free outside a live allocation, and a
 *     kernel pointer argument that is neither null nor inside one, fail
 *     (CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_ILLEGAL_ADDRESS);
 *   - a module is the PTX text it was loaded from (fakecuda.c's NVRTC
 *     puts the source in it); cuModuleGetFunction resolves a name that
 *     the text declares ("void NAME(") to the emulated kernel of that
 *     name, else CUDA_ERROR_NOT_FOUND;
 *   - cuLaunchKernel takes one-dimensional launches of at most 1024
 *     threads per block and runs them at once, looping over blocks and
 *     threads; cublasSgemm_v2 is a plain column-major loop, and
 *     cublasSgemmStridedBatched the same loop for each product;
 *   - an event records the host's monotonic clock when recorded (the
 *     work before it is done: launches run at once), so the time between
 *     two events around a launch is the emulation's; cuEventElapsedTime
 *     fails with CUDA_ERROR_INVALID_HANDLE for an event never recorded
 *     or created with CU_EVENT_DISABLE_TIMING (2, the only flag taken);
 *   - page-locked host memory (cuMemAllocHost_v2) is malloc'ed and
 *     tracked apart from device memory: cuMemFreeHost of any other
 *     pointer fails with CUDA_ERROR_INVALID_VALUE, and a device pointer
 *     argument inside it is no device memory;
 *   - streams (cuStreamCreate, flags 0 only: blocking streams) belong to
 *     the context current when they were made; a launch, a copy, an
 *     event record or a cuBLAS handle (cublasSetStream_v2) takes stream 0
 *     (the legacy default stream) or a live stream of the current
 *     context, else CUDA_ERROR_INVALID_HANDLE (cuBLAS: 7). Work runs at
 *     once whatever its stream; what the streams change is which pending
 *     copies (below) a wait observes;
 *   - the asynchronous copies (cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2)
 *     validate as the synchronous ones do and copy to the device at once,
 *     in stream order, but the host observes a copy only when it waits
 *     for it: a device→host copy takes the values at its place in the
 *     stream and delivers them into host memory when the host
 *     synchronizes with its stream after it: an event recorded on that
 *     stream (or on the legacy stream) after it, cuStreamSynchronize of
 *     that stream, or the whole device (cuCtxSynchronize, a synchronous
 *     copy, cuMemFree, cuMemFreeHost, which run on the legacy stream and
 *     so wait for every blocking stream); waiting on a stream also
 *     observes the legacy stream's copies before it (a blocking stream's
 *     work waits for them), not other streams'. So a host that reads the result before waiting
 *     reads what was there before; a host→device copy's source must not
 *     change until then, which the emulator checks when the host waits
 *     (and when a new copy reads the same memory) and reports as
 *     CUDA_ERROR_ILLEGAL_STATE (401) from that call. Stricter than CUDA,
 *     as spn's rules: the host memory of an async copy must be
 *     page-locked (on a GPU one from pageable memory is synchronous,
 *     CUDA_ERROR_INVALID_VALUE here), and an async copy into or out of
 *     host memory that a pending one writes (a result the host never
 *     waited for) is CUDA_ERROR_ILLEGAL_STATE.
 * Every entry point holds one lock while it runs, so that two threads
 * (two train stages on two emulated GPUs) may call it at once; their
 * calls, kernels included, run one at a time. The devices
 * (spn_emu_set_devices in fakecuda.c: one at the start) each have a
 * primary context; they share the memory and the legacy stream, so a
 * wait on the legacy stream (a synchronous copy, cuMemFree) observes
 * every device's pending copies (a GPU's would not; spn's rules hold
 * either way).
 * spn_emu_live reports what is live, for the tests' leak checks (5: the
 * page-locked allocations, 6: the async copies the host has not waited
 * for, 7: the streams), and (8) how many launches, products, async
 * copies and event records went on the legacy stream so far;
 * spn_emu_set_compute_mode (fakecuda.c) sets the compute mode every
 * device reports (CU_DEVICE_ATTRIBUTE_COMPUTE_MODE): with 2
 * (prohibited) retaining a primary context fails with CUDA_ERROR_UNKNOWN
 * (999), as NVIDIA documents; with 3 (exclusive-process) it fails with
 * CUDA_ERROR_DEVICE_UNAVAILABLE (46), as though another process held
 * the device;
 * spn_emu_set_fault(n) makes the n-th launch from then fault, as a
 * kernel that reads an illegal address does on a GPU: the launch returns
 * success without running, and from then on the device's launches,
 * products, copies, allocations, module loads and waits fail with
 * CUDA_ERROR_ILLEGAL_ADDRESS (a sticky error; cuBLAS: 13) until the
 * primary context's last reference is released, which makes it anew
 * (frees, destroys and releases still succeed, more leniently than on a
 * GPU, so that leak checks stay meaningful);
 * spn_emu_set_memory sets the device's memory in bytes (0, the start:
 * the host's), past which an allocation fails with
 * CUDA_ERROR_OUT_OF_MEMORY (2), as on a full device; spn_emu_set_noexec(1)
 * makes launches and products return at once, computing and checking
 * nothing (their results are garbage; nor is an async copy's source
 * checked), so that a benchmark times the host's side of a device step
 * alone. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <pthread.h>

/* GUARD, the first statement of every entry point, holds the emulator's
 * lock until the function returns. */
static pthread_mutex_t emu_mu = PTHREAD_MUTEX_INITIALIZER;
static void emu_unlock(int* unused) { (void)unused; pthread_mutex_unlock(&emu_mu); }
#define GUARD pthread_mutex_lock(&emu_mu); int emu_guard __attribute__((cleanup(emu_unlock))) = 0; (void)emu_guard

__attribute__((visibility("hidden"))) int spn_emu_devices(void); /* fakecuda.c */
__attribute__((visibility("hidden"))) int spn_emu_compute_mode(void); /* fakecuda.c */

int spn_emu_count(void);
const char* spn_emu_name(int i);
const char* spn_emu_signature(int i);
void spn_emu_run(int i, unsigned grid, unsigned block, void** params);

enum {
	SUCCESS = 0, INVALID_VALUE = 1, INVALID_CONTEXT = 201, INVALID_PTX = 218,
	INVALID_HANDLE = 400, ILLEGAL_STATE = 401, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700
};

enum { MAX_DEVICES = 8 };
static int primary[MAX_DEVICES];  /* a primary context's address is its handle */
static int retained[MAX_DEVICES]; /* their reference counts */
static _Thread_local void* current; /* the context current on this thread */

typedef struct alloc { uintptr_t base; size_t size; struct alloc* next; } alloc;
static alloc* allocs;
static int nallocs;
static unsigned long long memory; /* the device's bytes; 0: the host's */

void spn_emu_set_memory(unsigned long long bytes) { memory = bytes; }

static int noexec; /* launches and products do nothing */

/* spoiled marks a device whose context a kernel spoiled (spn_emu_set_fault):
 * its calls fail with CUDA_ERROR_ILLEGAL_ADDRESS (cuBLAS: 13) until every
 * reference to the primary context is released; fault_in counts the
 * launches until the next one faults (0: none). */
static int spoiled[MAX_DEVICES];
static int fault_in;

void spn_emu_set_fault(unsigned long long n) { fault_in = (int)n; }

void spn_emu_set_noexec(unsigned long long on) { noexec = on != 0; }

typedef struct module { char* text; struct module* next; } module;
static module* modules;
static int nmodules;

typedef struct { int index; module* mod; } function;

/* stream is a stream of cuStreamCreate, of the context ctx; its address
 * is its handle. */
typedef struct stream { void* ctx; struct stream* next; } stream;
static stream* streams;
static int nstreams;
static int legacy; /* work enqueued on the legacy stream (spn_emu_live(8)) */

/* handle is a cuBLAS handle: the stream its products go on. */
typedef struct { void* stream; } handle;
static int nhandles; /* live cuBLAS handles */

static int nevents; /* live events */

static alloc* hosts; /* page-locked host memory */
static int nhosts;

/* pending is an async copy the host has not waited for: a device→host
 * copy's values, delivered to host when the host observes it, or a
 * host→device copy's source as it was copied, which host must still
 * hold then. */
typedef struct pending {
	int to_host;
	unsigned char* host;
	size_t n;
	void* stream;           /* its stream (NULL: the legacy stream) */
	unsigned long long pos; /* its place in the order of all streams */
	unsigned char* data;    /* NULL for a host→device copy under noexec */
	struct pending* next;
} pending;
static pending* pendings;
static int npending;
static unsigned long long seq; /* the last position: async copies and event records, all streams */

int spn_emu_live(int what)
{
	GUARD;
	switch (what) {
	case 0: return nallocs;
	case 1: return nmodules;
	case 2: return nhandles;
	case 3: {
		int n = 0;
		for (int i = 0; i < MAX_DEVICES; i++) n += retained[i];
		return n;
	}
	case 4: return nevents;
	case 5: return nhosts;
	case 6: return npending;
	case 7: return nstreams;
	case 8: return legacy;
	}
	return -1;
}

/* changed reports whether the source of the host→device copy q changed
 * since it was copied. */
static int changed(const pending* q) { return q->data && memcmp(q->host, q->data, q->n) != 0; }

/* retire completes, as the host observes them, the pending copies up to
 * position upto that a wait on stream s observes (s NULL, the legacy
 * stream: all; else those of s and of the legacy stream): delivers the
 * device→host ones and checks that the host→device ones' sources are
 * unchanged (else ILLEGAL_STATE). */
static int retire(void* s, unsigned long long upto)
{
	int r = SUCCESS;
	for (pending** q = &pendings; *q;) {
		pending* c = *q;
		if (c->pos > upto || (s && c->stream && c->stream != s)) { q = &c->next; continue; }
		if (c->to_host) memcpy(c->host, c->data, c->n);
		else if (changed(c)) r = ILLEGAL_STATE;
		*q = c->next;
		free(c->data); free(c); npending--;
	}
	return r;
}

/* synchronize is the host waiting for all the device's work. */
static int synchronize(void) { return retire(NULL, seq); }

static int valid_device(int dev) { return dev >= 0 && dev < spn_emu_devices() && dev < MAX_DEVICES; }

int cuDevicePrimaryCtxRetain(void** ctx, int dev)
{
	GUARD;
	if (!valid_device(dev)) return 101;
	if (spn_emu_compute_mode() == 2) return 999; /* prohibited: CUDA_ERROR_UNKNOWN, as the driver documents */
	if (spn_emu_compute_mode() == 3) return 46;  /* exclusive-process, held by another process: CUDA_ERROR_DEVICE_UNAVAILABLE */
	retained[dev]++;
	*ctx = &primary[dev];
	return SUCCESS;
}

int cuDevicePrimaryCtxRelease_v2(int dev)
{
	GUARD;
	if (!valid_device(dev)) return 101;
	if (retained[dev] == 0) return INVALID_CONTEXT;
	if (--retained[dev] == 0) spoiled[dev] = 0;
	return SUCCESS;
}

/* context_device returns the device of a primary context handle, or -1. */
static int context_device(void* ctx)
{
	for (int i = 0; i < MAX_DEVICES; i++)
		if (ctx == &primary[i]) return i;
	return -1;
}

int cuCtxSetCurrent(void* ctx)
{
	GUARD;
	if (ctx != NULL) {
		int d = context_device(ctx);
		if (d < 0 || retained[d] == 0) return INVALID_CONTEXT;
	}
	current = ctx;
	return SUCCESS;
}

static int active(void)
{
	int d = context_device(current);
	return d >= 0 && retained[d] > 0;
}

/* lost is CUDA_ERROR_ILLEGAL_ADDRESS when a kernel spoiled the current
 * context's device (spn_emu_set_fault), else SUCCESS. */
static int lost(void)
{
	int d = context_device(current);
	return d >= 0 && spoiled[d] ? ILLEGAL_ADDRESS : SUCCESS;
}

/* USABLE, after GUARD, returns CUDA_ERROR_INVALID_CONTEXT where no
 * context is current and CUDA_ERROR_ILLEGAL_ADDRESS where a kernel spoiled
 * it (lost). */
#define USABLE do { if (!active()) return INVALID_CONTEXT; if (lost()) return ILLEGAL_ADDRESS; } while (0)

/* stream_ok reports whether s is the legacy stream (NULL) or a live
 * stream of the current context. */
static int stream_ok(void* s)
{
	if (!s) return 1;
	for (stream* q = streams; q; q = q->next)
		if (q == s) return q->ctx == current;
	return 0;
}

int cuStreamCreate(void** s, unsigned flags)
{
	GUARD;
	USABLE;
	if (!s || flags != 0) return INVALID_VALUE;
	stream* st = calloc(1, sizeof *st);
	if (!st) return 2;
	st->ctx = current; st->next = streams;
	streams = st; nstreams++;
	*s = st;
	return SUCCESS;
}

int cuStreamDestroy_v2(void* s)
{
	GUARD;
	if (!active()) return INVALID_CONTEXT;
	for (stream** q = &streams; *q; q = &(*q)->next) {
		if (*q == s) {
			*q = (*q)->next;
			free(s); nstreams--;
			/* its pending copies stay pending: the device finishes them, and
			 * a wait on the legacy stream observes them */
			return SUCCESS;
		}
	}
	return INVALID_HANDLE;
}

int cuStreamSynchronize(void* s)
{
	GUARD;
	USABLE;
	if (!stream_ok(s)) return INVALID_HANDLE;
	return retire(s, seq);
}

int cuCtxSynchronize(void)
{
	GUARD;
	USABLE;
	return synchronize();
}

/* find returns the live allocation holding [p, p+n), or NULL. */
static alloc* find(uintptr_t p, size_t n)
{
	for (alloc* a = allocs; a; a = a->next)
		if (p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base)) return a;
	return NULL;
}

int cuMemAlloc_v2(unsigned long long* p, size_t n)
{
	GUARD;
	USABLE;
	if (n == 0) return INVALID_VALUE;
	size_t used = 0;
	for (alloc* b = allocs; b; b = b->next) used += b->size;
	if (memory && used + n > memory) return 2;
	alloc* a = malloc(sizeof *a);
	void* m = malloc(n);
	if (!a || !m) { free(a); free(m); return 2; }
	memset(m, 0xA5, n); /* not zeroed, as on a device: a test that forgets an upload sees garbage */
	a->base = (uintptr_t)m; a->size = n; a->next = allocs;
	allocs = a; nallocs++;
	*p = (unsigned long long)a->base;
	return SUCCESS;
}

int cuMemGetInfo_v2(size_t* free_bytes, size_t* total)
{
	GUARD;
	if (!active()) return INVALID_CONTEXT;
	size_t used = 0;
	for (alloc* b = allocs; b; b = b->next) used += b->size;
	*total = memory ? memory : (size_t)5 << 30; /* fakecuda.c's cuDeviceTotalMem_v2 */
	*free_bytes = used < *total ? *total - used : 0;
	return SUCCESS;
}

int cuMemFree_v2(unsigned long long p)
{
	GUARD;
	if (!active()) return INVALID_CONTEXT;
	int r = synchronize();
	if (r != SUCCESS) return r;
	for (alloc** q = &allocs; *q; q = &(*q)->next) {
		if ((*q)->base == (uintptr_t)p) {
			alloc* a = *q;
			*q = a->next;
			free((void*)a->base); free(a); nallocs--;
			return SUCCESS;
		}
	}
	return INVALID_VALUE;
}

int cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t n)
{
	GUARD;
	USABLE;
	if (!find((uintptr_t)dst, n) || !src) return INVALID_VALUE;
	int r = synchronize(); /* from pageable memory: after the work before it */
	if (r != SUCCESS) return r;
	memcpy((void*)(uintptr_t)dst, src, n);
	return SUCCESS;
}

int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t n)
{
	GUARD;
	USABLE;
	if (!find((uintptr_t)src, n) || !dst) return INVALID_VALUE;
	int r = synchronize();
	if (r != SUCCESS) return r;
	memcpy(dst, (const void*)(uintptr_t)src, n);
	return SUCCESS;
}

/* find_host returns the page-locked allocation holding [p, p+n), or NULL. */
static alloc* find_host(uintptr_t p, size_t n)
{
	for (alloc* a = hosts; a; a = a->next)
		if (p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base)) return a;
	return NULL;
}

int cuMemAllocHost_v2(void** p, size_t n)
{
	GUARD;
	USABLE;
	if (!p || n == 0) return INVALID_VALUE;
	alloc* a = malloc(sizeof *a);
	void* m = malloc(n);
	if (!a || !m) { free(a); free(m); return 2; }
	memset(m, 0x5A, n);
	a->base = (uintptr_t)m; a->size = n; a->next = hosts;
	hosts = a; nhosts++;
	*p = m;
	return SUCCESS;
}

int cuMemFreeHost(void* p)
{
	GUARD;
	if (!active()) return INVALID_CONTEXT;
	for (alloc** q = &hosts; *q; q = &(*q)->next) {
		if ((*q)->base == (uintptr_t)p) {
			int r = synchronize();
			alloc* a = *q;
			*q = a->next;
			free((void*)a->base); free(a); nhosts--;
			return r;
		}
	}
	return INVALID_VALUE;
}

/* enqueue checks the host memory [h, h+n) of a new async copy against
 * the pending ones (see the top) and records the copy: to_host with the
 * device values at src, else the source h (unless noexec). */
static int enqueue(int to_host, unsigned char* h, size_t n, const void* src, void* s)
{
	for (pending* q = pendings; q; q = q->next) {
		if (h >= q->host + q->n || q->host >= h + n) continue;
		if (to_host || q->to_host || changed(q)) return ILLEGAL_STATE;
	}
	pending* c = calloc(1, sizeof *c);
	if (!c) return 2;
	if (to_host || !noexec) {
		c->data = malloc(n);
		if (!c->data) { free(c); return 2; }
		memcpy(c->data, to_host ? src : h, n);
	}
	c->to_host = to_host; c->host = h; c->n = n; c->stream = s; c->pos = ++seq;
	if (!s) legacy++;
	c->next = pendings; pendings = c; npending++;
	return SUCCESS;
}

int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, size_t n, void* stream)
{
	GUARD;
	USABLE;
	if (!stream_ok(stream)) return INVALID_HANDLE;
	if (!find((uintptr_t)dst, n) || !src || !find_host((uintptr_t)src, n)) return INVALID_VALUE;
	int r = enqueue(0, (unsigned char*)src, n, NULL, stream);
	if (r != SUCCESS) return r;
	memcpy((void*)(uintptr_t)dst, src, n);
	return SUCCESS;
}

int cuMemcpyDtoHAsync_v2(void* dst, unsigned long long src, size_t n, void* stream)
{
	GUARD;
	USABLE;
	if (!stream_ok(stream)) return INVALID_HANDLE;
	if (!find((uintptr_t)src, n) || !dst || !find_host((uintptr_t)dst, n)) return INVALID_VALUE;
	return enqueue(1, dst, n, (const void*)(uintptr_t)src, stream);
}

int cuModuleLoadData(void** m, const void* image)
{
	GUARD;
	USABLE;
	if (!image || !*(const char*)image) return INVALID_PTX;
	module* mod = malloc(sizeof *mod);
	mod->text = strdup(image);
	mod->next = modules;
	modules = mod; nmodules++;
	*m = mod;
	return SUCCESS;
}

static int live_module(module* m)
{
	for (module* q = modules; q; q = q->next)
		if (q == m) return 1;
	return 0;
}

int cuModuleGetFunction(void** f, void* m, const char* name)
{
	GUARD;
	if (!active()) return INVALID_CONTEXT;
	module* mod = m;
	if (!live_module(mod)) return INVALID_HANDLE;
	char decl[256];
	if (snprintf(decl, sizeof decl, "void %s(", name) >= (int)sizeof decl) return NOT_FOUND;
	if (!strstr(mod->text, decl)) return NOT_FOUND;
	for (int i = 0; i < spn_emu_count(); i++) {
		if (strcmp(spn_emu_name(i), name) == 0) {
			function* fn = malloc(sizeof *fn); /* freed with the library: functions live as long as their module */
			fn->index = i; fn->mod = mod;
			*f = fn;
			return SUCCESS;
		}
	}
	return NOT_FOUND;
}

int cuModuleUnload(void* m)
{
	GUARD;
	if (!active()) return INVALID_CONTEXT;
	for (module** q = &modules; *q; q = &(*q)->next) {
		if (*q == m) {
			module* mod = *q;
			*q = mod->next;
			free(mod->text); free(mod); nmodules--;
			return SUCCESS;
		}
	}
	return INVALID_HANDLE;
}

int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
	unsigned shared, void* stream, void** params, void** extra)
{
	GUARD;
	if (!stream) legacy++;
	if (noexec) return SUCCESS;
	USABLE;
	if (fault_in > 0 && --fault_in == 0) {
		spoiled[context_device(current)] = 1; /* the kernel faults: its launch succeeded */
		return SUCCESS;
	}
	function* fn = f;
	if (!fn || !live_module(fn->mod) || !stream_ok(stream)) return INVALID_HANDLE;
	if (gx == 0 || bx == 0 || bx > 1024 || gy != 1 || gz != 1 || by != 1 || bz != 1 || shared != 0 || extra || !params)
		return INVALID_VALUE;
	const char* sig = spn_emu_signature(fn->index);
	for (int j = 0; sig[j]; j++) {
		if (!params[j]) return INVALID_VALUE;
		if (sig[j] == 'f' || sig[j] == 'd' || sig[j] == 'i') {
			uintptr_t p = (uintptr_t) * (void**)params[j];
			if (p && !find(p, 1)) return ILLEGAL_ADDRESS;
		}
	}
	spn_emu_run(fn->index, gx, bx, params);
	return SUCCESS;
}

int cublasCreate_v2(void** h)
{
	GUARD;
	if (!active()) return 1; /* CUBLAS_STATUS_NOT_INITIALIZED */
	*h = calloc(1, sizeof(handle)); /* the legacy stream */
	nhandles++;
	return 0;
}

int cublasSetStream_v2(void* h, void* s)
{
	GUARD;
	if (!h) return 1;
	if (!active()) return 1;
	if (!stream_ok(s)) return 7; /* CUBLAS_STATUS_INVALID_VALUE */
	((handle*)h)->stream = s;
	return 0;
}

int cublasDestroy_v2(void* h)
{
	GUARD;
	if (!h) return 1;
	free(h);
	nhandles--;
	return 0;
}

/* gemm is cublasSgemm_v2's product after its checks: column-major
 * C = alpha·op(A)·op(B) + beta·C, op(A) m×k, op(B) k×n, a plain loop
 * (the sum over l in order, in float); with beta = 0, C is not read. */
static void gemm(int ta, int tb, int m, int n, int k, float alpha, const float* A, int lda,
	const float* B, int ldb, float beta, float* C, int ldc)
{
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			float s = 0.0f;
			for (int l = 0; l < k; l++) {
				float a = ta ? A[(long long)i * lda + l] : A[(long long)l * lda + i];
				float b = tb ? B[(long long)l * ldb + j] : B[(long long)j * ldb + l];
				s += a * b;
			}
			float* c = &C[(long long)j * ldc + i];
			*c = beta == 0.0f ? alpha * s : alpha * s + beta * *c;
		}
	}
}

/* gemm_check validates a product's arguments as cuBLAS does: 7
 * (CUBLAS_STATUS_INVALID_VALUE) for bad sizes, operations or leading
 * dimensions, 13 (CUBLAS_STATUS_EXECUTION_FAILED) for an operand whose
 * first or last value of the batch is no device memory; 0 if fine. */
static int gemm_check(void* h, int ta, int tb, int m, int n, int k, int lda, long long sa, int ldb, long long sb,
	int ldc, long long sc, int batch, const float* A, const float* B, const float* C)
{
	if (!h) return 1;
	if (!active()) return 1;
	if (lost()) return 13; /* CUBLAS_STATUS_EXECUTION_FAILED */
	if (m < 0 || n < 0 || k < 0 || batch < 0 || sa < 0 || sb < 0 || sc < 0 || (ta != 0 && ta != 1) || (tb != 0 && tb != 1) ||
		lda < (ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1)) || ldb < (tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1)) || ldc < (m > 1 ? m : 1))
		return 7;
	if (!m || !n || !batch) return 0;
	/* the last value of each operand's last matrix (column-major: columns ld apart) */
	long long lastA = (long long)(batch - 1) * sa + (long long)((ta ? m : k) - 1) * lda + (ta ? k : m) - 1;
	long long lastB = (long long)(batch - 1) * sb + (long long)((tb ? k : n) - 1) * ldb + (tb ? n : k) - 1;
	long long lastC = (long long)(batch - 1) * sc + (long long)(n - 1) * ldc + m - 1;
	if (!find((uintptr_t)C, 1) || !find((uintptr_t)(C + lastC), 1))
		return 13;
	if (k && (!find((uintptr_t)A, 1) || !find((uintptr_t)(A + lastA), 1) || !find((uintptr_t)B, 1) || !find((uintptr_t)(B + lastB), 1)))
		return 13;
	return 0;
}

/* cublasSgemm_v2: column-major C = alpha·op(A)·op(B) + beta·C, op(A) m×k,
 * op(B) k×n, op 0 (N) or 1 (T); with beta = 0, C is not read. */
int cublasSgemm_v2(void* h, int ta, int tb, int m, int n, int k, const float* alpha, const float* A, int lda,
	const float* B, int ldb, const float* beta, float* C, int ldc)
{
	GUARD;
	if (h && !((handle*)h)->stream) legacy++;
	if (noexec) return 0;
	int r = gemm_check(h, ta, tb, m, n, k, lda, 0, ldb, 0, ldc, 0, 1, A, B, C);
	if (r) return r;
	gemm(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
	return 0;
}

/* cublasSgemmStridedBatched: cublasSgemm_v2's product for each i < batch
 * on A + i·strideA, B + i·strideB and C + i·strideC, in order. */
int cublasSgemmStridedBatched(void* h, int ta, int tb, int m, int n, int k, const float* alpha, const float* A, int lda,
	long long strideA, const float* B, int ldb, long long strideB, const float* beta, float* C, int ldc, long long strideC, int batch)
{
	GUARD;
	if (h && !((handle*)h)->stream) legacy++;
	if (noexec) return 0;
	int r = gemm_check(h, ta, tb, m, n, k, lda, strideA, ldb, strideB, ldc, strideC, batch, A, B, C);
	if (r) return r;
	for (int i = 0; i < batch; i++)
		gemm(ta, tb, m, n, k, *alpha, A + i * strideA, lda, B + i * strideB, ldb, *beta, C + i * strideC, ldc);
	return 0;
}

typedef struct { double ms; int recorded, untimed; void* stream; unsigned long long pos; } event;

int cuEventCreate(void** ev, unsigned flags)
{
	GUARD;
	if (!active()) return INVALID_CONTEXT;
	if (!ev || (flags != 0 && flags != 2)) return INVALID_VALUE;
	event* e = calloc(1, sizeof *e);
	if (!e) return 2;
	e->untimed = flags == 2;
	nevents++;
	*ev = e;
	return SUCCESS;
}

int cuEventRecord(void* ev, void* stream)
{
	GUARD;
	USABLE;
	if (!ev || !stream_ok(stream)) return INVALID_HANDLE;
	if (!stream) legacy++;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	event* e = ev;
	e->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
	e->recorded = 1;
	e->stream = stream;
	e->pos = ++seq;
	return SUCCESS;
}

int cuEventSynchronize(void* ev)
{
	GUARD;
	USABLE;
	if (!ev) return INVALID_HANDLE;
	event* e = ev;
	return retire(e->stream, e->pos); /* never recorded: position 0, nothing to wait for */
}

int cuEventElapsedTime(float* ms, void* start, void* end)
{
	GUARD;
	if (!active()) return INVALID_CONTEXT;
	event *a = start, *b = end;
	if (!ms || !a || !b || !a->recorded || !b->recorded || a->untimed || b->untimed) return INVALID_HANDLE;
	*ms = (float)(b->ms - a->ms);
	return SUCCESS;
}

int cuEventDestroy_v2(void* ev)
{
	GUARD;
	if (!ev) return INVALID_HANDLE;
	free(ev);
	nevents--;
	return SUCCESS;
}
