/* A fake NVIDIA driver, NVRTC and cuBLAS as one C shared library, for
 * TestSystemBindings: it checks the purego bindings of models/cuda (the C
 * signatures, size_t outputs, arrays of option strings) through the real
 * dynamic loader. One GPU, "Fake GPU", compute capability 9.0 (the
 * emulated device's tests may ask for more of the same:
 * spn_emu_set_devices); NVRTC
 * "compiles" to a PTX of one line naming the source length and the
 * options, then the source itself (which emudevice.c's module loader
 * reads), and fails with a log on a source holding "#error"; for a real
 * architecture (sm_XX) its CUBIN is "\177ELF" then that PTX, for a
 * virtual one there is none (size 0), as with NVIDIA's NVRTC. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

int cuInit(unsigned int flags) { return flags == 0 ? 0 : 1; }
int cuDriverGetVersion(int* v) { *v = 13000; return 0; }
static int devices = 1; /* spn_emu_set_devices */
void spn_emu_set_devices(unsigned long long n) { devices = (int)n; }
/* spn_emu_devices is for emudevice.c, in the same library: hidden, so
 * that a call from there is not bound to another emulator's (a test
 * process loads several, RTLD_GLOBAL). */
__attribute__((visibility("hidden"))) int spn_emu_devices(void) { return devices; }
static int compute_mode; /* spn_emu_set_compute_mode: every device's */
void spn_emu_set_compute_mode(unsigned long long m) { compute_mode = (int)m; }
__attribute__((visibility("hidden"))) int spn_emu_compute_mode(void) { return compute_mode; }
int cuDeviceGetCount(int* n) { *n = devices; return 0; }
int cuDeviceGet(int* d, int ordinal) { if (ordinal < 0 || ordinal >= devices) return 101; *d = ordinal; return 0; }
int cuDeviceGetName(char* name, int len, int dev) { snprintf(name, (size_t)len, "Fake GPU"); return dev >= 0 && dev < devices ? 0 : 101; }
int cuDeviceGetAttribute(int* v, int attr, int dev)
{
	switch (attr) {
	case 16: *v = 7; return 0;
	case 20: *v = compute_mode; return 0;
	case 75: *v = 9; return 0;
	case 76: *v = 0; return 0;
	}
	return 1;
}
int cuDeviceTotalMem_v2(size_t* bytes, int dev) { *bytes = (size_t)5 << 30; return 0; }
int cublasGetProperty(int kind, int* v) { *v = kind == 0 ? 13 : 0; return 0; }

typedef struct { char* src; char* name; char* ptx; char* log; int cubin; } program;

int nvrtcVersion(int* major, int* minor) { *major = 13; *minor = 0; return 0; }
int nvrtcCreateProgram(program** p, const char* src, const char* name, int n, const char* const* headers, const char* const* names)
{
	if (n != 0 || headers || names) return 3;
	*p = calloc(1, sizeof(program));
	(*p)->src = strdup(src);
	(*p)->name = strdup(name);
	return 0;
}
int nvrtcCompileProgram(program* p, int n, const char* const* options)
{
	size_t len = 64 + strlen(p->name) + strlen(p->src);
	for (int i = 0; i < n; i++) {
		len += strlen(options[i]) + 1;
		p->cubin |= strncmp(options[i], "--gpu-architecture=sm_", 22) == 0;
	}
	if (strstr(p->src, "#error")) {
		p->log = malloc(len);
		snprintf(p->log, len, "%s(1): catastrophic error: #error directive", p->name);
		return 6;
	}
	p->ptx = malloc(len);
	char* w = p->ptx + sprintf(p->ptx, "// %zu bytes of %s,", strlen(p->src), p->name);
	for (int i = 0; i < n; i++) w += sprintf(w, " %s", options[i]);
	sprintf(w, "\n%s", p->src);
	p->log = strdup("");
	return 0;
}
int nvrtcGetPTXSize(program* p, size_t* n) { if (!p->ptx) return 4; *n = strlen(p->ptx) + 1; return 0; }
int nvrtcGetPTX(program* p, char* out) { if (!p->ptx) return 4; strcpy(out, p->ptx); return 0; }
int nvrtcGetCUBINSize(program* p, size_t* n) { if (!p->ptx) return 4; *n = p->cubin ? 4 + strlen(p->ptx) + 1 : 0; return 0; }
int nvrtcGetCUBIN(program* p, char* out)
{
	if (!p->ptx || !p->cubin) return 4;
	memcpy(out, "\177ELF", 4);
	strcpy(out + 4, p->ptx);
	return 0;
}
/* The architectures of the fake NVRTC: 7.5, 8.0 and 9.0. */
int nvrtcGetNumSupportedArchs(int* n) { *n = 3; return 0; }
int nvrtcGetSupportedArchs(int* a) { a[0] = 75; a[1] = 80; a[2] = 90; return 0; }
int nvrtcGetProgramLogSize(program* p, size_t* n) { *n = strlen(p->log) + 1; return 0; }
int nvrtcGetProgramLog(program* p, char* out) { strcpy(out, p->log); return 0; }
int nvrtcDestroyProgram(program** p)
{
	free((*p)->src); free((*p)->name); free((*p)->ptx); free((*p)->log); free(*p);
	*p = NULL;
	return 0;
}
