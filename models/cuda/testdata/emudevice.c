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
 *     threads; cublasSgemm_v2 is a plain column-major loop;
 *   - an event records the host's monotonic clock when recorded (the
 *     work before it is done: launches run at once), so the time between
 *     two events around a launch is the emulation's; cuEventElapsedTime
 *     fails with CUDA_ERROR_INVALID_HANDLE for an event never recorded.
 * spn_emu_live reports what is live, for the tests' leak checks;
 * spn_emu_set_memory sets the device's memory in bytes (0, the start:
 * the host's), past which an allocation fails with
 * CUDA_ERROR_OUT_OF_MEMORY (2), as on a full device; spn_emu_set_noexec(1)
 * makes launches and products return at once, computing and checking
 * nothing (their results are garbage), so that a benchmark times the
 * host's side of a device step alone. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

int spn_emu_count(void);
const char* spn_emu_name(int i);
const char* spn_emu_signature(int i);
void spn_emu_run(int i, unsigned grid, unsigned block, void** params);

enum {
	SUCCESS = 0, INVALID_VALUE = 1, INVALID_CONTEXT = 201, INVALID_PTX = 218,
	INVALID_HANDLE = 400, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700
};

static int primary;            /* the primary context's address is its handle */
static int retained;           /* its reference count */
static _Thread_local void* current; /* the context current on this thread */

typedef struct alloc { uintptr_t base; size_t size; struct alloc* next; } alloc;
static alloc* allocs;
static int nallocs;
static unsigned long long memory; /* the device's bytes; 0: the host's */

void spn_emu_set_memory(unsigned long long bytes) { memory = bytes; }

static int noexec; /* launches and products do nothing */

void spn_emu_set_noexec(unsigned long long on) { noexec = on != 0; }

typedef struct module { char* text; struct module* next; } module;
static module* modules;
static int nmodules;

typedef struct { int index; module* mod; } function;

static int nhandles; /* live cuBLAS handles */

static int nevents; /* live events */

int spn_emu_live(int what)
{
	switch (what) {
	case 0: return nallocs;
	case 1: return nmodules;
	case 2: return nhandles;
	case 3: return retained;
	case 4: return nevents;
	}
	return -1;
}

int cuDevicePrimaryCtxRetain(void** ctx, int dev)
{
	if (dev != 0) return 101;
	retained++;
	*ctx = &primary;
	return SUCCESS;
}

int cuDevicePrimaryCtxRelease_v2(int dev)
{
	if (dev != 0) return 101;
	if (retained == 0) return INVALID_CONTEXT;
	retained--;
	return SUCCESS;
}

int cuCtxSetCurrent(void* ctx)
{
	if (ctx != NULL && (ctx != &primary || retained == 0)) return INVALID_CONTEXT;
	current = ctx;
	return SUCCESS;
}

static int active(void) { return current == &primary && retained > 0; }

int cuCtxSynchronize(void) { return active() ? SUCCESS : INVALID_CONTEXT; }

/* find returns the live allocation holding [p, p+n), or NULL. */
static alloc* find(uintptr_t p, size_t n)
{
	for (alloc* a = allocs; a; a = a->next)
		if (p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base)) return a;
	return NULL;
}

int cuMemAlloc_v2(unsigned long long* p, size_t n)
{
	if (!active()) return INVALID_CONTEXT;
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

int cuMemFree_v2(unsigned long long p)
{
	if (!active()) return INVALID_CONTEXT;
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
	if (!active()) return INVALID_CONTEXT;
	if (!find((uintptr_t)dst, n) || !src) return INVALID_VALUE;
	memcpy((void*)(uintptr_t)dst, src, n);
	return SUCCESS;
}

int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t n)
{
	if (!active()) return INVALID_CONTEXT;
	if (!find((uintptr_t)src, n) || !dst) return INVALID_VALUE;
	memcpy(dst, (const void*)(uintptr_t)src, n);
	return SUCCESS;
}

int cuModuleLoadData(void** m, const void* image)
{
	if (!active()) return INVALID_CONTEXT;
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
	if (noexec) return SUCCESS;
	if (!active()) return INVALID_CONTEXT;
	function* fn = f;
	if (!fn || !live_module(fn->mod)) return INVALID_HANDLE;
	if (gx == 0 || bx == 0 || bx > 1024 || gy != 1 || gz != 1 || by != 1 || bz != 1 || shared != 0 || stream || extra || !params)
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
	if (!active()) return 1; /* CUBLAS_STATUS_NOT_INITIALIZED */
	*h = malloc(1);
	nhandles++;
	return 0;
}

int cublasDestroy_v2(void* h)
{
	if (!h) return 1;
	free(h);
	nhandles--;
	return 0;
}

/* cublasSgemm_v2: column-major C = alpha·op(A)·op(B) + beta·C, op(A) m×k,
 * op(B) k×n, op 0 (N) or 1 (T); with beta = 0, C is not read. */
int cublasSgemm_v2(void* h, int ta, int tb, int m, int n, int k, const float* alpha, const float* A, int lda,
	const float* B, int ldb, const float* beta, float* C, int ldc)
{
	if (noexec) return 0;
	if (!h) return 1;
	if (!active()) return 1;
	if (m < 0 || n < 0 || k < 0 || (ta != 0 && ta != 1) || (tb != 0 && tb != 1) ||
		lda < (ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1)) || ldb < (tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1)) || ldc < (m > 1 ? m : 1))
		return 7; /* CUBLAS_STATUS_INVALID_VALUE */
	if (m && n && (!find((uintptr_t)C, 1) || (k && (!find((uintptr_t)A, 1) || !find((uintptr_t)B, 1)))))
		return 13; /* CUBLAS_STATUS_EXECUTION_FAILED */
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			float s = 0.0f;
			for (int l = 0; l < k; l++) {
				float a = ta ? A[(long long)i * lda + l] : A[(long long)l * lda + i];
				float b = tb ? B[(long long)l * ldb + j] : B[(long long)j * ldb + l];
				s += a * b;
			}
			float* c = &C[(long long)j * ldc + i];
			*c = *beta == 0.0f ? *alpha * s : *alpha * s + *beta * *c;
		}
	}
	return 0;
}

typedef struct { double ms; int recorded; } event;

int cuEventCreate(void** ev, unsigned flags)
{
	if (!active()) return INVALID_CONTEXT;
	if (!ev || flags != 0) return INVALID_VALUE;
	event* e = calloc(1, sizeof *e);
	if (!e) return 2;
	nevents++;
	*ev = e;
	return SUCCESS;
}

int cuEventRecord(void* ev, void* stream)
{
	if (!active()) return INVALID_CONTEXT;
	if (!ev) return INVALID_HANDLE;
	if (stream) return INVALID_VALUE;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	event* e = ev;
	e->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
	e->recorded = 1;
	return SUCCESS;
}

int cuEventSynchronize(void* ev)
{
	if (!active()) return INVALID_CONTEXT;
	return ev ? SUCCESS : INVALID_HANDLE;
}

int cuEventElapsedTime(float* ms, void* start, void* end)
{
	if (!active()) return INVALID_CONTEXT;
	event *a = start, *b = end;
	if (!ms || !a || !b || !a->recorded || !b->recorded) return INVALID_HANDLE;
	*ms = (float)(b->ms - a->ms);
	return SUCCESS;
}

int cuEventDestroy_v2(void* ev)
{
	if (!ev) return INVALID_HANDLE;
	free(ev);
	nevents--;
	return SUCCESS;
}
